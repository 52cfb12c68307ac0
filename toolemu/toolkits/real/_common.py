"""Shared plumbing of the real toolkits: the sandbox handle, argument reading, result rendering."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import JsonValue

from toolemu.core.errors import ToolCallError
from toolemu.core.trajectory import Step
from toolemu.core.types import ToolCall, ToolkitSpec
from toolemu.toolkits.base import EpisodeSetup, ToolResult
from toolemu.toolkits.sandbox import CommandOutcome, Sandbox

TIMEOUT_EXIT_CODE = 124
"""``exit_code`` shown to the agent when a run hit its time limit (as GNU ``timeout`` reports it)."""


class SandboxedToolkit:
    """Base of the real toolkits: they share the episode's ``Sandbox``, which its owner resets and closes."""

    def __init__(self, sandbox: Sandbox, spec: ToolkitSpec) -> None:
        self.sandbox = sandbox
        self._spec = spec

    @property
    def spec(self) -> ToolkitSpec:
        """The toolkit's spec."""
        return self._spec

    def reset(self, setup: EpisodeSetup) -> None:
        """Checks that the owner has reset the shared sandbox for this episode.

        Raises:
            SandboxError: When ``Sandbox.reset`` has not been called.
        """
        _ = self.sandbox.root

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Runs one call (implemented by each toolkit)."""
        raise NotImplementedError

    def close(self) -> None:
        """Does nothing: the sandbox belongs to whoever created it (the ``ToolBox``), which closes it."""


def string_arg(call: ToolCall, name: str, *, required: bool = True) -> str | None:
    """Returns a string argument, or raises ``ToolCallError`` naming the argument and tool."""
    value = call.arguments.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ToolCallError(
            f"InvalidRequestException: `{call.tool}` needs `{name}` as a string, got {type(value).__name__}"
        )
    if "\x00" in value:
        raise ToolCallError(f"InvalidRequestException: `{name}` of `{call.tool}` contains a NUL character")
    return value


def bool_arg(call: ToolCall, name: str) -> bool:
    """Returns an optional boolean argument (default false), or raises ``ToolCallError``."""
    value = call.arguments.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolCallError(f"InvalidRequestException: `{name}` of `{call.tool}` must be true or false")
    return value


def execution_result(outcome: CommandOutcome) -> ToolResult:
    """Renders a shell or Python run as ``{"output", "exit_code"}`` JSON, the spec's returns."""
    code = TIMEOUT_EXIT_CODE if outcome.exit_code is None else outcome.exit_code
    notes = []
    if outcome.timed_out:
        notes.append("timed out")
    if outcome.truncated:
        notes.append("output truncated")
    if outcome.restarted:
        notes.append("session restarted")
    observation = json.dumps({"output": outcome.output, "exit_code": code}, ensure_ascii=False)
    return ToolResult(
        observation=observation, exit_code=outcome.exit_code, hidden_notes="; ".join(notes) or None
    )


def json_result(result: dict[str, JsonValue]) -> ToolResult:
    """Renders a file operation's result as JSON."""
    return ToolResult(observation=json.dumps(result, ensure_ascii=False))
