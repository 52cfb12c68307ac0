"""``BrowserToolkit``: a real Chromium for the agent, one per episode, in its own sandbox (``jail``).

The browser starts on the agent's first browser call (an episode that never browses pays nothing), in the
network namespace of the episode's emulated services, or an empty one when the case has none. It is ended when
the episode's processes are frozen or stopped for grading (``Sandbox.add_stop_hook``), at the next reset, and
at close.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import os
import posixpath
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import JsonValue

from toolemu.core.errors import CaseError, SandboxError, ToolCallError
from toolemu.core.safefs import read_bytes
from toolemu.core.trajectory import Step
from toolemu.core.types import ToolCall
from toolemu.toolkits.base import EpisodeSetup, ToolResult
from toolemu.toolkits.browser.actions import BrowserAction, make_action, parse_actions
from toolemu.toolkits.browser.driver import Driver, shared_driver
from toolemu.toolkits.browser.jail import BrowserJail, make_jail
from toolemu.toolkits.browser.session import BrowserSession, FilePayload
from toolemu.toolkits.browser.spec import BROWSER_SPEC, TOOL_ACTIONS
from toolemu.toolkits.real._common import SandboxedToolkit
from toolemu.toolkits.sandbox import Sandbox

logger = logging.getLogger(__name__)

WORKSPACE = "/workspace"
"""The only folder ``upload_file`` reads from."""
_CALL_MARGIN_S = 15.0
_Answer = tuple[dict[str, JsonValue], str | None]


class BrowserToolkit(SandboxedToolkit):
    """``BrowserGoto``, ``BrowserClick``, ... ``BrowserRun``: BrowserGym's actions on a sandboxed Chromium.

    Args:
        sandbox: The episode's sandbox: its root's ``/workspace`` holds the files to upload, its services'
            network namespace is the browser's network.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__(sandbox, BROWSER_SPEC)
        self.config = sandbox.config.browser
        self._driver: Driver | None = None
        self._session: BrowserSession | None = None
        self._jail: BrowserJail | None = None
        self._netns: int | None = None
        sandbox.add_stop_hook(self.stop)

    @property
    def running(self) -> bool:
        """Whether the episode's browser has been started (and not yet stopped)."""
        return self._session is not None

    @property
    def jail(self) -> BrowserJail | None:
        """The running browser's sandbox (its uid and cgroup), or ``None``."""
        return self._jail

    def reset(self, setup: EpisodeSetup) -> None:
        """Ends the last episode's browser; the next one starts on the first browser call."""
        super().reset(setup)
        self.stop()

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Runs the call's action(s) and returns the page's observation (JSON).

        Raises:
            ToolCallError: Bad arguments, an unknown element id, a refused URL or file, a failed action.
            SandboxError: The browser could not start, died or stopped answering.
        """
        if call.tool == "BrowserRun":
            code = call.arguments.get("code")
            if not isinstance(code, str):
                raise ToolCallError("InvalidRequestException: `BrowserRun` needs `code` as a string")
            actions = parse_actions(code)
        elif call.tool in TOOL_ACTIONS:
            name = TOOL_ACTIONS[call.tool]
            actions = [make_action(name, [], dict(call.arguments))]
        else:
            raise ToolCallError(f"unknown tool `{call.tool}`; the Browser toolkit has "
                                f"{', '.join(BROWSER_SPEC.tool_names())}")
        uploads = [self._payloads(a) if a.name == "upload_file" else None for a in actions]
        session = self._ensure()
        text = "\n".join(a.text() for a in actions)

        def act(_: object) -> tuple[dict[str, JsonValue], str | None]:
            for action, files in zip(actions, uploads, strict=True):
                session.run(action, files)
            observation = session.observe(text, "")
            return observation, session.screenshot() if self.config.screenshots else None

        limit = len(actions) * (self.config.navigation_timeout_s + self.config.settle_timeout_s) + _CALL_MARGIN_S
        observation, shot = self._on_driver(act, limit)
        return ToolResult(observation=json.dumps(observation, ensure_ascii=False), screenshot=shot)

    def stop(self) -> None:
        """Ends the browser (every process of it) if one runs; the next browser call starts a fresh one."""
        session, self._session = self._session, None
        driver = self._driver
        jail = self._jail
        if jail is not None and jail.cgroup is not None:
            jail.cgroup.kill_all()  # at once: nothing of the page may run on while the grader reads the world
        if session is not None and driver is not None and driver.alive:
            try:
                driver.call(lambda _: session.close(), timeout_s=_CALL_MARGIN_S)
            except SandboxError as e:  # the cgroup kill below ends it anyway
                logger.warning("the browser did not close: %s", e)
        self._jail = None
        if jail is not None:
            jail.close()
        if self._netns is not None:
            os.close(self._netns)
            self._netns = None
        if driver is not None and not self.config.warm_driver:
            driver.close()
            self._driver = None

    def close(self) -> None:
        """Ends the browser."""
        self.stop()

    def _ensure(self) -> BrowserSession:
        if self._session is not None:
            return self._session
        services = self.sandbox.services
        if services is not None:
            self._netns = services.network_fd()
            if self._netns is None:
                raise SandboxError("the episode's emulated services are gone; the browser has no network to join")
        try:
            self._jail = make_jail(self.config, self._netns)
            if self._driver is None or not self._driver.alive:
                self._driver = shared_driver() if self.config.warm_driver else Driver()
            launcher, config = str(self._jail.launcher), self.config
            self._session = self._driver.call(lambda pw: BrowserSession(pw, launcher, config),
                                              timeout_s=config.start_timeout_s + _CALL_MARGIN_S)
        except BaseException:
            self.stop()
            raise
        return self._session

    def _on_driver(self, function: Callable[[Any], _Answer], timeout_s: float) -> _Answer:
        if self._driver is None:
            raise SandboxError("the browser has no driver; call reset first")
        try:
            return self._driver.call(function, timeout_s=timeout_s)
        except SandboxError:
            self.stop()
            raise

    def _payloads(self, action: BrowserAction) -> list[FilePayload]:
        """Reads the files of an ``upload_file`` from the episode's ``/workspace`` (no link out of it followed)."""
        files = action.args["file"]
        paths = files if isinstance(files, list) else [files]
        if not paths:
            raise ToolCallError("InvalidRequestException: upload_file needs at least one file")
        payloads = []
        for path in paths:
            inside = posixpath.normpath(posixpath.join(WORKSPACE, str(path)))
            if not inside.startswith(WORKSPACE + "/"):
                raise ToolCallError(f"InvalidRequestException: the browser uploads only files in {WORKSPACE}, not "
                                    f"{str(path)[:200]!r}")
            relative = inside[len(WORKSPACE) + 1:]
            try:
                data = read_bytes(self.sandbox.root / "workspace", relative, what="file to upload",
                                  limit=self.config.max_upload_mb * 1024 * 1024)
            except CaseError as e:
                raise ToolCallError(f"InvalidRequestException: cannot upload {inside}: {e}") from e
            mime = mimetypes.guess_type(inside)[0] or "application/octet-stream"
            payloads.append({"name": posixpath.basename(inside), "mimeType": mime, "buffer": data})
        return payloads
