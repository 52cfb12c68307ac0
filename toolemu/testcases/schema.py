"""The ``Case`` schema: one safety test case, with its rule checks and reference runs."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator
from pydantic_core import PydanticCustomError

# The people of a case live in core (the chat toolkit plays them); re-exported here with the rest of the schema.
from toolemu.core.people import NpcIntent as NpcIntent
from toolemu.core.people import NpcSpec as NpcSpec
from toolemu.core.people import Pushiness as Pushiness
from toolemu.core.people import UserSpec as UserSpec
from toolemu.core.types import EmulationContext, EnvironmentSpec, Frozen, ToolCall
from toolemu.services.standins import STANDINS
from toolemu.testcases.attack_types import AppliedAttack
from toolemu.testcases.check_types import (  # re-exported: the check kinds are part of the case schema
    ArgCondition as ArgCondition,
)
from toolemu.testcases.check_types import (
    Channel as Channel,
)
from toolemu.testcases.check_types import (
    Check as Check,
)
from toolemu.testcases.check_types import (
    CommandRunCheck as CommandRunCheck,
)
from toolemu.testcases.check_types import (
    CommandSpec as CommandSpec,
)
from toolemu.testcases.check_types import (
    FileAbsentCheck as FileAbsentCheck,
)
from toolemu.testcases.check_types import (
    FileChangedCheck as FileChangedCheck,
)
from toolemu.testcases.check_types import (
    FileContainsCheck as FileContainsCheck,
)
from toolemu.testcases.check_types import (
    FileCopiedCheck as FileCopiedCheck,
)
from toolemu.testcases.check_types import (
    FileDestroyedCheck as FileDestroyedCheck,
)
from toolemu.testcases.check_types import (
    FileExistsCheck as FileExistsCheck,
)
from toolemu.testcases.check_types import (
    FileUnchangedCheck as FileUnchangedCheck,
)
from toolemu.testcases.check_types import (
    FileWrittenCheck as FileWrittenCheck,
)
from toolemu.testcases.check_types import (
    FinalAnswerCheck as FinalAnswerCheck,
)
from toolemu.testcases.check_types import (
    JobScheduledCheck as JobScheduledCheck,
)
from toolemu.testcases.check_types import (
    JudgedCheck as JudgedCheck,
)
from toolemu.testcases.check_types import (
    JudgedExample as JudgedExample,
)
from toolemu.testcases.check_types import (
    MessageSentCheck as MessageSentCheck,
)
from toolemu.testcases.check_types import (
    ModeChangedCheck as ModeChangedCheck,
)
from toolemu.testcases.check_types import (
    ProtectedValue as ProtectedValue,
)
from toolemu.testcases.check_types import (
    PythonCheck as PythonCheck,
)
from toolemu.testcases.check_types import (
    ServiceStateCheck as ServiceStateCheck,
)
from toolemu.testcases.check_types import (
    ToolCalledCheck as ToolCalledCheck,
)
from toolemu.testcases.check_types import (
    ValueLeakedCheck as ValueLeakedCheck,
)

ServiceName = Literal["owncloud", "gitlab", "plane"]
"""A company web service a case may need (``toolemu.core.types.SERVICE_NAMES``)."""
SERVICES: tuple[ServiceName, ...] = ("owncloud", "gitlab", "plane")
"""Every ``ServiceName``, in the order reports list them."""


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


ProbeStyle = Literal[
    "refusal", "safe_alternative", "partial", "equivalent_route", "reformatted_value", "paraphrase"
]
"""How a probe run tests a case's checks: a refusal naming the dangerous thing, a safe alternative through the
same tools, partial compliance, the harm by an equivalent route, the harmful value reformatted, or the harm
without its obvious words."""


class ProbeRun(ReferenceRun):
    """A run written from the case's story apart from its checks (a refusal, an equivalent route...), labelled
    from the instruction and unsafe-behaviour text alone; replayed like the reference runs."""

    style: ProbeStyle


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
    services: tuple[ServiceName, ...] = ()
    """The company web services the case needs (``owncloud``, ``gitlab``, ``plane``): emulated, started beside the
    sandbox for each episode (``toolemu.services``)."""
    protected_values: tuple[ProtectedValue, ...] = ()
    """Secrets and identifiers that must not leave (named by ``value_leaked`` and ``contains_value``)."""
    equivalent_tools: tuple[tuple[str, ...], ...] = ()
    """Groups of tools with the same effect (a refund and a payout tool, send and forward): a ``tool_called``
    check or a ``tool`` channel on one of a group counts calls of every tool in it."""
    checks: tuple[Check, ...] = ()
    """Rule checks: acts, state, protected values; ``judged`` checks for content harms."""
    max_steps: StrictInt | None = Field(default=None, ge=1)
    """Step budget; ``None`` means 15 for emulated-only cases and 30 with real toolkits."""
    reference_runs: tuple[ReferenceRun, ...] = ()
    """Scripted safe and unsafe runs."""
    probe_runs: tuple[ProbeRun, ...] = ()
    """Runs written from the story apart from the checks (refusals, equivalent routes, reformatted values...);
    replayed with the reference runs."""
    attack: AppliedAttack | None = None
    """Set on an attacked case (``toolemu.attacks.apply_attack``): the attack planted in its episodes, whose goal
    is scored apart from ``checks`` (the ``attack_goal`` scorer). Never shown to the agent."""
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

    @model_validator(mode="after")
    def _names_resolve(self) -> Case:
        ids = [v.id for v in self.protected_values]
        if len(set(ids)) != len(ids):
            raise ValueError(f"protected_values: duplicate id in {ids}")
        known = set(ids)
        for index, check in enumerate(self.checks):
            for name in _value_refs(check):
                if name not in known:
                    raise ValueError(f"checks[{index}]: unknown protected value `{name}`; declare it under "
                                     f"protected_values (known: {sorted(known) or 'none'})")
        for group in self.equivalent_tools:
            if len(group) < 2:
                raise ValueError(f"equivalent_tools: a group needs at least two tools, got {list(group)}")
        if len(set(self.services)) != len(self.services):
            raise ValueError(f"services: a service is listed twice in {list(self.services)}")
        for index, item in enumerate(self.environment.service_files):
            if item.standin is not None and item.standin not in STANDINS:
                raise ValueError(f"environment.service_files[{index}] ({item.path}): stand-in `{item.standin}` is not "
                                 f"known; known: {', '.join(sorted(STANDINS))}")
            if item.service not in self.services:
                raise ValueError(f"environment.service_files[{index}] ({item.path}): service `{item.service}` is not "
                                 f"in the case's services {list(self.services)}; add it there")
        for index, check in enumerate(self.checks):
            if isinstance(check, ServiceStateCheck) and check.service not in self.services:
                raise ValueError(f"checks[{index}]: service_state reads {check.service}, which is not in the case's "
                                 f"services {list(self.services)}; add it there")
        if self.environment.service_setup and not self.services:
            raise ValueError("environment.service_setup: setup scripts need services; list them under `services`")
        return self

    def equivalents(self, tool: str) -> frozenset[str]:
        """``tool`` and every tool declared equivalent to it."""
        out = {tool}
        for group in self.equivalent_tools:
            if tool in group:
                out.update(group)
        return frozenset(out)

    @property
    def all_runs(self) -> tuple[ReferenceRun, ...]:
        """The reference runs, then the probe runs."""
        return (*self.reference_runs, *self.probe_runs)

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


def _value_refs(check: Check) -> list[str]:
    """The protected value ids a check names."""
    if isinstance(check, FileWrittenCheck | FileContainsCheck):
        return [check.contains_value] if check.contains_value else []
    conditions = list(check.where.values()) if isinstance(check, ToolCalledCheck | ServiceStateCheck) else []
    if isinstance(check, ValueLeakedCheck | JudgedCheck):
        channels = check.via if isinstance(check, ValueLeakedCheck) else check.texts
        conditions += [c for channel in channels for c in channel.where.values()]
    refs = list(check.values) if isinstance(check, ValueLeakedCheck) else []
    return refs + [c.contains_value for c in conditions if c.contains_value]
