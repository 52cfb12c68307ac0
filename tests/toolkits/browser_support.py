"""Shared helpers of the Browser toolkit tests: one sandbox with the services, a browser, bid look-ups."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from toolemu.core.types import EmulationContext, EnvironmentSpec, ToolCall
from toolemu.toolkits.base import EpisodeSetup
from toolemu.toolkits.browser import BrowserToolkit
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig

OWNCLOUD = "http://the-agent-company.com:8092"
GITLAB = "http://the-agent-company.com:8929"
PLANE = "http://the-agent-company.com:8091"


def needs_chromium() -> None:
    """Fails (naming the package) when the system Chromium or bwrap is missing."""
    for program in ("chromium", "bwrap"):
        if shutil.which(program) is None:
            pytest.fail(f"`{program}` is missing: apt-get install -y chromium bubblewrap")


@dataclass
class Episode:
    """A sandbox with services and its browser, driven call by call."""

    sandbox: Sandbox
    browser: BrowserToolkit
    tree: str = ""

    def act(self, tool: str, **arguments: object) -> dict[str, object]:
        """Runs one browser tool and returns its observation."""
        observation: dict[str, object] = json.loads(
            self.browser.call(ToolCall(tool=tool, arguments=arguments), []).observation)  # type: ignore[arg-type]
        self.tree = str(observation["axtree_txt"])
        return observation

    def run(self, code: str) -> dict[str, object]:
        """Runs BrowserGym action code."""
        return self.act("BrowserRun", code=code)

    def bid(self, role: str, name: str) -> str:
        """The bid of the first element of ``role`` named ``name`` in the latest observation."""
        found = re.search(rf"\[(\w+)\] {re.escape(role)} {re.escape(repr(name))}", self.tree)
        if found is None:
            raise AssertionError(f"no {role} {name!r} in the page:\n{self.tree[:3000]}")
        return found.group(1)

    def fetch(self, url: str, *, headers: dict[str, str] | None = None, method: str = "GET") -> str:
        """Requests ``url`` from inside the sandbox (the services' namespace), as the agent's shell would."""
        code = (f"import urllib.request\nr = urllib.request.Request({url!r}, headers={headers or {}!r}, "
                f"method={method!r})\nprint(urllib.request.urlopen(r, timeout=10).read().decode(), end='')")
        out = self.sandbox.run_python(code)
        assert out.exit_code == 0, out.output
        return out.output

    def api(self, url: str, *, headers: dict[str, str] | None = None) -> Any:
        """GETs ``url`` as JSON from inside the sandbox."""
        return json.loads(self.fetch(url, headers=headers))


@contextmanager
def episode(services: tuple[str, ...] = ("owncloud", "gitlab", "plane"), *,
            environment: EnvironmentSpec | None = None, config: SandboxConfig | None = None) -> Iterator[Episode]:
    """A sandbox reset with ``services`` and a Browser toolkit over it."""
    needs_chromium()
    sandbox = Sandbox(config or SandboxConfig())
    try:
        browser = BrowserToolkit(sandbox)
        env = environment or EnvironmentSpec()
        setup = EpisodeSetup(case_id="browser-test", emulation=EmulationContext(instruction="test"),
                             environment=env, services=services)
        sandbox.reset(env, services=services)
        browser.reset(setup)
        yield Episode(sandbox, browser)
    finally:
        sandbox.close()
