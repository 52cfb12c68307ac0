"""Tests for ``toolemu doctor`` (click's CliRunner): one line per quota and time limit, as detected here."""

from __future__ import annotations

import os

from click.testing import CliRunner

from toolemu.cli.main import cli
from toolemu.toolkits.sandbox import SandboxConfig
from toolemu.toolkits.sandbox.quota import detect_cgroups


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.output


def test_doctor_prints_one_line_per_limit_with_what_applies_here() -> None:
    out = _run("doctor")
    lines = dict(line.split(": ", 1) for line in out.splitlines())
    assert set(lines) == {"bwrap", "user", "cgroup", "sandbox as a whole", "cgroup freezer", "root size",
                          "/run, /dev/shm", "per process", "time", "snapshot", "archive members", "checks",
                          "episode clock", "web services"}
    assert lines["episode clock"].startswith(("libfaketime /", "MISSING: libfaketime not found"))
    if os.geteuid() == 0:
        assert lines["web services"] == ("owncloud 8092, gitlab 8929, plane 8091 at the-agent-company.com, in each "
                                         "episode's network namespace")
    else:
        assert lines["web services"].startswith("UNAVAILABLE: ") and "needs root" in lines["web services"]
    support = detect_cgroups()
    assert lines["cgroup"].startswith(f"{support.kind}: ")
    cfg = SandboxConfig()
    if support.kind == "none":
        assert "NOT bounded across processes" in lines["sandbox as a whole"]
    else:
        assert f"memory {cfg.sandbox_memory_mb} MiB" in lines["sandbox as a whole"]
    if os.geteuid() == 0:
        assert lines["root size"].startswith(f"tmpfs of {cfg.disk_mb} MiB")
    else:
        assert lines["root size"].startswith("FALLBACK")
    assert f"tmpfs of {cfg.tmpfs_mb} MiB each" in lines["/run, /dev/shm"]
    assert f"RLIMIT_AS {cfg.memory_mb} MiB" in lines["per process"]
    assert f"{cfg.command_timeout_s:g} s per command" in lines["time"]
    assert lines["archive members"] == ("archives up to 16 MiB, 256 members and 32 MiB unpacked each; nothing "
                                        "extracted; overflow recorded")


def test_models_points_at_doctor() -> None:
    out = _run("models")
    assert f"sandbox limits: cgroup {detect_cgroups().kind}" in out and "`toolemu doctor`" in out
