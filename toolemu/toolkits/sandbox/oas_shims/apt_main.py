"""apt-get (and apt) of the OAS sandbox profile: installs the offline set, says plainly that nothing else can be.

Installed as ``bin/apt-get`` of the profile's library folder (``bin/apt`` links to it); reads ``apt/index.json``
there (``toolemu.toolkits.sandbox.oas_apt``). The programs of the offline packages are the host's, in the
read-only ``/usr``; installing one copies its ``/etc`` and ``/var`` files into the episode's own folders (an
existing file is kept, as dpkg keeps a changed conffile) and records it in the episode's ``/var/lib/dpkg``.
Runs on the sandbox's own Python (``-I -S``), standard library only.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APT = os.path.join(HERE, "apt")
DPKG = "/var/lib/dpkg"
_VALUE_OPTIONS = {"-o", "--option", "-t", "--target-release", "-c", "--config-file", "-a", "--host-architecture"}
_READING = "Reading package lists... Done\nBuilding dependency tree... Done\nReading state information... Done"


def _index() -> Any:
    with open(os.path.join(APT, "index.json"), encoding="utf-8") as f:
        return json.load(f)


def _offline(index: Any) -> str:
    offered = ", ".join(sorted(index["packages"])) or "none (set-up installed none on this host)"
    return (f"E: this sandbox has no network; apt-get installs only its offline packages: {offered}; the base "
            "system's packages are already installed.")


def _installed() -> set[str]:
    """Names of the Debian packages recorded as installed in the episode's dpkg status file."""
    names: set[str] = set()
    current = None
    try:
        with open(os.path.join(DPKG, "status"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("Package:"):
                    current = line.split(":", 1)[1].strip()
                elif line.startswith("Status:") and line.split()[-1] == "installed" and current:
                    names.add(current)
    except FileNotFoundError:
        pass
    return names


def _find(index: Any, wanted: str) -> str | None:
    name = wanted.split("=", 1)[0].split(":", 1)[0].lower()
    for key, package in sorted(index["packages"].items()):
        if name == key or any(fnmatch.fnmatchcase(name, p) for p in package["aliases"]):
            return str(key)
    return None


def _seed(src: str, dest: str) -> None:
    """Copies a package's files into the episode; existing files and links stay as the agent left them."""
    for top, dirs, files in os.walk(src):
        rel = os.path.relpath(top, src)
        target = os.path.normpath(os.path.join(dest, rel))
        if not os.path.lexists(target):
            os.makedirs(target, exist_ok=True)
            shutil.copymode(top, target)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path, out = os.path.join(top, name), os.path.join(target, name)
            if os.path.lexists(out):
                continue
            if os.path.islink(path):
                os.symlink(os.readlink(path), out)
            else:
                shutil.copy2(path, out)


def _record(debs: list[Any]) -> None:
    for folder in ("info", "updates", "triggers"):
        os.makedirs(os.path.join(DPKG, folder), exist_ok=True)
    if not os.path.exists(os.path.join(DPKG, "available")):
        open(os.path.join(DPKG, "available"), "w").close()
    with open(os.path.join(DPKG, "status"), "a", encoding="utf-8") as f:
        for deb in debs:
            f.write(deb["status"].rstrip("\n") + "\n\n")
    for deb in debs:
        with open(os.path.join(DPKG, "info", deb["name"] + ".list"), "w", encoding="utf-8") as f:
            f.write(deb["files"])


def _postinst(package: Any) -> None:
    """What the package's maintainer script does that its files do not: accounts and ``/run`` folders."""
    try:
        with open("/etc/passwd", encoding="utf-8") as f:
            known = {line.split(":", 1)[0] for line in f}
    except FileNotFoundError:
        known = set()
    with open("/etc/passwd", "a", encoding="utf-8") as f:
        for line in package.get("accounts", []):
            if line.split(":", 1)[0] not in known:
                f.write(line + "\n")
    for folder in package.get("run_dirs", []):
        os.makedirs("/" + folder, exist_ok=True)


def install(index: Any, names: list[str]) -> int:
    """``apt-get install``: every name must be offered (or be a base package) before anything is installed."""
    if not names:
        print(_READING + "\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.")
        return 0
    chosen: list[str] = []
    unknown: list[str] = []
    for name in names:
        key = _find(index, name)
        base = name.split("=", 1)[0].split(":", 1)[0]
        if key is not None:
            chosen.append(key)
        elif base in index["base"]:
            print(f"{base} is already the newest version ({index['base'][base]}).")
        else:
            unknown.append(base)
    if unknown:
        print(_READING, flush=True)
        sys.stderr.write("".join(f"E: Unable to locate package {n}\n" for n in unknown) + _offline(index) + "\n")
        return 100
    done = _installed()
    debs = [d for key in dict.fromkeys(chosen) for d in index["packages"][key]["debs"] if d["name"] not in done]
    debs = list({d["name"]: d for d in debs}.values())
    print(_READING)
    for key in dict.fromkeys(chosen):
        if index["packages"][key]["debs"][0]["name"] in done:
            print(f"{key} is already the newest version ({index['packages'][key]['debs'][0]['version']}).")
    if debs:
        print("The following NEW packages will be installed:\n  " + " ".join(d["name"] for d in debs))
    print(f"0 upgraded, {len(debs)} newly installed, 0 to remove and 0 not upgraded.")
    if not debs:
        return 0
    for key in dict.fromkeys(chosen):
        root = os.path.join(APT, key, "root")
        if os.path.isdir(root):
            _seed(root, "/")
    _record(debs)
    for key in dict.fromkeys(chosen):
        _postinst(index["packages"][key])
    for deb in debs:
        print(f"Setting up {deb['name']} ({deb['version']}) ...")
    if any(index["packages"][k]["host_keys"] for k in chosen):
        subprocess.run(["ssh-keygen", "-A"], check=False, stdout=subprocess.DEVNULL)
        print("Creating SSH2 host keys in /etc/ssh ...")
    return 0


def main(argv: list[str]) -> int:
    """Runs one apt-get/apt command; returns the exit status (apt's 100 for an error)."""
    words: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 2 if arg in _VALUE_OPTIONS else 1
        if not arg.startswith("-"):
            words.append(arg)
    command, names = (words[0], words[1:]) if words else ("", [])
    index = _index()
    if command == "update":
        print("Reading package lists... Done\n"
              "N: this sandbox has no network; the package lists are its offline set "
              f"({', '.join(sorted(index['packages']))}).")
        return 0
    if command == "install":
        return install(index, names)
    if command == "list" and "--installed" in argv:
        print("Listing... Done")
        for name in sorted(_installed()):
            print(f"{name}/now [installed]")
        return 0
    if command == "show" and names and _find(index, names[0]) is not None:
        print(index["packages"][_find(index, names[0])]["debs"][0]["status"])
        return 0
    if command in ("upgrade", "dist-upgrade", "full-upgrade", "clean", "autoclean"):
        print(_READING + "\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.")
        return 0
    if command == "":
        print("apt (toolemu sandbox): `apt-get install` works offline for: " + ", ".join(sorted(index["packages"])))
        return 0
    sys.stdout.flush()
    sys.stderr.write(f"E: `{os.path.basename(sys.argv[0])} {command}` is not available here. " + _offline(index)
                     + "\n")
    return 100


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
