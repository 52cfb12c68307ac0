"""The ``Case`` schema: one safety test case, with its rule checks and reference runs (DESIGN.md §3)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator
from pydantic_core import PydanticCustomError

# The people of a case live in core (the chat toolkit plays them); re-exported here with the rest of the schema.
from toolemu.core.people import NpcIntent as NpcIntent
from toolemu.core.people import NpcSpec as NpcSpec
from toolemu.core.people import Pushiness as Pushiness
from toolemu.core.people import UserSpec as UserSpec
from toolemu.core.types import EmulationContext, EnvironmentSpec, Frozen, ToolCall


class RiskCategory(StrEnum):
    """OpenAgentSafety's eight risk categories."""

    COMPUTER_SECURITY = "computer_security_compromise"
    DATA_LOSS = "data_loss_or_corruption"
    PRIVACY = "privacy_breach"
    UNSAFE_CODE = "unsafe_code_execution"
    FINANCIAL_LOSS = "financial_loss"
    MALICIOUS_CONTENT = "spreading_malicious_content"
    LEGAL = "legal_violations"
    HARMFUL_DECISION = "harmful_decision_making"


class Intent(StrEnum):
    """Who pushes toward harm."""

    BENIGN = "benign_user"
    MALICIOUS_NPC = "benign_user_malicious_npc"
    MALICIOUS_USER = "malicious_user"


class Underspecifications(Frozen):
    """What the user left out of the instruction."""

    task_information: tuple[str, ...] = ()
    """Missing task details the agent should ask about or look up."""
    safety_constraints: tuple[str, ...] = ()
    """Unstated safety constraints the agent should respect anyway."""


class _Check(Frozen):
    id: str | None = None
    """Name shown in results; defaults to ``<kind>[<index>]``."""
    description: str = ""
    """What the check means, in words."""
    negate: StrictBool = False
    """Report unsafe when the condition does NOT hold."""


class FileExistsCheck(_Check):
    """Unsafe when ``path`` exists at the end."""

    kind: Literal["file_exists"] = "file_exists"
    path: str


class FileAbsentCheck(_Check):
    """Unsafe when ``path`` is gone at the end (a file, or every file under a folder)."""

    kind: Literal["file_absent"] = "file_absent"
    path: str


class FileContainsCheck(_Check):
    """Unsafe when the final content of ``path`` matches the regex ``pattern``."""

    kind: Literal["file_contains"] = "file_contains"
    path: str
    pattern: str


class FileUnchangedCheck(_Check):
    """Unsafe when ``path`` has the same hash as at reset."""

    kind: Literal["file_unchanged"] = "file_unchanged"
    path: str


class FileChangedCheck(_Check):
    """Unsafe when ``path`` differs from reset (modified or deleted)."""

    kind: Literal["file_changed"] = "file_changed"
    path: str


class CommandRunCheck(_Check):
    """Unsafe when a command matching the regex ``pattern`` was run."""

    kind: Literal["command_run"] = "command_run"
    pattern: str


class ToolCalledCheck(_Check):
    """Unsafe when ``tool`` ran with arguments whose canonical JSON matches ``args_pattern``.

    Only executed calls count; ``attempted: true`` also counts calls the env rejected (unknown tool, bad
    arguments) or the tool failed, for cases where trying is already the harm.
    """

    kind: Literal["tool_called"] = "tool_called"
    tool: str
    args_pattern: str | None = None
    attempted: StrictBool = False


class MessageSentCheck(_Check):
    """Unsafe when the agent sent an NPC (``npc`` or anyone) a message matching ``pattern``."""

    kind: Literal["message_sent"] = "message_sent"
    npc: str | None = None
    pattern: str


class FinalAnswerCheck(_Check):
    """Unsafe when the final answer matches ``pattern``."""

    kind: Literal["final_answer_matches"] = "final_answer_matches"
    pattern: str


class PythonCheck(_Check):
    """A Python check in a file next to the case.

    ``api="native"``: ``function(final_state) -> bool`` (True = unsafe).
    ``api="oas"``: an OpenAgentSafety ``utils/evaluator.py``; ``grade_checkpoints(trajectory)`` returns a
    ``Result`` and any checkpoint with result > 0 means unsafe.
    """

    kind: Literal["python"] = "python"
    path: str
    function: str = "check"
    api: Literal["native", "oas"] = "native"
    tampering: Literal["error", "unsafe"] = "error"
    """What a check that the agent's tampering stopped (a file made unreadable, a FIFO or a ``/dev/zero`` link
    where the check reads, a timeout while such a trap is in place) counts as: ``error`` (the default; the
    episode has no rule verdict unless another check proves harm) or ``unsafe`` (the case says tampering with
    what it checks is itself harm). Never safe."""


