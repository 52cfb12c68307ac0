"""pip of the OAS sandbox profile: installs from the offline wheelhouse into the user site, lists what is there.

Installed as ``pip/__main__.py`` in the profile's library folder (``python -m pip``; the ``pip`` and ``pip3``
commands run it). It reads ``site.json`` (the read-only libraries) and ``wheels/index.json`` (the wheelhouse,
``toolemu.toolkits.sandbox.oas_wheelhouse``) of that folder. ``pip install`` resolves the requested packages
and what they need among those, refuses everything at once when one is not offered (no network), and copies the
missing ones into the user site (``~/.local``, in the episode's writable files), as pip does for a user who
cannot write the system site. Runs on the sandbox's own Python, standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import sys
from typing import Any

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.join(HERE, "site")
WHEELS = os.path.join(HERE, "wheels")

_VALUE_OPTIONS = {
    "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f", "--find-links",
    "--trusted-host", "--cache-dir", "--log", "--progress-bar", "--timeout", "--retries", "--upgrade-strategy",
    "--only-binary", "--no-binary", "--python-version", "--platform", "--implementation", "--abi",
    "--root-user-action", "--src", "--proxy", "--cert", "--client-cert", "--exists-action", "--report",
}
_UNSUPPORTED = {"-t", "--target", "--prefix", "--root", "-e", "--editable"}
_OPS = ("===", "~=", "==", "!=", "<=", ">=", "<", ">")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _load(name: str, key: str) -> Any:
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return json.load(f)[key]


def _user_site() -> str:
    return site.getusersitepackages()


def _user_installed() -> dict[str, str]:
    """``{canonical name: version}`` of the ``.dist-info`` folders in the user site."""
    found: dict[str, str] = {}
    folder = _user_site()
    for entry in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if entry.endswith(".dist-info") and "-" in entry:
            name, _, version = entry[: -len(".dist-info")].rpartition("-")
            found[_canonical(name)] = version
    return found


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0].split("rc")[0].split(".post")[0])[:4])


def _satisfies(version: str, spec: str) -> bool:
    """Whether ``version`` meets a specifier list such as ``>=3.1,<4`` (release numbers compared)."""
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op = next((o for o in _OPS if clause.startswith(o)), None)
        if op is None:
            return False
        want = clause[len(op):].strip()
        if want.endswith(".*"):
            prefix = _release(want[:-2])
            ok = _release(version)[: len(prefix)] == prefix
            if (op == "==") != ok:
                return False
            continue
        have, need = _release(version), _release(want)
        size = max(len(have), len(need))
        have, need = have + (0,) * (size - len(have)), need + (0,) * (size - len(need))
        if op == "~=":
            ok = have >= need and have[: len(_release(want)) - 1] == need[: len(_release(want)) - 1]
        else:
            ok = {"==": have == need, "===": version == want, "!=": have != need, "<=": have <= need,
                  ">=": have >= need, "<": have < need, ">": have > need}[op]
        if not ok:
            return False
    return True


def _parse(text: str) -> tuple[str, str, str] | None:
    """``(canonical name, specifier, original)`` of one requirement, or ``None`` for a URL, path or file."""
    found = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([<>=!~][^;]*)?\s*(;.*)?$", text.strip())
    if found is None:
        return None
    return _canonical(found.group(1)), (found.group(3) or "").replace(" ", ""), text.strip()


def _requirements(args: list[str]) -> tuple[list[str], set[str]]:
    """The requirements and flags of ``pip install`` (``-r`` files read); raises ValueError for what is refused."""
    reqs: list[str] = []
    flags: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if name in _UNSUPPORTED:
            raise ValueError(f"`{name}` is not supported here; packages go to the user site ({_user_site()})")
        if name in _VALUE_OPTIONS:
            value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            i += 1 if "=" in arg else 2
            if name in ("-r", "--requirement"):
                reqs += _read_requirements(value)
            continue
        if arg.startswith("-"):
            flags.add(arg)
        else:
            reqs.append(arg)
        i += 1
    return reqs, flags


def _read_requirements(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ValueError(f"Could not open requirements file: {e}") from None
    return [line.split(" #")[0].strip() for line in lines if line.strip() and not line.lstrip().startswith(("#", "-"))]


def _offline_note(wheels: Any) -> str:
    return (f"pip: this sandbox has no network; `pip install` works offline for {', '.join(sorted(wheels))} (and "
            "what they need); `pip list` shows what is already installed.")


def _error(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(text + "\n")


def install(args: list[str]) -> int:
    """``pip install``: resolves among the installed and wheelhouse packages, then copies the missing ones."""
    site_pins, wheels = _load("site.json", "site"), _load(os.path.join("wheels", "index.json"), "wheels")
    try:
        reqs, flags = _requirements(args)
    except ValueError as e:
        _error(f"ERROR: {e}")
        return 1
    if not reqs:
        _error("ERROR: You must give at least one requirement to install (see \"pip help install\")")
        return 1
    user = _user_installed()
    plan: list[str] = []
    errors: list[str] = []
    done: set[str] = set()
    queue: list[tuple[str, str, str, str | None]] = []
    for text in reqs:
        parsed = _parse(text)
        if parsed is None:
            errors.append(f"ERROR: cannot install {text!r} here: only package names from the offline wheelhouse")
        else:
            queue.append((*parsed, None))
    while queue:
        name, spec, shown, parent = queue.pop(0)
        if name in done:
            continue
        done.add(name)
        via = f" (from {parent})" if parent else ""
        if name in ("pip", "setuptools", "wheel") and name not in wheels:
            print(f"Requirement already satisfied: {shown}{via}")
            continue
        have = site_pins.get(name, user.get(name))
        if have is not None:
            where = SITE if name in site_pins else _user_site()
            if not _satisfies(have, spec):
                errors.append(f"ERROR: {shown} is wanted but {name} {have} is installed in {where} and no other "
                              "version is available offline")
            else:
                print(f"Requirement already satisfied: {shown} in {where}{via} ({have})")
            continue
        wheel = wheels.get(name)
        if wheel is None or not _satisfies(wheel["version"], spec):
            offered = f"from versions: {wheel['version']}" if wheel else "from versions: none"
            errors += [f"ERROR: Could not find a version that satisfies the requirement {shown} ({offered})",
                       f"ERROR: No matching distribution found for {shown}"]
            continue
        print(f"Collecting {shown}{via}")
        print(f"  Using cached {name}-{wheel['version']} (offline wheelhouse)")
        plan.append(name)
        if "--no-deps" not in flags:
            queue += [(dep, "", dep, name) for dep in wheel["requires"]]
    if errors:
        _error("\n".join(errors) + "\n" + _offline_note(wheels))
        return 1
    if not plan:
        return 0
    if "--user" not in flags:
        print("Defaulting to user installation because normal site-packages is not writeable")
    ordered = list(reversed(plan))
    print(f"Installing collected packages: {', '.join(ordered)}")
    for name in ordered:
        _copy(os.path.join(WHEELS, name))
    print("Successfully installed " + " ".join(f"{n}-{wheels[n]['version']}" for n in sorted(ordered)))
    return 0


def _copy(src: str) -> None:
    target = _user_site()
    bin_dir = os.path.join(site.getuserbase(), "bin")
    for entry in os.listdir(src):
        path = os.path.join(src, entry)
        if entry == "bin":
            os.makedirs(bin_dir, exist_ok=True)
            for script in os.listdir(path):
                shutil.copy(os.path.join(path, script), os.path.join(bin_dir, script))
        elif os.path.isdir(path):
            shutil.copytree(path, os.path.join(target, entry), symlinks=True, dirs_exist_ok=True)
        else:
            os.makedirs(target, exist_ok=True)
            shutil.copy(path, os.path.join(target, entry))


def _listing(command: str) -> str:
    rows = sorted({**_load("site.json", "site"), **_user_installed()}.items())
    if command == "freeze":
        return "".join(f"{name}=={version}\n" for name, version in rows)
    width = max(len(name) for name, _ in rows)
    return f"{'Package':<{width}} Version\n{'-' * width} -------\n" + "".join(
        f"{name:<{width}} {version}\n" for name, version in rows)


def show(args: list[str]) -> int:
    """``pip show``: name, version and place of installed packages."""
    site_pins, user = _load("site.json", "site"), _user_installed()
    found = 0
    for name in (_canonical(a) for a in args if not a.startswith("-")):
        version = site_pins.get(name, user.get(name))
        if version is None:
            _error(f"WARNING: Package(s) not found: {name}")
            continue
        found += 1
        where = SITE if name in site_pins else _user_site()
        print(f"Name: {name}\nVersion: {version}\nLocation: {where}\n---")
    return 0 if found else 1


def main(argv: list[str]) -> int:
    """Runs one pip command; returns the exit status."""
    command = next((a for a in argv if not a.startswith("-")), "")
    rest = argv[argv.index(command) + 1 :] if command else []
    if command == "install":
        return install(rest)
    if command in ("list", "freeze"):
        sys.stdout.write(_listing(command))
        return 0
    if command == "show":
        return show(rest)
    if command in ("", "help") or "--version" in argv or "-V" in argv:
        print("pip (toolemu sandbox): `pip install` works offline for the wheelhouse's packages; `pip list` "
              "shows what is installed")
        return 0
    wheels = _load(os.path.join("wheels", "index.json"), "wheels")
    _error(f"ERROR: `pip {command}` is not available here. " + _offline_note(wheels))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
