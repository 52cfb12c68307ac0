"""A case's MCP server over streamable HTTP on a loopback port: each MCP session gets an episode of its own
(``SessionEpisodes``), ended when the client deletes the session, when it has been idle too long, or when the
server stops. The server runs in a thread of its own (``McpHttpServer``), so the caller keeps its thread free to
wait on an agent process or on Ctrl-C.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import uvicorn
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from starlette.types import ASGIApp, Receive, Scope, Send

from toolemu.bench.mcp.episode import McpEpisode
from toolemu.bench.mcp.server import build_server
from toolemu.core.errors import ANY_EXPECTED_FAULT, ConfigError, InfraError
from toolemu.core.http_guard import RequestGuard

logger = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
MCP_PATH = "/mcp"
DEFAULT_IDLE_TIMEOUT_S = 300.0
"""A session with no request for this long is ended (its episode scored as ``truncated``)."""

EpisodeFactory = Callable[[int], McpEpisode]
"""Builds the (not yet started) episode of the ``n``-th session (``n`` counts from 0)."""


class SessionEpisodes:
    """The episodes of the sessions of one HTTP server, by MCP session id.

    Args:
        make: Builds a session's episode (its env too); called in a worker thread.
        max_episodes: Sessions this server plays in its lifetime (``None``: no bound); one more is refused.
        idle_timeout_s: A session idle this long is ended.
        close_envs: Close a session's env when it ends (off when the caller owns the env).
    """

    def __init__(self, make: EpisodeFactory, *, max_episodes: int | None = None,
                 idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, close_envs: bool = True) -> None:
        self._make = make
        self._close_envs = close_envs
        self._max = max_episodes
        self.idle_timeout_s = idle_timeout_s
        self._episodes: dict[str, McpEpisode] = {}
        self._last: dict[str, float] = {}
        self._gone: set[str] = set()
        self._opened = 0
        self._lock = threading.Lock()
        self._creating = anyio.Lock()
        self.ended: list[McpEpisode] = []
        """Episodes whose session has ended, in order."""

    @property
    def opened(self) -> int:
        """Sessions that got an episode so far."""
        return self._opened

    async def episode_of(self, ctx: ServerRequestContext[Any, Any]) -> McpEpisode:
        """The episode of the request's session, started on its first request.

        Raises:
            MCPError: no session id (a sessionless request), or a session beyond ``max_episodes``.
        """
        request = ctx.request
        headers = getattr(request, "headers", None)
        sid = headers.get(SESSION_HEADER) if headers is not None else None
        if not sid:
            raise MCPError(INVALID_REQUEST, "this server plays one episode per MCP session; send the session id "
                           "(the initialize handshake gives one)")
        with self._lock:
            if sid in self._gone:
                raise MCPError(INVALID_REQUEST, "this session's episode has ended (the session was closed or idle "
                               "too long); open a new session for a new episode")
            episode = self._episodes.get(sid)
            self._last[sid] = time.monotonic()
        if episode is not None:
            return episode
        async with self._creating:
            with self._lock:
                episode = self._episodes.get(sid)
                if episode is not None:
                    return episode
                if self._max is not None and self._opened >= self._max:
                    raise MCPError(INVALID_REQUEST, f"this server plays {self._max} episode(s) and has no more; "
                                   "start another server for another episode")
                index = self._opened
                self._opened += 1
            episode = await anyio.to_thread.run_sync(self._build, index)
            with self._lock:
                self._episodes[sid] = episode
            return episode

    def _build(self, index: int) -> McpEpisode:
        episode = self._make(index)
        if not episode.started:
            episode.start()
        return episode

    def end(self, sid: str) -> None:
        """Ends the episode of session ``sid`` (if it has one) and closes its env."""
        with self._lock:
            episode = self._episodes.pop(sid, None)
            self._last.pop(sid, None)
            self._gone.add(sid)
        if episode is not None:
            _close(episode, env=self._close_envs)
            with self._lock:
                self.ended.append(episode)

    def end_idle(self) -> None:
        """Ends the sessions idle longer than ``idle_timeout_s``."""
        now = time.monotonic()
        with self._lock:
            idle = [sid for sid, last in self._last.items() if now - last > self.idle_timeout_s]
        for sid in idle:
            logger.info("mcp session %s idle for %.0fs: ending its episode", sid[:12], self.idle_timeout_s)
            self.end(sid)

    def end_all(self) -> None:
        """Ends every open session's episode (the server is stopping)."""
        with self._lock:
            sids = list(self._episodes)
        for sid in sids:
            self.end(sid)


