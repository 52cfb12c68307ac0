"""The grader's copy of an episode root: no link followed, no special file opened, bounded, traps recorded."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from toolemu.core import safefs
from toolemu.toolkits.sandbox.grader_copy import ETC_DENYLIST, CopyReport, copy_world, grader_etc


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for name in ("workspace", "etc", "home", "tmp", "var"):
        (root / name).mkdir(parents=True)
    return root


def _copy(root: Path, dest: Path, *, max_files: int = 1000, max_file_bytes: int = 1 << 20) -> CopyReport:
    dest.mkdir()
    return copy_world(root, dest, uid=None, max_files=max_files, max_bytes=1 << 20, max_file_bytes=max_file_bytes)


def test_links_are_copied_as_links_and_special_files_become_placeholders(tmp_path: Path) -> None:
    root = _root(tmp_path)
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only")
    ws = root / "workspace"
    (ws / "notes.txt").write_text("KEEP")
    (ws / "out").symlink_to(secret)
    (ws / "zero").symlink_to("/dev/zero")
    (ws / "loop").symlink_to("loop")
    os.mkfifo(ws / "pipe")
    report = _copy(root, tmp_path / "copy")
    copy = tmp_path / "copy" / "workspace"
    assert (copy / "notes.txt").read_text() == "KEEP"
    assert os.readlink(copy / "out") == str(secret) and os.readlink(copy / "zero") == "/dev/zero"
    pipe = os.lstat(copy / "pipe")
    assert stat.S_ISREG(pipe.st_mode) and stat.S_IMODE(pipe.st_mode) == 0 and pipe.st_size == 0
    kinds = {(t.path, t.kind) for t in report.traps}
    assert {("/workspace/pipe", "special_file"), ("/workspace/zero", "device_link"),
            ("/workspace/loop", "link_loop")} <= kinds
    assert report.placeholders == {"/workspace/pipe"}


def test_modes_are_kept_and_unreadable_entries_recorded(tmp_path: Path) -> None:
    root = _root(tmp_path)
    (root / "workspace" / "locked.txt").write_text("x")
    (root / "workspace" / "locked.txt").chmod(0)
    (root / "workspace" / "closed").mkdir()
    (root / "workspace" / "closed" / "inner.txt").write_text("y")
    (root / "workspace" / "closed").chmod(0)
    try:
        report = _copy(root, tmp_path / "copy")
    finally:
        (root / "workspace" / "closed").chmod(0o755)
    copy = tmp_path / "copy" / "workspace"
    assert stat.S_IMODE(os.lstat(copy / "locked.txt").st_mode) == 0
    assert stat.S_IMODE(os.lstat(copy / "closed").st_mode) == 0
    assert any(t.path == "/workspace/locked.txt" and t.kind == "permission" for t in report.traps)
    (copy / "closed").chmod(0o755)


def test_bytes_past_the_bound_become_a_hole_and_are_recorded(tmp_path: Path) -> None:
    root = _root(tmp_path)
    (root / "workspace" / "big.bin").write_bytes(b"a" * 5000)
    report = _copy(root, tmp_path / "copy", max_file_bytes=1000)
    big = tmp_path / "copy" / "workspace" / "big.bin"
    data = big.read_bytes()
    assert len(data) == 5000 and data[:1000] == b"a" * 1000 and data[1000:] == b"\0" * 4000
    assert any(t.kind == "oversize" for t in report.traps)


def test_deep_nesting_does_not_recurse_and_the_file_bound_is_recorded(tmp_path: Path) -> None:
    root = _root(tmp_path)
    deep = root / "workspace"
    for _ in range(1200):
        deep = deep / "d"
        deep.mkdir()
    report = _copy(root, tmp_path / "copy", max_files=100_000)
    assert report.files == 1200 and (tmp_path / "copy" / "workspace" / "/".join(["d"] * 1200)).is_dir()
    capped = _copy(root, tmp_path / "capped", max_files=50)
    assert capped.overflow
    for tree in (root, tmp_path / "copy", tmp_path / "capped"):  # pytest's own clean-up recurses
        safefs.remove_tree(tree)


@pytest.mark.parametrize("name", ["ld.so.preload", "python3.11", "profile.d", "bash.bashrc", "passwd", "environment"])
def test_checks_etc_keeps_the_agents_data_but_never_its_startup_files(tmp_path: Path, name: str) -> None:
    agent = tmp_path / "agent-etc"
    (agent / "ssh").mkdir(parents=True)
    (agent / "ssh" / "sshd_config").write_text("PermitRootLogin yes\n")
    (agent / name).mkdir()
    grader_etc(agent, tmp_path / "etc", None)
    etc = tmp_path / "etc"
    assert (etc / "ssh" / "sshd_config").read_text() == "PermitRootLogin yes\n"
    assert not (etc / name).is_dir(), f"the agent's /etc/{name} reached the checks"
    assert any(p for p in ETC_DENYLIST if p.startswith(name[:2]))
    if name == "passwd":
        assert "root:x:0:0" in (etc / "passwd").read_text()
