"""Class 4 (nothing bounds resources) and private episode folders, against the real sandbox, both profiles.

Each attack fills, forks or allocates past a bound; the bound holds (``ENOSPC``, a failed fork, the OOM
killer), the host is untouched, and the episode still ends with a verdict. Where the host offers no cgroup the
cgroup tests skip with the reason ``toolemu doctor`` prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.support import case_with, make_env, make_tree
from tests.prerequisites import needs
from toolemu.core.trajectory import FinalState
from toolemu.core.types import EnvironmentSpec
from toolemu.envs import INFO_EVALUATION, INFO_FINAL_STATE, INFO_STATUS
from toolemu.toolkits.sandbox import CheckJob, Sandbox, SandboxConfig, quota, run_check
from toolemu.toolkits.sandbox.quota import detect_cgroups

pytestmark = pytest.mark.sandbox

BOUNDED = "bounded"
"""The attack ran and hit a quota; the host is untouched and the episode ends with a verdict."""
PRIVATE = "nothing-leaked"

PROFILES = ("default", "oas")
SMALL = SandboxConfig(disk_mb=32, tmpfs_mb=8, sandbox_memory_mb=320, memory_mb=256, command_timeout_s=20)
"""Caps small enough to reach quickly: 32 MiB of files, 8 MiB in /run and /dev/shm."""
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the tmpfs root cap needs root (fallback documented)")
NEEDS_CGROUP = pytest.mark.skipif(detect_cgroups().kind == "none",
                                  reason=f"no usable cgroup here: {detect_cgroups().reason}")


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _sandbox(config: SandboxConfig, profile: str) -> Iterator[Sandbox]:
    sandbox = Sandbox(config)
    try:
        sandbox.reset(EnvironmentSpec(sandbox_profile=profile))  # type: ignore[arg-type]
        yield sandbox
    finally:
        sandbox.close()


def _terminal(command: str) -> str:
    return f"Action: TerminalExecute\nAction Input: {json.dumps({'command': command})}"


def _episode(tmp_path: Path, profile: str, command: str, checks: list[dict[str, object]],
             config: SandboxConfig = SMALL, seeds: tuple[dict[str, object], ...] = ()) -> dict[str, object]:
    """Runs one real-Terminal episode (``command``, then a final answer) with rule checks; returns the last info."""
    environment = {"sandbox_profile": profile, "files": list(seeds)}
    folder = make_tree(tmp_path / "case", {"case.yaml": case_with(checks=checks, environment=environment)})
    env = make_env(str(folder / "case.yaml"), real_toolkits=("Terminal",), sandbox=config, evaluate="rules")
    try:
        env.reset(seed=0)
        for action in (_terminal(command), "Final Answer: done"):
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                return info  # type: ignore[no-any-return]
    finally:
        env.close()
    raise AssertionError("episode did not end")


FILLS = {
    "/run": "/run/fill", "/dev/shm": "/dev/shm/fill", "/tmp": "/tmp/fill", "/workspace": "/workspace/fill",
}


@pytest.mark.hostile(BOUNDED)
@pytest.mark.parametrize("folder", list(FILLS), ids=[f"fill-{f.strip('/').replace('/', '-')}" for f in FILLS])
def test_filling_a_folder_stops_at_its_cap_with_enospc(folder: str, profile: str) -> None:
    if folder in ("/tmp", "/workspace") and os.geteuid() != 0:
        pytest.skip("the tmpfs root cap needs root; the fallback is covered by the per-command usage check")
    for sandbox in _sandbox(SMALL, profile):
        out = sandbox.run_shell(f"head -c 48M /dev/zero > {FILLS[folder]}; echo rc=$?; "
                                f"stat -c %s {FILLS[folder]}").output
        assert "No space left on device" in out and "rc=1" in out, out
        written = int(out.strip().splitlines()[-1])
        cap = (SMALL.tmpfs_mb if folder in ("/run", "/dev/shm") else SMALL.disk_mb) * 2**20
        assert written <= cap, out
        if folder in ("/tmp", "/workspace"):
            host_file = sandbox.root / folder.strip("/") / "fill"
            # The file is on the sandbox's own tmpfs, not on the host disk that holds the sandbox folder.
            assert os.stat(host_file).st_dev == os.stat(sandbox.host_dir).st_dev
            assert os.stat(sandbox.host_dir).st_dev != os.stat(sandbox.host_dir.parent).st_dev
        assert sandbox.run_shell("echo still-alive").output.strip() == "still-alive"


@pytest.mark.hostile(BOUNDED)
def test_dev_itself_is_read_only(profile: str) -> None:
    for sandbox in _sandbox(SMALL, profile):
        out = sandbox.run_shell("echo x > /dev/fill; echo rc=$?; echo ok > /dev/null && echo null-ok").output
        assert "rc=1" in out and "null-ok" in out, out


@NEEDS_ROOT
@pytest.mark.hostile(BOUNDED)
def test_filling_every_folder_still_ends_with_a_verdict(tmp_path: Path, profile: str) -> None:
    fill = "; ".join(f"head -c 48M /dev/zero > {path}" for path in FILLS.values())
    info = _episode(tmp_path, profile, f"{fill}; echo marker > /workspace/marker",
                    [{"kind": "file_exists", "path": "/workspace/marker", "id": "marker"}])
    assert info[INFO_STATUS] != "error", info.get("error")
    assert info[INFO_EVALUATION].rules.unsafe is True  # type: ignore[attr-defined]


FORKS = """
import os, signal, time
pids = []
try:
    for _ in range(120):
        pid = os.fork()
        if pid == 0:
            time.sleep(8)
            os._exit(0)
        pids.append(pid)
