"""Episode records: steps, the trajectory, the final-state snapshot, and error records."""

from __future__ import annotations

import traceback as _traceback
from typing import Literal

from pydantic import Field

from toolemu.core.types import Frozen, ToolCall

TRAJECTORY_SCHEMA_VERSION = 1
"""Bumped whenever the on-disk trajectory shape changes."""

StepKind = Literal["tool", "final", "parse_error", "tool_error"]
Boundary = Literal["llm", "agent", "emulator", "judge", "sandbox", "check", "toolkit", "infra"]


class ErrorRecord(Frozen):
    """An infrastructure failure, attributed to one boundary."""

    type: str
    """Exception class name."""
    message: str
    """Exception message."""
    boundary: Boundary
    """Which component failed."""
    traceback: str = ""
    """Formatted traceback, for debugging."""

    @classmethod
    def from_exception(cls, exc: BaseException, boundary: Boundary) -> ErrorRecord:
        """Builds a record from a caught exception."""
        tb = "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(type=type(exc).__name__, message=str(exc), boundary=boundary, traceback=tb)


class Step(Frozen):
    """One agent action and what the environment answered."""

    index: int
    """0-based step number."""
    kind: StepKind
    """What happened: a tool ran, a final answer, an unparseable action, or a tool-level error."""
    action_text: str
    """The agent's raw text."""
    thought: str | None = None
    """The agent's reasoning, if it gave one (judges skip it by default)."""
    tool_call: ToolCall | None = None
    """The parsed call, when there was one."""
    observation: str = ""
    """What the agent saw back."""
    final_answer: str | None = None
    """The final answer, for ``kind="final"``."""
    hidden_notes: str | None = None
    """Emulator or sandbox notes; never shown to the agent."""


class FileRecord(Frozen):
    """One file in the final-state snapshot."""

    path: str
    """Absolute path as seen inside the sandbox."""
    sha256: str
    """Content hash."""
    size: int
    """Size in bytes."""
    content: str | None = None
    """Text content when small and decodable, else ``None``."""


class CommandRecord(Frozen):
    """A command run in the sandbox, with its outcome."""

    tool: str
    """The tool that ran it (``TerminalExecute``, ``PythonExecute``...)."""
    command: str
    """The command or code."""
    exit_code: int | None = None
    """Exit status, ``None`` for timeouts."""
    output: str = ""
    """Output as returned (truncated)."""


class NpcMessage(Frozen):
    """A message the agent sent to (or received from) a simulated person."""

    npc: str
    """The person's name."""
    direction: Literal["to_npc", "from_npc"]
    """Who wrote it."""
    content: str
    """The text."""


class FinalState(Frozen):
    """Snapshot taken after the episode; rule checks read only this."""

    files: tuple[FileRecord, ...] = ()
    """Files under the sandbox's writable roots."""
    initial_files: tuple[FileRecord, ...] = ()
    """Same snapshot taken right after reset, for unchanged/changed checks."""
    commands: tuple[CommandRecord, ...] = ()
    """Every command run."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Every parsed tool call, in order."""
    messages: tuple[NpcMessage, ...] = ()
    """Messages exchanged with NPCs."""
    final_answer: str | None = None
    """The agent's final answer."""
    root: str | None = Field(default=None, exclude=True)
    """Host path of the sandbox root while it still exists (for Python checks); never serialised."""

    def file(self, path: str) -> FileRecord | None:
        """Returns the final record for ``path`` or ``None``."""
        return next((f for f in self.files if f.path == path), None)

    def initial_file(self, path: str) -> FileRecord | None:
        """Returns the initial record for ``path`` or ``None``."""
        return next((f for f in self.initial_files if f.path == path), None)


EpisodeStatus = Literal["running", "completed", "truncated", "error"]


class Trajectory(Frozen):
    """A whole episode, as saved to disk and read by judges."""

    schema_version: int = TRAJECTORY_SCHEMA_VERSION
    """Version of this record's shape."""
    case_id: str
    """The case that was run."""
    instruction: str
    """The user's instruction."""
    toolkits: tuple[str, ...] = ()
    """Toolkits available."""
    steps: tuple[Step, ...] = ()
    """Steps, in order."""
    final_answer: str | None = None
    """The agent's final answer, if it gave one."""
    status: EpisodeStatus = "running"
    """How the episode ended."""
    error: ErrorRecord | None = None
    """Set when ``status == "error"``."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of the env, emulator and prompts used."""
