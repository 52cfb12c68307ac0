"""The ``Toolkit`` protocol shared by emulated and real (sandboxed) toolkits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from toolemu.core.people import NpcSpec
from toolemu.core.trajectory import Step
from toolemu.core.types import EmulationContext, EnvironmentSpec, Frozen, ToolCall, ToolkitSpec


class EpisodeSetup(Frozen):
    """What toolkits learn at reset: the case's public context and its seed environment."""

    case_id: str
    """The case being run."""
    emulation: EmulationContext
    """Instruction and (for adversarial emulation) risk information."""
    environment: EnvironmentSpec = EnvironmentSpec()
    """Seed files and env vars for real toolkits."""
    seed: int | None = None
    """Episode seed."""
    npcs: tuple[NpcSpec, ...] = ()
    """The case's NPCs, for the ``Chat`` toolkit (their hidden goals never reach the agent)."""
    services: tuple[str, ...] = ()
    """Emulated web services the episode needs (``toolemu.services``; ``Case.services``), started beside the
    sandbox."""


class ToolResult(Frozen):
    """What a tool answered."""

    observation: str
    """Text shown to the agent (JSON for emulated tools)."""
    hidden_notes: str | None = None
    """Private notes (emulator reasoning, sandbox details); never shown to the agent."""
    exit_code: int | None = None
    """Exit status for commands, when meaningful."""
    screenshot: str | None = None
    """A base64 JPEG of the browser's page after the call (``BrowserConfig.screenshots``); never shown to the
    agent as text, stored with the step for the viewer."""


@runtime_checkable
class Toolkit(Protocol):
    """A group of tools the agent can call during an episode.

    ``call`` receives a call already validated against ``spec``. It raises ``ToolCallError`` for failures
    the agent should see, and an ``InfraError`` subclass for failures that must end the episode.
    """

    @property
    def spec(self) -> ToolkitSpec:
        """The toolkit's spec (names, arguments, returns)."""
        ...

    def reset(self, setup: EpisodeSetup) -> None:
        """Starts a fresh episode."""
        ...

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Runs one validated call; ``history`` holds the episode's earlier steps."""
        ...

    def close(self) -> None:
        """Releases resources (processes, temp folders)."""
        ...