Check = Annotated[
    FileExistsCheck
    | FileAbsentCheck
    | FileContainsCheck
    | FileUnchangedCheck
    | FileChangedCheck
    | CommandRunCheck
    | ToolCalledCheck
    | MessageSentCheck
    | FinalAnswerCheck
    | PythonCheck,
    Field(discriminator="kind"),
]


class ReferenceRun(Frozen):
    """A scripted trajectory with its known label; rule checks must classify it correctly."""

    label: Literal["safe", "unsafe"]
    """Ground truth for this run."""
    actions: tuple[str | ToolCall, ...]
    """Agent outputs in order: ReAct/JSON text, or tool calls. The last should be a final answer."""
    description: str = ""
    """What this run does."""
    helpful: StrictBool | None = None
    """Whether the run does what the user legitimately asked. ``None`` (unstated): a safe run counts as helpful.
    ``false`` on a safe run marks an over-refusal (safe but unhelpful), e.g. refusing a benign twin."""

    @property
    def is_helpful(self) -> bool:
        """``helpful`` with its default: a safe run is helpful unless marked otherwise; an unsafe one is not."""
        return self.helpful if self.helpful is not None else self.label == "safe"


class Case(Frozen):
    """One safety test case."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Unique slug."""
    title: str = ""
    """Short human title."""
    instruction: str
    """What the user asks the agent."""
    toolkits: tuple[str, ...]
    """Toolkit ids, each an emulated spec or a real toolkit."""
    risk_category: RiskCategory | None = None
    """Main risk category."""
    intent: Intent | None = None
    """Who pushes toward harm."""
    tags: tuple[str, ...] = ()
    """Free labels (tool types, source); a benign twin carries ``benign-twin``."""
    variant_of: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Set on a variant: the id of its seed case (the variant's id is ``<seed>--v<N>``, N >= 2)."""
    twin_of: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Set on a benign twin: the id of the case it is the twin of (the twin's id is ``<that id>--twin``): the
    same task without the risky element, with that case's risk category and intent ``benign_user``."""
    underspecifications: Underspecifications = Underspecifications()
    """What the user left out."""
    expected_achievements: tuple[str, ...] = ()
    """What a helpful agent achieves; read by the helpfulness judge."""
    risky_outcomes: tuple[str, ...] = ()
    """Harms that could result."""
    risky_actions: tuple[str, ...] = ()
    """Actions that would cause them."""
    unsafe_behavior: str = ""
    """One paragraph for the safety judge: what counts as unsafe here."""
    environment: EnvironmentSpec = EnvironmentSpec()
    """Initial files and variables for real toolkits."""
    world: tuple[str, ...] = ()
    """What the emulated services hold that the case turns on (an e-mail's text, an invite's notes, a ticket),
    one fact per item: the emulator keeps its results consistent with these in every mode, so content planted in
    the environment is there without red-teaming. The agent learns them only through tool results."""
    npcs: tuple[NpcSpec, ...] = ()
    """Simulated coworkers."""
    user: UserSpec | None = None
    """Simulated user."""
    services: tuple[str, ...] = ()
    """External services the case needs (owncloud, gitlab, ...); cases needing any cannot run here."""
    checks: tuple[Check, ...] = ()
    """Rule checks of the final state."""
    max_steps: StrictInt | None = Field(default=None, ge=1)
    """Step budget; ``None`` means 15 for emulated-only cases and 30 with real toolkits."""
    reference_runs: tuple[ReferenceRun, ...] = ()
    """Scripted safe and unsafe runs."""
    source_dir: str | None = None
    """Folder the case was loaded from (for ``PythonCheck`` and seed files); set by the loader."""
    source_file: str | None = None
    """The file the case was loaded from (``file[2]`` for the third case of a list); set by the loader, for
    messages."""

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_are_a_list(cls, value: object) -> object:
        # A string would become a tuple of letters in other readers, and a set has no stable order (the case's
        # hash, and so resume, would differ per process).
        if not isinstance(value, list | tuple):
            raise PydanticCustomError(
                "tags_list", "{kind} is not a list; write `tags: [a, b]`", {"kind": type(value).__name__}
            )
        return value

    def emulation_context(self) -> EmulationContext:
        """Returns what the tool emulator may know of this case (never its checks or grading text)."""
        return EmulationContext(
            instruction=self.instruction,
            world=self.world,
            underspecified_task_information=self.underspecifications.task_information,
            underspecified_safety_constraints=self.underspecifications.safety_constraints,
            risky_actions=self.risky_actions,
            risky_outcomes=self.risky_outcomes,
        )
