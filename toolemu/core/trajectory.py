"""Episode records: steps, the trajectory, the final-state snapshot, and error records."""

from __future__ import annotations

import traceback as _traceback
from typing import Literal

from pydantic import Field, model_validator

from toolemu.core.types import Frozen, ToolCall

TRAJECTORY_SCHEMA_VERSION = 2
"""Bumped whenever the on-disk trajectory shape changes (2: each call's ``outcome``)."""

StepKind = Literal["tool", "final", "parse_error", "tool_error", "ask_user"]
"""``ask_user``: the agent ended its turn with a question and the simulated user answered (``observation``)."""
CallOutcome = Literal["executed", "rejected", "errored"]
"""What became of a parsed tool call: the tool ran and answered (``executed``); the env refused it before
dispatch, for an unknown tool or bad arguments (``rejected``); the tool was reached but failed, with a
tool-level error the agent saw or an infra failure (``errored``)."""
Boundary = Literal["llm", "agent", "emulator", "judge", "sandbox", "check", "toolkit", "npc", "infra"]


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
    def from_exception(cls, exc: BaseException, boundary: Boundary, context: str = "") -> ErrorRecord:
        """Builds a record from a caught exception; ``context`` (what was being done) prefixes the message."""
        tb = "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
        message = str(exc) or type(exc).__name__
        return cls(type=type(exc).__name__, message=f"{context}: {message}" if context else message,
                   boundary=boundary, traceback=tb)


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
    outcome: CallOutcome | None = None
    """What became of ``tool_call`` (``None`` when there is no call); the one record of what the agent did."""
    observation: str = ""
    """What the agent saw back."""
    final_answer: str | None = None
    """The final answer, for ``kind="final"``; for ``kind="ask_user"``, the question the user answered."""
    hidden_notes: str | None = None
    """Emulator or sandbox notes; never shown to the agent."""
    screenshot: str | None = None
    """The browser's page after the step as a base64 JPEG (``BrowserConfig.screenshots``), for the viewer."""

    @model_validator(mode="before")
    @classmethod
    def _default_outcome(cls, data: object) -> object:
        # A call recorded without an outcome ran (kind "tool") or failed at the tool (kind "tool_error");
        # rejections are always recorded explicitly by the env.
        if isinstance(data, dict) and data.get("tool_call") is not None and data.get("outcome") is None:
            return {**data, "outcome": "executed" if data.get("kind") == "tool" else "errored"}
        return data

    @model_validator(mode="after")
    def _outcome_needs_call(self) -> Step:
        if self.tool_call is None and self.outcome is not None:
            raise ValueError(f"step {self.index}: outcome {self.outcome!r} without a tool call")
        return self

    @property
    def executed(self) -> bool:
        """Whether this step's call ran and answered."""
        return self.outcome == "executed"


NOT_HASHED = "not-hashed"
"""``FileRecord.sha256`` of a file left unread because the snapshot's hashing budget or time ran out."""


NOT_A_FILE = "not-a-file"
"""``ArchiveMember.sha256`` of a member that is a link, device or FIFO (recorded by name only)."""


class ArchiveMember(Frozen):
    """A file inside an archive (tar, zip, gzip) of the snapshot, read on the host within limits."""

    name: str
    """The member's path inside the archive."""
    sha256: str
    """Hex SHA-256 of its bytes; ``NOT_A_FILE`` for a link, device or FIFO member."""
    size: int
    """Its size in bytes, unpacked (0 for ``NOT_A_FILE``)."""
    content: str | None = None
    """Text content when small and decodable."""


class FileRecord(Frozen):
    """One file in the final-state snapshot."""

    path: str
    """Absolute path as seen inside the sandbox."""
    sha256: str
    """Content hash: the hex SHA-256 of the bytes; ``sparse:<hex>`` for a file with holes (see
    ``toolemu.toolkits.sandbox.snapshot``); ``partial-<n>:<hex>`` when only the first n bytes were read;
    ``NOT_HASHED`` when the snapshot's hashing budget was spent (then ``FinalState.snapshot_overflow`` is set)."""
    size: int
    """Size in bytes."""
    content: str | None = None
    """Text content when small and decodable, else ``None``."""
    mode: int | None = None
    """Permission bits (``st_mode & 0o7777``) of a regular file; ``None`` for links and older snapshots."""
    members: tuple[ArchiveMember, ...] = ()
    """The members of an archive file (tar, tar.gz, zip, gz), so a check sees what was packed into it."""


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
    """Snapshot of the world taken after the episode; with the trajectory, all that declarative checks read.

    What the agent did (its calls and final answer) lives only in the ``Trajectory``; this holds the state
    those actions left behind. It carries no host path: it is complete on its own, saved and re-scored later.
    """

    files: tuple[FileRecord, ...] = ()
    """Files under the sandbox's writable roots."""
    initial_files: tuple[FileRecord, ...] = ()
    """Same snapshot taken right after reset, for unchanged/changed checks."""
    commands: tuple[CommandRecord, ...] = ()
    """Every command run."""
    messages: tuple[NpcMessage, ...] = ()
    """Messages exchanged with NPCs."""
    snapshot_overflow: str | None = None
    """Why ``files`` is incomplete (file cap, hashing budget, time limit, depth, unreadable folders), or
    ``None`` when it is complete. A check that would read a path the snapshot may have left out, or a
    ``NOT_HASHED`` file, is an error, never "absent" or "unchanged"."""

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

    def calls(self, *, attempted: bool = False) -> tuple[ToolCall, ...]:
        """The calls that executed, in order; with ``attempted``, every parsed call (rejected, errored too)."""
        return tuple(
            s.tool_call for s in self.steps if s.tool_call is not None and (attempted or s.executed)
        )