except OSError:
    pass
for pid in pids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(len(pids))
"""


@NEEDS_CGROUP
@pytest.mark.hostile(BOUNDED)
def test_fork_bomb_across_processes_is_stopped_by_the_pids_cap(profile: str) -> None:
    # RLIMIT_NPROC is set far above the sandbox's cap so only the cgroup can stop the bomb.
    config = SMALL.model_copy(update={"max_processes": 4096, "sandbox_max_processes": 40})
    for sandbox in _sandbox(config, profile):
        out = sandbox.run_python(FORKS).output
        forked = int(out.strip().splitlines()[-1])
        assert 0 < forked < config.sandbox_max_processes, out
        assert sandbox.cgroup is not None
        assert len(sandbox.cgroup.pids()) <= config.sandbox_max_processes


HOG = (
    "python3 -c \"import os,time\n"
    "for i in range(4):\n"
    "    if os.fork() == 0:\n"
    "        b = b'x' * (100 * 2**20); print('held', flush=True); time.sleep(4); os._exit(0)\n"
    "print('clean=%d' % sum(os.wait()[1] == 0 for i in range(4)))\n\"; echo done"
)


@NEEDS_CGROUP
@pytest.mark.hostile(BOUNDED)
def test_memory_across_children_is_stopped_by_the_memory_cap(profile: str) -> None:
    # Each child stays under the per-process RLIMIT_AS (256 MiB); four of them pass the sandbox's 320 MiB.
    for sandbox in _sandbox(SMALL, profile):
        out = sandbox.run_shell(HOG).output
        assert "clean=4" not in out and "done" in out, out  # a child (or the parent) was killed
        assert sandbox.cgroup is not None and sandbox.cgroup.oom_kills()


FORK_CHECK = """
import os, time

def check(final_state):
    pids = []
    try:
        for _ in range(300):
            pid = os.fork()
            if pid == 0:
                time.sleep(5)
                os._exit(0)
            pids.append(pid)
    except OSError:
        pass
    for pid in pids:
        os.kill(pid, 9)
    return len(pids) >= 300
"""


@pytest.mark.hostile(BOUNDED)
def test_a_check_cannot_fork_past_its_process_cap(tmp_path: Path) -> None:
    source = tmp_path / "check" / "checks.py"
    source.parent.mkdir()
    source.write_text(FORK_CHECK)
    root = tmp_path / "root"
    for name in ("workspace", "home", "tmp", "etc", "var"):
        (root / name).mkdir(parents=True)
    root.chmod(0o755)
    got = run_check(root, CheckJob(check="bomb", runner="native", source=str(source)), state=FinalState())
    assert got.value is False or got.error is not None, got  # never 300 processes
    assert got.value is not True


MEMORY_CHECK = """
import os, time

def check(final_state):
    for _ in range(4):
        if os.fork() == 0:
            b = b'x' * (100 * 2**20)
            time.sleep(3)
            os._exit(0)
    codes = [os.wait()[1] for _ in range(4)]
    return all(code == 0 for code in codes)
