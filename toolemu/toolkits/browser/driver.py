"""The Playwright driver: one thread owning Playwright's sync client (and its Node driver process).

Playwright's sync objects belong to the thread that made them, and episodes may step from any thread, so every
browser call is run on the driver's own thread. With ``BrowserConfig.warm_driver`` one driver per worker process
stays up across episodes (``shared_driver``, one per worker thread) and only Chromium starts per episode.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

from toolemu.core.errors import SandboxError

if TYPE_CHECKING:
    from playwright.sync_api import Playwright

logger = logging.getLogger(__name__)

T = TypeVar("T")
_Job = tuple[Callable[[Any], Any], "Future[Any]"]


class Driver:
    """A thread running Playwright's sync client; ``call`` runs a function of the ``Playwright`` object there.

    Raises:
        SandboxError: (from the constructor) Playwright is not installed or its driver does not start.
    """

    def __init__(self, start_timeout_s: float = 60.0) -> None:
        self.pid = os.getpid()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="toolemu-browser-driver", daemon=True)
        self._thread.start()
        try:
            self._ready.result(timeout=start_timeout_s)
        except FutureTimeout as e:
            raise SandboxError(f"the Playwright driver did not start within {start_timeout_s:g} s") from e

    @property
    def alive(self) -> bool:
        """Whether the driver thread still runs (in this process)."""
        return self._thread.is_alive() and self.pid == os.getpid()

    def call(self, function: Callable[[Playwright], T], *, timeout_s: float) -> T:
        """Runs ``function(playwright)`` on the driver thread and returns its result (or raises its error).

        Raises:
            SandboxError: The driver is gone, or the call did not end within ``timeout_s``.
        """
        if not self.alive:
            raise SandboxError("the Playwright driver has stopped; the episode's browser is gone")
        done: Future[T] = Future()
        self._jobs.put((function, done))
        try:
            return done.result(timeout=timeout_s)
        except FutureTimeout as e:
            raise SandboxError(f"the browser did not answer within {timeout_s:g} s") from e

    def close(self) -> None:
        """Stops Playwright (and its driver process) and the thread."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as e:
            self._ready.set_exception(SandboxError(
                "the Browser toolkit needs Playwright's Python client: pip install 'toolemu[browser]'"))
            logger.debug("playwright import failed: %s", e)
            return
        try:
            manager = sync_playwright()
            playwright = manager.start()
        except Exception as e:  # the driver's own start failure, reported to the constructor
            self._ready.set_exception(SandboxError(f"the Playwright driver did not start: {e}"))
            return
        self._ready.set_result(None)
        try:
            while (job := self._jobs.get()) is not None:
                function, done = job
                if not done.set_running_or_notify_cancel():
                    continue
                try:
                    done.set_result(function(playwright))
                except BaseException as e:  # handed to the caller, who decides what it means
                    done.set_exception(e)
        finally:
            manager.__exit__(None, None, None)


_LOCAL = threading.local()


def shared_driver() -> Driver:
    """The warm driver of the calling worker thread, started on first use (episodes on different worker threads
    or processes never wait on each other's browser calls)."""
    driver: Driver | None = getattr(_LOCAL, "driver", None)
    if driver is None or not driver.alive:
        driver = Driver()
        _LOCAL.driver = driver
    return driver