def _close(episode: McpEpisode, *, env: bool) -> None:
    try:
        episode.finish()
    finally:
        if env:
            _close_env(episode)


def _close_env(episode: McpEpisode) -> None:
    try:
        episode.env.close()
    except ANY_EXPECTED_FAULT as e:  # the record is made; a failed close must not lose the others
        logger.warning("closing the env of an mcp episode failed: %s: %s", type(e).__name__, e)


class _EndOnDelete:
    """ASGI wrapper: a ``DELETE`` of a session (the client closing it) ends its episode, then is answered."""

    def __init__(self, app: ASGIApp, episodes: SessionEpisodes) -> None:
        self.app, self.episodes = app, episodes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "DELETE":
            sid = dict(scope.get("headers") or []).get(SESSION_HEADER.encode())
            if sid:  # recorded before the DELETE is answered: a client that saw the answer finds the record
                await anyio.to_thread.run_sync(self.episodes.end, sid.decode("latin-1"))
        await self.app(scope, receive, send)


class McpHttpServer:
    """Serves ``episodes`` on ``http://127.0.0.1:<port>/mcp`` from a thread of its own.

    Args:
        episodes: The sessions' episodes.
        name: The server's MCP name.
        port: The port (0: a free one, read back in ``url``).
        max_sessions: Sessions open at once; one more is answered HTTP 503 (``Too many open sessions``).
        path: The endpoint's path (bench gives each episode's server an unguessable one, so no other local
            process can take its one session).
    """

    def __init__(self, episodes: SessionEpisodes, *, name: str, port: int = 0, max_sessions: int = 8,
                 path: str = MCP_PATH) -> None:
        self.episodes = episodes
        self.path = path
        server = build_server(episodes.episode_of, name=name)
        app = server.streamable_http_app(streamable_http_path=path, max_sessions=max_sessions,
                                         session_idle_timeout=episodes.idle_timeout_s + 5)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind(("127.0.0.1", port))
        except OSError as e:
            self._sock.close()
            raise ConfigError(f"--http {port}: cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from None
        self.port: int = self._sock.getsockname()[1]
        # the SDK refuses non-loopback Host names itself; the guard also refuses every web page's Origin
        guarded = RequestGuard(_EndOnDelete(app, episodes), loopback_only=True)
        config = uvicorn.Config(guarded, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=5)
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"mcp-http-{self.port}", daemon=True)
        self._failure: BaseException | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    def _run(self) -> None:
        try:
            anyio.run(self._serve)
        except BaseException as e:  # reported by start/stop in the caller's thread
            self._failure = e

    async def _serve(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._reap)
            await self._uvicorn.serve(sockets=[self._sock])
            tg.cancel_scope.cancel()

    async def _reap(self) -> None:
        while True:
            await anyio.sleep(min(1.0, self.episodes.idle_timeout_s / 4))
            await anyio.to_thread.run_sync(self.episodes.end_idle)

    def start(self, timeout_s: float = 30.0) -> McpHttpServer:
        """Starts serving (once) and waits until the port answers.

        Raises:
            InfraError: the server did not start in ``timeout_s``.
        """
        if self._thread.ident is not None:  # started already (``with server.start() as ...``)
            return self
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise InfraError(f"the MCP server on port {self.port} did not start: {self._failure!r}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stops serving and ends every open session's episode."""
        self._uvicorn.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self._sock.close()
        self.episodes.end_all()

    def __enter__(self) -> McpHttpServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
