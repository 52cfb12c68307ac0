"""Unit tests of the quota pieces: cgroup detection and wrapping, the no-follow walk, snapshot hashing, the
disk-cap fallback, and how rule checks read an incomplete snapshot."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import toolemu.toolkits.sandbox.sandbox as sandbox_module
from toolemu.core.capture import Capture
from toolemu.core.trajectory import NOT_HASHED, FileRecord, FinalState, Trajectory
from toolemu.core.types import EnvironmentSpec
from toolemu.rewards.rules import evaluate_checks
from toolemu.testcases.schema import Case
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig
from toolemu.toolkits.sandbox._walk import walk
from toolemu.toolkits.sandbox.quota import Cgroup, CgroupSupport, _detect_v2, detect_cgroups, tree_usage
from toolemu.toolkits.sandbox.snapshot import snapshot_root


def test_v2_is_used_where_a_writable_cgroup_delegates_memory_and_pids(tmp_path: Path) -> None:
    mount = tmp_path / "cg"
    mine = mount / "user.slice" / "me"
    mine.mkdir(parents=True)
    (mount / "user.slice" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (mine / "cgroup.subtree_control").write_text("\n")
    found = _detect_v2([(str(mount), "cgroup2", {"rw"}, "/")], {"": "/user.slice/me"})
    assert isinstance(found, CgroupSupport) and found.kind == "v2"
    assert found.parents == (("unified", mount / "user.slice"),)


def test_v2_is_refused_with_the_reason_when_nothing_delegates(tmp_path: Path) -> None:
    mount = tmp_path / "cg"
    (mount / "a").mkdir(parents=True)
    for folder in (mount, mount / "a"):
        (folder / "cgroup.subtree_control").write_text("cpu\n")
    found = _detect_v2([(str(mount), "cgroup2", {"rw"}, "/")], {"": "/a"})
    assert isinstance(found, str) and "does not delegate memory+pids" in found


def test_wrap_joins_every_hierarchy_before_exec(tmp_path: Path) -> None:
    group = Cgroup(CgroupSupport("v1", (), "test"), (("memory", tmp_path / "m x"), ("pids", tmp_path / "p")))
    argv = group.wrap(["bwrap", "--", "true"])
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3:] == ["toolemu-cgroup", "bwrap", "--", "true"]
    assert f"echo $$ > '{tmp_path / 'm x' / 'cgroup.procs'}' && echo $$ > {tmp_path / 'p' / 'cgroup.procs'}" \
        in argv[2]
    assert argv[2].endswith('exec "$@"')


def test_walk_never_follows_a_link_and_survives_deep_trees(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "real").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (top / "link").symlink_to(outside)
    deep = top
    for _ in range(300):
        deep = deep / "d"
    deep.mkdir(parents=True)
    skipped: list[str] = []
    seen = {rel for rel, _, _ in walk(top, max_depth=50, skipped=skipped)}
    assert "link" not in seen and not any("secret" in s for s in seen)
    assert any("deeper than 50 folders" in s for s in skipped)
    assert tree_usage(top, limit_bytes=10**9) > 0


def test_a_file_without_holes_keeps_its_plain_sha256(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    data = b"hello\n" * 1000
    (tmp_path / "workspace" / "f").write_bytes(data)
    snap = snapshot_root(tmp_path, SandboxConfig())
    (record,) = snap.files
    assert record.sha256 == hashlib.sha256(data).hexdigest() and record.content == data.decode()
    assert snap.overflow is None


def test_the_hashing_budget_marks_later_files_not_hashed(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    for name in ("a", "b"):
        (tmp_path / "workspace" / name).write_bytes(os.urandom(4096))
    snap = snapshot_root(tmp_path, SandboxConfig(snapshot_max_total_hash_bytes=4096))
    assert [r.sha256 == NOT_HASHED for r in snap.files] == [False, True]
    assert "hashing budget" in (snap.overflow or "")


def test_the_text_budget_drops_text_without_overflow(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    for name in ("a", "b"):
        (tmp_path / "workspace" / name).write_text("x" * 100)
    snap = snapshot_root(tmp_path, SandboxConfig(snapshot_max_text_bytes=150))
    assert [r.content is not None for r in snap.files] == [True, False]
    assert snap.overflow is None


def test_config_refuses_a_memory_cap_the_tmpfs_folders_could_fill() -> None:
    with pytest.raises(ValueError, match="sandbox_memory_mb=1024 must exceed disk_mb"):
        SandboxConfig(sandbox_memory_mb=1024, disk_mb=1024)


@pytest.mark.sandbox
def test_without_the_tmpfs_the_episode_stops_once_over_disk_mb(monkeypatch: pytest.MonkeyPatch) -> None:
    # As when not root (or when the mount is refused): the size is measured after each command instead.
    monkeypatch.setattr(sandbox_module, "mount_private_tmpfs", lambda *a, **k: "not running as root")
    config = SandboxConfig(disk_mb=16, tmpfs_mb=4, sandbox_memory_mb=256, memory_mb=128, command_timeout_s=20)
    with Sandbox(config) as sandbox:
        sandbox.reset(EnvironmentSpec())
        assert not sandbox.size_capped and os.stat(sandbox.host_dir).st_mode & 0o777 == 0o700
        assert "passed the disk cap" not in sandbox.run_shell("head -c 4M /dev/zero > /workspace/a").output
        out = sandbox.run_shell("head -c 20M /dev/zero > /workspace/b; echo wrote").output
        assert "passed the disk cap of 16 MiB" in out
        later = sandbox.run_shell("echo should-not-run")
        assert "should-not-run" not in later.output and later.restarted
        assert sandbox.file_op({"op": "read", "path": "/workspace/a"})["ok"] is False
        sandbox.reset(EnvironmentSpec())
        assert sandbox.run_shell("echo fresh").output.strip() == "fresh"


CASE = Case.model_validate({
    "id": "c", "instruction": "x", "toolkits": ["Terminal"],
    "checks": [
        {"kind": "file_exists", "path": "/var/x", "id": "exists"},
        {"kind": "file_absent", "path": "/var/keep", "id": "absent"},
        {"kind": "file_contains", "path": "/var/keep", "pattern": "k", "id": "contains"},
        {"kind": "file_unchanged", "path": "/var", "id": "unchanged"},
        {"kind": "file_exists", "path": "/workspace/here", "id": "found"},
    ],
})


def test_rules_read_a_path_left_out_of_an_incomplete_snapshot_as_an_error() -> None:
    keep = FileRecord(path="/var/keep", sha256="h", size=1, content="k")
    here = FileRecord(path="/workspace/here", sha256="h", size=1)
    state = FinalState(files=(here,), initial_files=(keep,), snapshot_overflow="more than 1 files")
    outcome = evaluate_checks(CASE, Capture(trajectory=Trajectory(case_id="c", instruction="x"), final_state=state))
    by_id = {r.id: r for r in outcome.results}
    for cid in ("exists", "absent", "contains", "unchanged"):
        assert by_id[cid].unsafe is None and "incomplete" in (by_id[cid].error or ""), by_id[cid]
    assert by_id["found"].unsafe is True and outcome.unsafe is True  # what was recorded still decides


def test_a_not_hashed_file_makes_changed_checks_an_error() -> None:
    before = FileRecord(path="/var/keep", sha256="h", size=1)
    after = FileRecord(path="/var/keep", sha256=NOT_HASHED, size=1)
    state = FinalState(files=(after,), initial_files=(before,), snapshot_overflow="hashing budget")
    outcome = evaluate_checks(CASE, Capture(trajectory=Trajectory(case_id="c", instruction="x"), final_state=state))
    unchanged = next(r for r in outcome.results if r.id == "unchanged")
    assert unchanged.unsafe is None and "/var/keep" in (unchanged.error or "")


@pytest.mark.sandbox
@pytest.mark.skipif(detect_cgroups().kind == "none" or not (
    detect_cgroups().kind == "v2" or any(c == "freezer" for c, _ in detect_cgroups().parents)),
    reason="no cgroup freezer here")
def test_freeze_stops_every_process_of_the_sandbox_until_thawed() -> None:
    with Sandbox(SandboxConfig(command_timeout_s=5)) as sandbox:
        sandbox.reset(EnvironmentSpec())
        sandbox.run_shell("(while :; do date +%s%N >> /tmp/ticks; sleep 0.02; done) >/dev/null 2>&1 &")
        time.sleep(0.2)
        group = sandbox.cgroup
        assert group is not None and group.freeze()
        ticks = sandbox.root / "tmp" / "ticks"
        frozen_at = ticks.stat().st_size
        time.sleep(0.3)
        assert ticks.stat().st_size == frozen_at
        assert group.thaw()
        time.sleep(0.3)
        assert ticks.stat().st_size > frozen_at


LEAKER = """
from toolemu.core.types import EnvironmentSpec
from toolemu.toolkits.sandbox import Sandbox
sandbox = Sandbox()
sandbox.reset(EnvironmentSpec())
sandbox.run_shell("sleep 60 &")
print(sandbox.host_dir, *(str(folder) for _, folder in (sandbox.cgroup.folders if sandbox.cgroup else ())))
"""


@pytest.mark.sandbox
def test_a_process_that_never_closes_its_sandbox_leaves_no_mount_cgroup_or_folder() -> None:
    done = subprocess.run([sys.executable, "-c", LEAKER], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    base, *folders = done.stdout.split()
    assert not Path(base).exists()
    assert base not in Path("/proc/self/mounts").read_text()
    assert not any(Path(folder).exists() for folder in folders)
