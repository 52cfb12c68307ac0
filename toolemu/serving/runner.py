"""Runs the app with uvicorn: in the foreground (``toolemu serve``) or on a thread (tests, benchmarks, notebooks)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import uvicorn

from toolemu.core.errors import ConfigError
from toolemu.core.http_guard import DEFAULT_MAX_BODY_BYTES, RequestGuard, is_loopback
from toolemu.serving.app import make_app
from toolemu.serving.environment import ServedCases
from toolemu.serving.sessions import PoolLimits, SessionPool

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
"""Loopback: the server answers this machine only unless told otherwise (``--host 0.0.0.0``)."""


def _config(pool: SessionPool, host: str, port: int, allowed_origins: Sequence[str]) -> uvicorn.Config:
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: a port is 0 to 65535 (0: any free port)")
    # a loopback server answers only loopback Host names (DNS rebinding); web pages' Origins are refused
    app = RequestGuard(make_app(pool), loopback_only=is_loopback(host), allowed_origins=allowed_origins)
    # ws_ping: a peer that vanished without a close frame (a crash, a cut cable) is noticed within 40 s
    return uvicorn.Config(app, host=host, port=port, log_level="warning", ws="websockets-sansio",
                          ws_ping_interval=20.0, ws_ping_timeout=20.0, ws_max_size=DEFAULT_MAX_BODY_BYTES,
                          lifespan="on", limit_concurrency=None, timeout_graceful_shutdown=10)


def serve(served: ServedCases, limits: PoolLimits, *, host: str = DEFAULT_HOST, port: int = 8000,
          allowed_origins: Sequence[str] = ()) -> None:
    """Serves ``served`` until interrupted; every session's env is closed when it stops."""
    if not is_loopback(host):
        logger.warning("serving on %s: reachable from other machines, with no authentication", host)
    uvicorn.Server(_config(SessionPool(served, limits), host, port, allowed_origins)).run()


@dataclass(slots=True)
class RunningServer:
    """A server running on a thread of this process."""

    url: str
    """``http://host:port``."""
    pool: SessionPool
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stops the server; its sessions' envs are closed before this returns."""
        self.server.should_exit = True
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            raise RuntimeError(f"the server at {self.url} did not stop within {timeout_s:g} s")


def start_in_thread(served: ServedCases, limits: PoolLimits, *, host: str = DEFAULT_HOST, port: int = 0,
                    startup_timeout_s: float = 30.0, allowed_origins: Sequence[str] = ()) -> RunningServer:
    """Starts a server on a thread (port 0: a free one) and returns once it accepts connections."""
    pool = SessionPool(served, limits)
    server = uvicorn.Server(_config(pool, host, port, allowed_origins))
    thread = threading.Thread(target=server.run, name="toolemu-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the server on {host}:{port} did not start")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()
    return RunningServer(url=f"http://{bound[0]}:{bound[1]}", pool=pool, server=server, thread=thread)
