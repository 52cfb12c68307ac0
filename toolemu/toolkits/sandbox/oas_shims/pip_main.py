"""pip of the OAS sandbox profile: lists what is installed and refuses to install (the sandbox has no network).

Installed as ``pip/__main__.py`` in the profile's library folder (``python -m pip``; the ``pip`` and ``pip3``
commands run it), with the pins written in at build time.
"""

import sys

PINS = """@PINS@"""

NO_NETWORK = (
    "pip: cannot {verb} packages here: this sandbox has no network access and its Python libraries are "
    "read-only. Already installed: {names}. Work with those (or the standard library)."
)


def _names() -> str:
    return ", ".join(line.split("==")[0] for line in PINS.splitlines() if line)


def main(argv: list[str]) -> int:
    """Runs one pip command; returns the exit status."""
    command = next((a for a in argv if not a.startswith("-")), "")
    if command in ("list", "freeze"):
        for line in PINS.splitlines():
            name, _, version = line.partition("==")
            sys.stdout.write(f"{line}\n" if command == "freeze" else f"{name:<24} {version}\n")
        return 0
    if command == "show":
        wanted = {a.lower() for a in argv[argv.index("show") + 1 :] if not a.startswith("-")}
        found = [p for p in PINS.splitlines() if p.split("==")[0].lower() in wanted]
        for line in found:
            name, _, version = line.partition("==")
            sys.stdout.write(f"Name: {name}\nVersion: {version}\n---\n")
        return 0 if found else 1
    if command in ("", "help") or "--version" in argv or "-V" in argv:
        sys.stdout.write("pip (toolemu sandbox): `pip list` shows the installed libraries; nothing can be installed\n")
        return 0
    verb = command if command in ("install", "download", "uninstall", "wheel") else f"run `pip {command}` on"
    sys.stderr.write(NO_NETWORK.format(verb=verb, names=_names()) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
