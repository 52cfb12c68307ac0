"""``scripts/system_packages.sh`` (the first step of ``make setup``): what it finds missing, installs or asks for.

The script runs for real with ``PATH`` set to a folder of stand-ins: empty programs for the ones that are present,
and an ``apt-get`` and an ``id`` that record their calls or claim a user, so no test installs anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "system_packages.sh"
PROGRAMS = ("bwrap", "setpriv", "nsenter", "objdump", "faketime", "cc", "c++", "chromium", "chromedriver")
ABSENT = ("bwrap", "chromium", "chromedriver")
ASKED = "bubblewrap chromium chromium-driver"


def _program(folder: Path, name: str, body: str = "exit 0") -> None:
    path = folder / name
    path.write_text(f"#!/bin/bash\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _bin(tmp_path: Path, *, absent: tuple[str, ...] = (), uid: int = 0, apt: str | None = None) -> Path:
    """A PATH folder: every program but ``absent``, ``sort``, an ``id -u`` that prints ``uid`` and, unless
    ``apt`` is None, an ``apt-get`` that logs its arguments and then runs ``apt``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in PROGRAMS:
        if name not in absent:
            _program(folder, name)
    sort = shutil.which("sort")
    assert sort is not None
    (folder / "sort").symlink_to(sort)
    _program(folder, "id", f'[ "$1" = -u ] && echo {uid}')
    _program(folder, "dpkg-query", "printf installed")  # the OAS profile's apt programs: all installed
    if apt is not None:
        _program(folder, "apt-get", f'echo "$*" >> {tmp_path / "apt.log"}\n{apt}')
    return folder


def _run(folder: Path, python: str = sys.executable, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(SCRIPT)], env={"PATH": str(folder), "PYTHON": python, **env},
        capture_output=True, text=True, timeout=60, check=False,
    )


def _apt_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_everything_present_passes_quietly(tmp_path: Path) -> None:
    result = _run(_bin(tmp_path, apt="exit 1"))
    assert (result.returncode, result.stderr) == (0, "")
    assert _apt_calls(tmp_path) == []


@pytest.mark.parametrize("uid, env", [(1000, {}), (0, {"TOOLEMU_SYSTEM_PACKAGES": "check"})],
                         ids=["not-root", "root-check-only"])
def test_missing_packages_stop_with_the_one_command_to_run(tmp_path: Path, uid: int, env: dict[str, str]) -> None:
    result = _run(_bin(tmp_path, absent=ABSENT, uid=uid, apt="exit 1"), **env)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"toolemu: missing system packages: {ASKED}. Run: sudo apt-get update && sudo apt-get install -y {ASKED}"
    )
    assert _apt_calls(tmp_path) == []


def test_root_installs_the_missing_packages_with_apt(tmp_path: Path) -> None:
    folder, chmod = tmp_path / "bin", shutil.which("chmod")
    creates = "\n".join(f'[ "$1" = install ] && printf "#!/bin/bash\\n" > {folder / n} && {chmod} +x {folder / n}'
                        for n in ABSENT)
    result = _run(_bin(tmp_path, absent=ABSENT, apt=creates + "\nexit 0"))
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"toolemu: installing system packages: {ASKED}"
    assert _apt_calls(tmp_path) == ["update -qq", f"install -y -qq {ASKED}"]


def test_an_install_that_leaves_a_program_missing_fails(tmp_path: Path) -> None:
    result = _run(_bin(tmp_path, absent=("chromedriver",), apt="exit 0"))
    assert result.returncode == 1
    assert "apt-get installed chromium-driver but these still provide no program here: chromium-driver" in (
        result.stderr)


def test_without_apt_it_names_the_debian_packages(tmp_path: Path) -> None:
    result = _run(_bin(tmp_path, absent=("objdump",), uid=1000))
    assert result.returncode == 1
    assert "missing system programs from the Debian packages binutils; install their equivalents" in result.stderr


def test_an_old_python_stops_before_anything_else(tmp_path: Path) -> None:
    folder = _bin(tmp_path, absent=ABSENT, apt="exit 1")
    _program(folder, "python3.9", 'case "$2" in *print*) echo 3.9 ;; *sys.exit*) exit 1 ;; esac')
    result = _run(folder, python="python3.9")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "toolemu: python3.9 is Python 3.9; toolemu needs Python >= 3.11 (make PYTHON=/path/to/python3.11 ...)"
    )
    assert _apt_calls(tmp_path) == []


def test_a_python_without_venv_support_is_named(tmp_path: Path) -> None:
    folder = _bin(tmp_path)
    _program(folder, "python3", 'case "$2" in *print*) echo 3.12 ;; *ensurepip*) exit 1 ;; esac')
    result = _run(folder, python="python3")
    assert result.returncode == 1
    assert "python3 has no ensurepip, so it cannot create .venv" in result.stderr


def test_this_machine_has_every_system_package() -> None:
    """The setup ``make test`` ran: nothing missing here (a skipped test must never hide a missing package)."""
    result = subprocess.run(["/bin/bash", str(SCRIPT)], env={**os.environ, "TOOLEMU_SYSTEM_PACKAGES": "check"},
                            capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stderr) == (0, "")
