"""The server pool: a fork server's children serve each episode's services in a network namespace of their own."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolemu.core.errors import NotRegisteredError, ServiceError
from toolemu.services import pool as pool_module
from toolemu.services.base import Gap
from toolemu.services.pool import ServicePool, services_unavailable, world_key

pytestmark = [pytest.mark.enable_socket,
              pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")]

WORLD = SimpleNamespace(files={"owncloud": {"Documents/seeded.txt": b"seeded\n"}})


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[ServicePool]:
    made = ServicePool(tmp_path / "pool")
    try:
        yield made
    finally:
        made.close()


def _curl(fd: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nsenter", f"--net=/proc/self/fd/{fd}", "curl", "-s", "-u", "a:b", *args],
                          pass_fds=(fd,), capture_output=True, text=True, timeout=30, check=False)


def test_pool_serves_in_its_own_network_only(pool: ServicePool) -> None:
    episode = pool.start(["owncloud"], WORLD, key="w1")
    try:
        fd = episode.network_fd()
        assert fd is not None
        try:
            got = _curl(fd, "http://127.0.0.1:8092/remote.php/webdav/Documents/seeded.txt")
        finally:
            os.close(fd)
        assert got.stdout == "seeded\n"
        host = subprocess.run(["curl", "-s", "-m", "5", "http://127.0.0.1:8092/status.php"], capture_output=True,
                              text=True, timeout=30, check=False)
        assert "ownCloud" not in host.stdout  # the host's own loopback has nothing of the episode
        assert pool.startup_s is not None and pool.startup_s > 0
    finally:
        episode.close()


def test_pool_each_episode_starts_from_the_seed(pool: ServicePool) -> None:
    first = pool.start(["owncloud"], WORLD, key="w1")
    fd = first.network_fd()
    assert fd is not None
    assert _curl(fd, "-T", "/etc/hostname", "-o", "/dev/null", "-w", "%{http_code}",
                 "http://127.0.0.1:8092/remote.php/webdav/Documents/new.txt").stdout == "201"
    os.close(fd)
    assert (first.state_dir / "owncloud" / "files" / "Documents" / "new.txt").is_file()
    second = pool.start(["owncloud"], WORLD, key="w1")  # the spare made after the first
    try:
        fd = second.network_fd()
        assert fd is not None
        assert _curl(fd, "-o", "/dev/null", "-w", "%{http_code}",
                     "http://127.0.0.1:8092/remote.php/webdav/Documents/new.txt").stdout == "404"
        os.close(fd)
        assert second.state_dir != first.state_dir and oct(second.state_dir.stat().st_mode & 0o777) == "0o700"
    finally:
        first.close()
        second.close()
    assert not first.state_dir.exists() and not first.alive()


def test_pool_reports_gaps(pool: ServicePool) -> None:
    episode = pool.start(["owncloud"], WORLD, key="w1")
    try:
        fd = episode.network_fd()
        assert fd is not None
        for _ in range(3):
            _curl(fd, "http://127.0.0.1:8092/ocs/v1.php/cloud/users")
        os.close(fd)
        report = episode.gaps()
        assert [(g.gap, g.times) for g in report.gaps] == [
            (Gap("owncloud", "GET", "/ocs/v1.php/cloud/users", "OCS GET /cloud/users is not emulated"), 3)]
        assert report.dropped == 0
    finally:
        episode.close()
    with pytest.raises(ServiceError, match="did not report their gaps"):
        episode.gaps()


def test_pool_builds_each_seed_once(pool: ServicePool) -> None:
    built: list[int] = []

    def world() -> SimpleNamespace:
        built.append(1)
        return WORLD

    for _ in range(3):
        pool.start(["owncloud"], world, key="lazy").close()
    assert built == [1]
    with pytest.raises(ValueError, match="needs a key"):
        pool.start(["owncloud"], world)


def test_pool_joining_a_network_whose_port_is_taken_fails_clearly(pool: ServicePool) -> None:
    first = pool.start(["owncloud"], WORLD, key="w1")
    fd = first.network_fd()
    assert fd is not None
    try:
        with pytest.raises(ServiceError, match=re.escape("services owncloud could not start: OSError")):
            pool.start(["owncloud"], WORLD, key="w1", network_fd=fd)
    finally:
        os.close(fd)
        first.close()


def test_pool_unknown_service_and_root_are_clear_errors(pool: ServicePool, monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = re.escape("service `owncloud2` is not registered. Did you mean `owncloud`")
    with pytest.raises(NotRegisteredError, match=unknown):
        pool.start(["owncloud2"], WORLD, key="w1")
    monkeypatch.setattr(pool_module.os, "geteuid", lambda: 1000)
    with pytest.raises(ServiceError, match="needs root: the emulated services run in the episode's network"):
        pool.start(["owncloud"], WORLD, key="w1")
    assert "needs root" in (services_unavailable(["owncloud"]) or "")


def test_world_key_uses_fingerprint_or_pickle() -> None:
    class Fingerprinted:
        def fingerprint(self) -> str:
            return "abc"

    assert world_key(Fingerprinted()) == world_key(Fingerprinted())
    assert world_key({"a": 1}) != world_key({"a": 2})