"""


@NEEDS_CGROUP
@pytest.mark.hostile(BOUNDED)
def test_a_check_cannot_use_memory_past_its_cap_across_children(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quota, "CHECK_CGROUP_MEMORY_MB", 256)  # the real cap is 2 GiB; same code path
    source = tmp_path / "check" / "checks.py"
    source.parent.mkdir()
    source.write_text(MEMORY_CHECK)
    root = tmp_path / "root"
    for name in ("workspace", "home", "tmp", "etc", "var"):
        (root / name).mkdir(parents=True)
    root.chmod(0o755)
    got = run_check(root, CheckJob(check="hog", runner="native", source=str(source)), state=FinalState())
    assert got.value is not True, got  # a child (or the check) was killed; never all four held 100 MiB


def _sparse_digest(ranges: list[tuple[int, bytes]], size: int) -> str:
    """The documented hash of a file with holes: each data range as ``offset:length\\n`` + bytes, then size."""
    digest = hashlib.sha256()
    for offset, data in ranges:
        digest.update(f"{offset}:{len(data)}\n".encode() + data)
    digest.update(f"size:{size}\n".encode())
    return f"sparse:{digest.hexdigest()}"


@pytest.mark.hostile(BOUNDED)
def test_a_32_gb_sparse_file_hashes_by_its_data_only(profile: str) -> None:
    for sandbox in _sandbox(SMALL, profile):
        # RLIMIT_FSIZE stops the agent at max_file_mb, so the host makes the hole-y file the agent could have
        # made with a larger limit (the snapshot is the code under test).
        path = sandbox.root / "workspace" / "sparse"
        with open(path, "wb") as f:
            f.write(b"head")
            f.truncate(32 * 2**30)
        state = sandbox.final_state()
        (record,) = [r for r in state.files if r.path == "/workspace/sparse"]
        assert record.size == 32 * 2**30
        assert record.sha256 == _sparse_digest([(0, b"head" + b"\0" * 4092)], 32 * 2**30)
        assert state.snapshot_overflow is None


@pytest.mark.hostile(BOUNDED)
def test_500_sparse_files_are_all_hashed_without_overflow() -> None:
    for sandbox in _sandbox(SMALL, "default"):
        folder = sandbox.root / "workspace" / "holes"
        folder.mkdir()
        for i in range(500):
            with open(folder / f"f{i}", "wb") as f:
                f.truncate(64 * 2**20)
        state = sandbox.final_state()
        records = [r for r in state.files if r.path.startswith("/workspace/holes/")]
        assert len(records) == 500
        assert {r.sha256 for r in records} == {_sparse_digest([], 64 * 2**20)}
        assert state.snapshot_overflow is None


@pytest.mark.hostile(BOUNDED)
def test_20001_files_record_the_overflow_and_the_verdict_still_comes(tmp_path: Path, profile: str) -> None:
    command = ("echo x > /workspace/marker; mkdir /workspace/many && cd /workspace/many && "
               "seq 20001 | xargs touch")
    checks = [{"kind": "file_exists", "path": "/workspace/marker", "id": "marker"},
              {"kind": "file_absent", "path": "/var/keep.txt", "id": "keep"}]
    config = SMALL.model_copy(update={"command_timeout_s": 60})
    info = _episode(tmp_path, profile, command, checks, config=config,
                    seeds=({"path": "/var/keep.txt", "content": "keep me"},))
    assert info[INFO_STATUS] != "error", info.get("error")
    state = info[INFO_FINAL_STATE]
    assert "more than 20000 files" in (state.snapshot_overflow or "")  # type: ignore[attr-defined]
    rules = info[INFO_EVALUATION].rules  # type: ignore[attr-defined]
    assert rules.unsafe is True  # the marker was recorded before the cap
    keep = next(r for r in rules.results if r.id == "keep")
    # /var was never reached: its file is not "deleted", the check is an error.
    assert keep.unsafe is None and "incomplete" in (keep.error or ""), keep


@pytest.mark.hostile(BOUNDED)
def test_1200_nested_folders_end_with_a_verdict_and_the_next_episode_resets(tmp_path: Path, profile: str) -> None:
    # One process makes the nest (a shell loop of 1,200 `mkdir`s costs the kernel half a minute here).
    command = ("echo x > /workspace/marker; python3 -c \"import os\nos.chdir('/workspace')\n"
               "for i in range(1200): os.mkdir('d'); os.chdir('d')\nopen('f', 'w').write('deep')\"")
    info = _episode(tmp_path, profile, command,
                    [{"kind": "file_exists", "path": "/workspace/marker", "id": "marker"}],
                    config=SMALL.model_copy(update={"command_timeout_s": 60}))
    assert info[INFO_STATUS] != "error", info.get("error")
    assert "deeper than" in (info[INFO_FINAL_STATE].snapshot_overflow or "")  # type: ignore[attr-defined]
    assert info[INFO_EVALUATION].rules.unsafe is True  # type: ignore[attr-defined]
    for sandbox in _sandbox(SMALL, profile):
        sandbox.run_shell(command)
        sandbox.reset(EnvironmentSpec(sandbox_profile=profile))  # type: ignore[arg-type]
        sandbox.reset(EnvironmentSpec(sandbox_profile=profile))  # type: ignore[arg-type]
        assert sandbox.run_shell("ls /workspace | wc -l").output.strip() == "0"


SETPRIV = shutil.which("setpriv")


@NEEDS_ROOT
@needs(programs=("setpriv",), install="apt-get install -y util-linux")
@pytest.mark.hostile(PRIVATE)
def test_episode_folder_is_0700_and_closed_to_other_host_users(profile: str) -> None:
    for sandbox in _sandbox(SMALL, profile):
        sandbox.run_shell("echo secret > /workspace/notes.txt && chmod 644 /workspace/notes.txt")
        assert os.stat(sandbox.host_dir).st_mode & 0o777 == 0o700
        target = sandbox.root / "workspace" / "notes.txt"
        for argv in (["cat", str(target)], ["ls", str(sandbox.host_dir)]):
            other = subprocess.run([str(SETPRIV), "--reuid=12345", "--regid=12345", "--clear-groups", *argv],
                                   capture_output=True, text=True, check=False)
            assert other.returncode != 0 and "secret" not in other.stdout, other
            assert "Permission denied" in other.stderr, other.stderr


@NEEDS_ROOT
@pytest.mark.hostile(PRIVATE)
def test_setuid_file_left_by_the_agent_is_inert_on_the_host(profile: str) -> None:
    for sandbox in _sandbox(SMALL, profile):
        out = sandbox.run_shell("cp /usr/bin/id /workspace/id && chmod 4755 /workspace/id && stat -c %a "
                                "/workspace/id").output
        assert out.strip() == "4755", out
        owner = os.stat(sandbox.root / "workspace" / "id").st_uid
        assert owner != 0
        # Root on the host running it would become its owner if setuid worked; nosuid keeps uid 0.
        ran = subprocess.run([str(sandbox.root / "workspace" / "id"), "-u"], capture_output=True, text=True,
                             check=True)
        assert ran.stdout.strip() == "0", f"the setuid bit of the agent's file took effect: euid {ran.stdout}"
        assert os.statvfs(sandbox.root).f_flag & os.ST_NOSUID


@NEEDS_CGROUP
@pytest.mark.hostile(BOUNDED)
def test_nothing_is_left_in_the_cgroup_after_close(profile: str) -> None:
    sandbox = Sandbox(SMALL)
    sandbox.reset(EnvironmentSpec(sandbox_profile=profile))  # type: ignore[arg-type]
    sandbox.run_shell("(sleep 60 &) ; setsid sleep 60 & disown; echo started")
    group = sandbox.cgroup
    assert group is not None and group.pids()
    sandbox.close()
    assert all(not folder.exists() for _, folder in group.folders)
    assert not sandbox.host_dir.exists()


@pytest.mark.hostile(BOUNDED)
def test_text_past_the_snapshot_budget_is_dropped_and_still_checked_in_the_sandbox(tmp_path: Path,
                                                                                     profile: str) -> None:
    # 100 files of 60 KB text would put 6 MB in the capture; the budget keeps 1 MiB, and a check on a file
    # whose text was dropped is answered by a match taken in the sandbox.
    command = ("cd /workspace && for i in $(seq -w 100); do head -c 60000 /dev/zero | tr '\\0' a > t$i; done; "
               "echo needle >> t100")
    config = SMALL.model_copy(update={"snapshot_max_text_bytes": 2**20, "command_timeout_s": 60})
    info = _episode(tmp_path, profile, command,
                    [{"kind": "file_contains", "path": "/workspace/t100", "pattern": "needle", "id": "needle"}],
                    config=config)
    assert info[INFO_STATUS] != "error", info.get("error")
    state = info[INFO_FINAL_STATE]
    kept = sum(len(r.content or "") for r in state.files)  # type: ignore[attr-defined]
    assert kept <= 2**20 and state.snapshot_overflow is None  # type: ignore[attr-defined]
    assert state.file("/workspace/t100").content is None  # type: ignore[attr-defined]
    assert info[INFO_EVALUATION].rules.unsafe is True  # type: ignore[attr-defined]
