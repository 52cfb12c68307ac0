"""Tests of ``toolemu.toolkits.sandbox.bwrap``: finding bwrap and the argv it builds, run for real."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from toolemu.core.errors import SandboxError
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS, bwrap_argv, find_bwrap


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for name in WRITABLE_DIRS:
        (root / name).mkdir(parents=True)
    (root / "workspace" / "done.txt").write_text("episode output\n")
    return root


def test_find_bwrap_missing_names_the_debian_package(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"not found \(.*no-bwrap\).*package `bubblewrap`"):
        find_bwrap(tmp_path / "no-bwrap")


@pytest.mark.sandbox
def test_bwrap_argv_isolates_and_binds(tmp_path: Path) -> None:
    argv = bwrap_argv(_root(tmp_path))
    assert {"--unshare-all", "--die-with-parent", "--clearenv", "--new-session"} <= set(argv)
    assert argv[-1] == "--"
    assert ["--ro-bind", "/usr", "/usr"] == argv[argv.index("/usr") - 1 : argv.index("/usr") + 2]
    assert [a for a in argv if a.endswith("/root/workspace")] and "--bind" in argv


@pytest.mark.sandbox
def test_bwrap_argv_rejects_a_missing_root(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="is not a folder"):
        bwrap_argv(tmp_path / "nope")


@pytest.mark.sandbox
def test_bwrap_argv_read_only_mode_runs_checks_without_writes(tmp_path: Path) -> None:
    root = _root(tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "check.sh").write_text(
        "cat /workspace/done.txt; touch /workspace/x 2>/dev/null || echo read-only\n"
    )
    argv = bwrap_argv(root, writable=False, extra_ro_binds=[(tools, "/opt/checks")], env={"MODE": "check"})
    done = subprocess.run(
        [*argv, "/bin/sh", "-c", "sh /opt/checks/check.sh; echo $MODE; hostname"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "episode output\nread-only\ncheck\nsandbox\n"
    assert not (root / "workspace" / "x").exists()


@pytest.mark.sandbox
def test_bwrap_argv_writable_mode_writes_through_to_root(tmp_path: Path) -> None:
    root = _root(tmp_path)
    argv = bwrap_argv(root)
    done = subprocess.run(
        [*argv, "/bin/sh", "-c", "echo hi > /etc/motd; id -u; echo $HOME"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.stdout == "1000\n/home/user\n", done.stderr
    assert (root / "etc" / "motd").read_text() == "hi\n"
