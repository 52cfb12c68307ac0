"""The server's sessions: one ``ServedEnv`` each, a bound on how many live at once, and the idle reaper.

Every way a session ends (the client closes it, its WebSocket drops, it idles past the timeout, the server stops)
goes through ``SessionPool.close``, which closes the env, so no sandbox, service or process outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from toolemu.core.errors import CapacityError, EnvStateError
from toolemu.serving.environment import ServedCases, ServedEnv

logger = logging.getLogger(__name__)

T = TypeVar("T")

Transport = Literal["websocket", "http"]


@dataclass(frozen=True, slots=True)
class PoolLimits:
    """How many sessions may live at once, and how long one may sit idle before it is closed."""

    max_sessions: int = 64
    idle_timeout_s: float | None = 300.0
    """``None``: never reaped for idling (a dropped WebSocket still closes its session)."""


@dataclass(slots=True, eq=False)
class Session:
    """One client's env, with the one thread every call on it runs in (so a sandbox's processes keep their
    parent thread for the session's whole life)."""

    id: str
    env: ServedEnv
    transport: Transport
    executor: ThreadPoolExecutor
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_active: float = field(default_factory=time.monotonic)
    busy: bool = False
    on_close: Callable[[str], Awaitable[None]] | None = None
    """Called with the reason when the pool closes the session on its own (idle, shutdown): the WebSocket
    endpoint closes its socket with that reason."""


class SessionPool:
    """The live sessions of one server.

    Args:
        served: What each session's env serves.
        limits: The bound and the idle timeout.
    """

    def __init__(self, served: ServedCases, limits: PoolLimits) -> None:
        if limits.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {limits.max_sessions}")
        self.served = served
        self.limits = limits
        self._sessions: dict[str, Session] = {}
        self._opened = 0
        self._closed = 0
        self._reaper: asyncio.Task[None] | None = None

    @property
    def live(self) -> int:
        """Sessions open now."""
        return len(self._sessions)

    @property
    def counts(self) -> dict[str, int]:
        """Sessions open now, opened and closed since the server started, and the bound."""
        return {"active": self.live, "opened": self._opened, "closed": self._closed,
                "max_sessions": self.limits.max_sessions}

    def refusal(self) -> str:
        """The one-line reason a session is refused at the bound."""
        return (f"server at its bound of {self.limits.max_sessions} concurrent sessions (--max-sessions); "
                f"close a session or retry later")

    def open(self, transport: Transport) -> Session:
        """Opens a session (its env is built on its first reset).

        Raises:
            CapacityError: ``max_sessions`` sessions are open.
        """
        if len(self._sessions) >= self.limits.max_sessions:
            raise CapacityError(self.refusal())
        session_id = uuid.uuid4().hex
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"session-{session_id[:8]}")
        session = Session(id=session_id, env=ServedEnv(self.served, session_id), transport=transport,
                          executor=executor)
        self._sessions[session_id] = session
        self._opened += 1
        return session

    def get(self, session_id: str) -> Session | None:
        """The open session of that id."""
        return self._sessions.get(session_id)

    async def call(self, session: Session, fn: Callable[[], T]) -> T:
        """Runs ``fn`` in the session's thread, one call at a time, keeping the session alive while it runs."""
        async with session.lock:
            if session.id not in self._sessions:
                raise EnvStateError(f"session {session.id} is closed; open a new one")
            session.busy = True
            session.last_active = time.monotonic()
            try:
                return await asyncio.get_running_loop().run_in_executor(session.executor, fn)
            finally:
                session.busy = False
                session.last_active = time.monotonic()

    async def close(self, session_id: str, reason: str | None = None) -> bool:
        """Closes a session: its env (sandboxes, services, processes) and its thread. Closing twice is a no-op.

        Args:
            reason: Why the pool closed it on its own; the session's ``on_close`` gets it.

        Returns:
            Whether the session was open.
        """
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        self._closed += 1
        if reason is not None and session.on_close is not None:
            with contextlib.suppress(Exception):  # the client is gone already: the env is closed all the same
                await session.on_close(reason)
        async with session.lock:  # a call in flight finishes first; none starts after the pop above
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(session.executor, session.env.close)
            except Exception:  # a close that raised must not keep the next sessions from closing
                logger.exception("session %s: closing its env failed", session_id)
            finally:
                session.executor.shutdown(wait=False)
        logger.info("session %s closed%s", session_id, f" ({reason})" if reason else "")
        return True

    async def close_all(self, reason: str) -> None:
        """Closes every session (the server is stopping)."""
        await asyncio.gather(*(self.close(sid, reason) for sid in list(self._sessions)))

    def start_reaper(self) -> None:
        """Starts closing the sessions idle past the timeout (no-op without one)."""
        if self.limits.idle_timeout_s is not None and self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever(self.limits.idle_timeout_s))

    async def stop_reaper(self) -> None:
        """Stops the reaper."""
        task, self._reaper = self._reaper, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def reap_idle(self, timeout_s: float) -> list[str]:
        """Closes the sessions with no call for ``timeout_s`` seconds (a call in flight is activity).

        Returns:
            The ids closed.
        """
        now = time.monotonic()
        stale = [s.id for s in self._sessions.values() if not s.busy and now - s.last_active > timeout_s]
        reason = f"session idle for more than {timeout_s:g} s (--idle-timeout); closed"
        closed = [sid for sid in stale if await self.close(sid, reason)]
        return closed

    async def _reap_forever(self, timeout_s: float) -> None:
        interval = min(max(timeout_s / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reap_idle(timeout_s)
            except Exception:  # the reaper must outlive one bad close
                logger.exception("idle-session reaper failed; retrying")
