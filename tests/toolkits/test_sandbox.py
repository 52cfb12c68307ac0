"""Real-sandbox tests of ``Sandbox``: persistence, destructive commands, limits, snapshots, errors."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolemu.core.errors import CaseError, SandboxError
from toolemu.core.types import EnvironmentSpec, SeedFile
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig

pytestmark = pytest.mark.sandbox

SEEDED = EnvironmentSpec(
    files=(
        SeedFile(path="/workspace/notes.txt", content="keep me\n"),
        SeedFile(path="/var/log/app.log", content="line 1\n"),
        SeedFile(path="/var/lib/db/data.bin", content="rows\n", mode=0o600),
    ),
    env={"CASE_VAR": "from-case"},
)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    sb = Sandbox(SandboxConfig(command_timeout_s=2.0))
    sb.reset(SEEDED)
    yield sb
    sb.close()


def test_sandbox_shell_keeps_cwd_env_and_background_jobs(sandbox: Sandbox) -> None:
    assert sandbox.run_shell("mkdir -p /tmp/d").exit_code == 0
    assert sandbox.run_shell("cd /tmp/d; export MY=42; sleep 30 &").exit_code == 0
    out = sandbox.run_shell("pwd; echo $MY $CASE_VAR; jobs -r | wc -l").output.split()
    assert out == ["/tmp/d", "42", "from-case", "1"]


def test_sandbox_reports_exit_code_and_stderr(sandbox: Sandbox) -> None:
    got = sandbox.run_shell("echo out; echo err >&2; (exit 7)")
    assert (got.output, got.exit_code, got.timed_out) == ("out\nerr\n", 7, False)


def test_sandbox_command_cannot_swallow_the_protocol(sandbox: Sandbox) -> None:
    assert sandbox.run_shell("cat; read x; echo done").output == "done\n"
    assert sandbox.run_shell("-n").exit_code == 127
    assert sandbox.run_shell("echo 'unterminated").exit_code != 0
    assert sandbox.run_shell("echo still here").output == "still here\n"


def test_sandbox_host_environment_does_not_leak(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-only")
    sandbox.reset(SEEDED)
    got = sandbox.run_shell("env; tr '\\0' '\\n' < /proc/1/environ; tr '\\0' '\\n' < /proc/self/environ")
    assert "sk-host-only" not in got.output and "CASE_VAR=from-case" in got.output
    assert sandbox.run_shell("hostname; id -un").output == "sandbox\nuser\n"


def test_sandbox_rm_rf_var_changes_episode_var_not_host(sandbox: Sandbox) -> None:
    host_var = sorted(os.listdir("/var"))
    assert (sandbox.root / "var/log/app.log").is_file()
    got = sandbox.run_shell("rm -rf /var/*; ls -A /var | wc -l")
    assert got.output.strip() == "0"
    state = sandbox.final_state()
    assert state.initial_file("/var/log/app.log") is not None
    assert state.file("/var/log/app.log") is None
    assert not [f for f in state.files if f.path.startswith("/var/")]
    assert state.file("/workspace/notes.txt") is not None
    assert sorted(os.listdir("/var")) == host_var
    assert any(c.command.startswith("rm -rf /var/*") for c in state.commands)


def test_sandbox_etc_hosts_edit_is_in_snapshot_not_on_host(sandbox: Sandbox) -> None:
    before = _sha(Path("/etc/hosts"))
    sandbox.run_shell("echo '10.6.6.6 bank.example.com' >> /etc/hosts")
    record = sandbox.final_state().file("/etc/hosts")
    assert record is not None and record.content is not None
    assert "10.6.6.6 bank.example.com" in record.content
    assert _sha(Path("/etc/hosts")) == before


def test_sandbox_reset_restores_seed_without_touching_template(sandbox: Sandbox) -> None:
    sandbox.run_shell("echo changed >> /workspace/notes.txt; rm /var/log/app.log; cd /tmp; export MY=1")
    sandbox.reset(SEEDED)
    assert (sandbox.root / "workspace/notes.txt").read_text() == "keep me\n"
    assert (sandbox.root / "var/log/app.log").read_text() == "line 1\n"
    assert sandbox.run_shell("pwd; echo ${MY:-unset}").output == "/workspace\nunset\n"
    assert sandbox.commands[-1].command == "pwd; echo ${MY:-unset}" and len(sandbox.commands) == 1
    assert sandbox.snapshot_files() == sandbox.initial_files


def test_sandbox_seed_source_modes_and_errors(tmp_path: Path) -> None:
    (tmp_path / "case").mkdir()
    (tmp_path / "case" / "data.csv").write_text("a,b\n")
    env = EnvironmentSpec(
        files=(SeedFile(path="/workspace/in/data.csv", source="data.csv", mode=0o640),),
        base_dir=str(tmp_path / "case"),
    )
    with Sandbox() as sb:
        sb.reset(env)
        assert sb.run_shell("stat -c '%a %U' in/data.csv; cat in/data.csv").output == "640 user\na,b\n"
        bad = EnvironmentSpec(files=(SeedFile(path="/usr/bin/x", content="x"),))
        with pytest.raises(CaseError, match=re.escape("path '/usr/bin/x' is not under /workspace")):
            sb.reset(bad)
        missing = EnvironmentSpec(
            files=(SeedFile(path="/workspace/x", source="nope.txt"),), base_dir=str(tmp_path)
        )
        with pytest.raises(CaseError, match=re.escape("source 'nope.txt' not found")):
            sb.reset(missing)


def test_sandbox_network_is_blocked_even_to_host_loopback(sandbox: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted: list[object] = []
    server.settimeout(1)
    thread = threading.Thread(target=lambda: accepted.append(_accept(server)))
    thread.start()
    code = (
        "import socket\n"
        f"for addr in [('127.0.0.1', {port}), ('1.1.1.1', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(addr, timeout=1); print('CONNECTED')\n"
        "    except OSError as e:\n"
        "        print('blocked', type(e).__name__)\n"
    )
    got = sandbox.run_python(code)
    thread.join()
    server.close()
    assert "CONNECTED" not in got.output and got.output.count("blocked") == 2
    assert accepted == [None]
    assert sandbox.run_shell("cat /proc/net/dev | grep -c ':'").output.strip() == "1"


def _accept(server: socket.socket) -> object:
    try:
        return server.accept()
    except OSError:
        return None


test_sandbox_network_is_blocked_even_to_host_loopback = pytest.mark.enable_socket(
    test_sandbox_network_is_blocked_even_to_host_loopback
)


def test_sandbox_timeout_kills_command_but_keeps_session(sandbox: Sandbox) -> None:
    sandbox.run_shell("export KEEP=yes; sleep 60 & echo $! > /tmp/bg")
    got = sandbox.run_shell("sleep 60")
    assert got.timed_out and got.exit_code is None and not got.restarted
    assert "timed out after 2 s" in got.output
    assert (
        sandbox.run_shell("echo $KEEP; kill -0 $(cat /tmp/bg) && echo bg-alive").output == "yes\nbg-alive\n"
    )


def test_sandbox_builtin_loop_restarts_session(sandbox: Sandbox) -> None:
    got = sandbox.run_shell("while :; do :; done")
    assert got.timed_out and got.restarted
    assert "session ended" in got.output
    assert sandbox.run_shell("pwd").output == "/workspace\n"


def test_sandbox_output_flood_is_truncated_with_marker(tmp_path: Path) -> None:
    with Sandbox(SandboxConfig(max_output_chars=3000, command_timeout_s=2)) as sb:
        sb.reset()
        got = sb.run_shell("seq 1 300000")
        assert got.truncated and got.exit_code == 0 and not got.timed_out
        assert got.output.startswith("1\n2\n3\n") and got.output.endswith("299999\n300000\n")
        assert re.search(r"\[\.\.\. output truncated: \d+ bytes omitted \.\.\.\]", got.output)
        assert len(got.output) < 3200
        endless = sb.run_shell("yes")
        assert endless.timed_out and endless.truncated and len(endless.output) < 3400
        assert sb.run_shell("echo ok").output == "ok\n"


def test_sandbox_memory_hog_fails_inside(tmp_path: Path) -> None:
    with Sandbox(SandboxConfig(memory_mb=256)) as sb:
        sb.reset()
        got = sb.run_shell("python3 -c 'b = bytearray(1024 ** 3); print(len(b))'")
        assert got.exit_code == 1 and "MemoryError" in got.output
        assert sb.run_shell("echo ok").output == "ok\n"


def test_sandbox_process_limit_caps_forks(tmp_path: Path) -> None:
    with Sandbox(SandboxConfig(max_processes=32)) as sb:
        sb.reset()
        code = (
            "import os, time\nn = 0\ntry:\n    while n < 200:\n        if os.fork() == 0:\n"
            "            time.sleep(2); os._exit(0)\n        n += 1\n"
            "except BlockingIOError:\n    pass\nprint(n)"
        )
        forks = int(sb.run_python(code).output)
        assert 20 <= forks < 32


def test_sandbox_fork_bomb_is_contained(tmp_path: Path) -> None:
    cfg = SandboxConfig(max_processes=32, command_timeout_s=2)
    with Sandbox(cfg) as sb:
        sb.reset()
        uid = (sb.root / "workspace").stat().st_uid
        peak = [0]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], len(_pids_of(uid)))

        watcher = threading.Thread(target=watch)
        watcher.start()
        sb.run_shell(":(){ :|:& };:")
        stop.wait(1.5)
        stop.set()
        watcher.join()
        assert peak[0] <= cfg.max_processes + 3, peak
        after = sb.run_shell("echo ok")
        assert after.output.endswith("ok\n") and "Resource temporarily unavailable" in after.output
    assert _pids_of(uid) == []


def _pids_of(uid: int) -> list[int]:
    """Host pids owned by ``uid`` (the sandbox's own host uid when the tests run as root)."""
    if os.geteuid() != 0:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except FileNotFoundError:
                continue
    return found


def test_sandbox_file_size_and_cpu_limits(tmp_path: Path) -> None:
    with Sandbox(SandboxConfig(max_file_mb=1, cpu_seconds=1, command_timeout_s=8)) as sb:
        sb.reset()
        big = sb.run_shell("head -c 5000000 /dev/zero > big.bin; echo $?; stat -c %s big.bin")
        assert big.output.split()[-1] == str(1024 * 1024)
        spin = sb.run_shell("python3 -c 'while True: pass'")
        assert not spin.timed_out and spin.exit_code == 128 + 24, spin


def test_sandbox_snapshot_never_follows_agent_symlinks(sandbox: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host-only-secret")
    sandbox.run_shell(
        f"ln -s {secret} /workspace/link; ln -s / /workspace/hostroot; printf 'é\\xff' > bin.dat"
    )
    files = {f.path: f for f in sandbox.snapshot_files()}
    link = files["/workspace/link"]
    assert link.content is None and link.sha256 == hashlib.sha256(f"symlink:{secret}".encode()).hexdigest()
    assert not any(p.startswith("/workspace/hostroot/") for p in files)
    assert files["/workspace/bin.dat"].content is None and files["/workspace/bin.dat"].size == 3
    assert all("host-only-secret" not in (f.content or "") for f in files.values())


def test_sandbox_missing_bwrap_raises_sandbox_error(tmp_path: Path) -> None:
    cfg = SandboxConfig(bwrap_path=str(tmp_path / "no-such-bwrap"))
    with pytest.raises(SandboxError, match="Debian/Ubuntu package `bubblewrap`"):
        Sandbox(cfg)


def test_sandbox_bwrap_that_cannot_start_raises_sandbox_error() -> None:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder).chmod(0o755)
        broken = Path(folder) / "bwrap"
        broken.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed' >&2\nexit 1\n")
        broken.chmod(0o755)
        _expect_start_failure(SandboxConfig(bwrap_path=str(broken)))


def _expect_start_failure(cfg: SandboxConfig) -> None:
    with Sandbox(cfg) as sb:
        sb.reset()
        with pytest.raises(SandboxError, match="Creating new namespace failed"):
            sb.run_shell("true")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to an unprivileged sandbox user")
def test_sandbox_workdir_closed_to_sandbox_user_is_refused(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(SandboxError, match=re.escape(f"{private} is closed to other users (mode 0o700)")):
        Sandbox(workdir=private)


def test_sandbox_unsandboxed_needs_opt_in_and_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), Sandbox(SandboxConfig(allow_unsandboxed=True)) as sb:
        sb.reset(SEEDED)
        assert sb.run_shell("cat notes.txt").output == "keep me\n"
    assert "sandbox disabled" in caplog.text


def test_sandbox_close_removes_root_and_processes(tmp_path: Path) -> None:
    sb = Sandbox()
    sb.reset()
    sb.run_shell("setsid sleep 300 >/dev/null 2>&1 < /dev/null & sleep 0.1")
    uid = (sb.root / "workspace").stat().st_uid
    assert _pids_of(uid) or os.geteuid() != 0
    sb.close()
    sb.close()
    assert not sb.host_dir.exists()
    assert _pids_of(uid) == []
    with pytest.raises(SandboxError, match="closed"):
        sb.reset()


@pytest.mark.skipif(os.geteuid() != 0, reason="sharing the shell's network needs root")
@pytest.mark.parametrize("profile", ["default", "oas"])
def test_sandbox_python_cells_share_the_shells_network(sandbox: Sandbox, profile: str) -> None:
    sandbox.reset(EnvironmentSpec(sandbox_profile=profile))  # type: ignore[arg-type]
    sandbox.run_shell("cd /tmp && echo shared > page && (setsid python3 -m http.server 8767 --bind 127.0.0.1 "
                      ">/dev/null 2>&1 &); sleep 1")
    got = sandbox.run_python("import urllib.request\n"
                             "print(urllib.request.urlopen('http://127.0.0.1:8767/page', timeout=5).read())")
    assert "b'shared\\n'" in got.output, got.output
    outside = sandbox.run_python("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 80), timeout=1)\n"
                                 "except OSError as e:\n    print('blocked', e.errno)")
    assert "blocked" in outside.output, outside.output
    fd = sandbox.network_fd()
    assert fd is not None
    os.close(fd)
    sandbox.stop()
    assert sandbox.network_fd() is None
