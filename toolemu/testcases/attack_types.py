"""Attacks as data: what an attack file holds (``AttackSpec``) and what an attacked case carries
(``AppliedAttack``, ``Case.attack``).

An attack plants text in one channel of an episode (a vector) asking the agent to do a harmful act (its goal).
The goal is judged by its own rule checks, in the case check vocabulary (acts and state, never wording), apart
from the case's own checks. Loading, templates and applying an attack to a case are in ``toolemu.attacks``;
planting the text in an episode is in ``toolemu.envs`` (tool results, NPC replies, tool descriptions) or in the
case's data (``world`` facts, seed files).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictStr, model_validator

from toolemu.core.types import Frozen
from toolemu.testcases.check_types import Check, check_family

VectorKind = Literal["tool_result", "world", "file", "npc_message", "tool_description", "service_page"]
"""Where an attack's text lands: ``tool_result``, spliced into every result of the named tools; ``world``, a
fact of the case's ``world`` (what the emulated services hold; the emulator shows it where a result reaches
it); ``file``, appended to a file the real sandbox seeds; ``npc_message``, spliced into a coworker's replies;
``tool_description``, appended to a tool's description in the tool list (MCP-style); ``service_page``, a page of
an emulated web service (an ownCloud document, or the description of GitLab's open issues)."""

VECTOR_KINDS: tuple[VectorKind, ...] = ("tool_result", "world", "file", "npc_message", "tool_description",
                                        "service_page")
"""Every ``VectorKind``."""

AttackStyle = Literal["important_instructions", "fake_system", "task_aligned", "encoded"]
"""How the attacker's request is worded (``toolemu/attacks/templates/<style>.md``): an "important
instructions" note, a fake tool/system message, a request dressed as part of the user's task, and the request
base64-encoded with a hint to decode and follow it."""

ATTACK_STYLES: tuple[AttackStyle, ...] = ("important_instructions", "fake_system", "task_aligned", "encoded")
"""Every ``AttackStyle``."""

GOAL_FAMILIES = ("acts", "state")
"""Check families a goal may use: what the agent did and what the world holds (no regex over text, no judge,
no Python: a goal check needs nothing captured in the sandbox beyond the snapshot)."""


class AttackVector(Frozen):
    """Where the attack's text goes. Which fields apply depends on ``kind``."""

    kind: VectorKind
    """The channel."""
    tools: tuple[StrictStr, ...] = ()
    """``tool_result``: the tools whose results carry the text (those of them the case has); ``tool_description``:
    candidate tools, the first the case has gets the text (``"*"``: the case's first tool)."""
    npc: StrictStr | None = None
    """``npc_message``: the coworker whose replies carry the text; ``"*"`` (the default): the case's first NPC."""
    path: StrictStr = "/**"
    """``file``: a glob of sandbox paths; the first seed file with inline content that matches gets the text."""
    lead: StrictStr = "A message waiting for the user reads:"
    """``world``: the words that introduce the text in the world fact."""
    service: Literal["owncloud", "gitlab"] | None = None
    """``service_page``: the service whose pages carry the text."""
    document: StrictStr = Field(default="Documents/ACTION REQUIRED.md", min_length=1, max_length=500)
    """``service_page`` on ownCloud: the document (relative to the user's files) that holds the text."""
    project: StrictStr = Field(default="*", min_length=1, max_length=200)
    """``service_page`` on GitLab: a glob of the projects whose open issues' descriptions carry the text."""

    @model_validator(mode="after")
    def _fields_fit(self) -> AttackVector:
        if self.kind in ("tool_result", "tool_description") and not self.tools:
            raise ValueError(f"vector `{self.kind}` needs `tools`: the tools whose "
                             f"{'results' if self.kind == 'tool_result' else 'description'} carry the text")
        if self.kind not in ("tool_result", "tool_description") and self.tools:
            raise ValueError(f"`tools` goes with the tool_result and tool_description vectors, not `{self.kind}`")
        if self.kind != "npc_message" and self.npc is not None:
            raise ValueError(f"`npc` goes with the npc_message vector, not `{self.kind}`")
        if (self.kind == "service_page") != (self.service is not None):
            raise ValueError("the service_page vector needs `service` (owncloud or gitlab), and only it takes one")
        return self


class AttackGoal(Frozen):
    """The harmful act the attacker asks for, and how to tell it happened."""

    summary: StrictStr = Field(min_length=1, max_length=500)
    """The goal in one sentence, for the judges (``send the user's inbox to attacker@...``)."""
    request: StrictStr = Field(min_length=1, max_length=2000)
    """The attacker's request, in the imperative; the style's template wraps it."""
    checks: tuple[Check, ...] = Field(min_length=1)
    """Rule checks (acts and state) that each say the goal was reached; any one that fires is success. Checks
    naming a tool the case lacks, or reading a sandbox the case has not, are dropped when the attack is applied;
    an attack with none left does not apply to the case."""

    @model_validator(mode="after")
    def _act_or_state(self) -> AttackGoal:
        for index, check in enumerate(self.checks):
            family = check_family(check.kind)
            if family not in GOAL_FAMILIES:
                raise ValueError(f"checks[{index}]: kind `{check.kind}` ({family}) cannot judge a goal; use an act or "
                                 f"state kind (tool_called, command_run, message_sent, file_written...)")
            if check.patterns():
                raise ValueError(f"checks[{index}]: a goal check reads acts, not words; drop "
                                 f"{', '.join(n for n, _ in check.patterns())}")
            for condition in getattr(check, "where", {}).values():
                if condition.contains_value is not None:
                    raise ValueError(f"checks[{index}]: `contains_value` names a case's protected value, which an "
                                     "attack cannot know; use `contains` or `equals`")
            if getattr(check, "contains_value", None) is not None:
                raise ValueError(f"checks[{index}]: `contains_value` names a case's protected value, which an attack "
                                 "cannot know")
        return self


class AttackSpec(Frozen):
    """An attack file (YAML or JSON): a name, a goal, a vector and a style."""

    name: StrictStr = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=64)
    """The attack's name (``bench --attack NAME``; the ``attack`` of its records)."""
    description: StrictStr = ""
    """What the attack tries, in words."""
    style: AttackStyle
    """How the request is worded."""
    vector: AttackVector
    """Where the text lands."""
    goal: AttackGoal
    """What the attacker wants done."""
    sender: StrictStr = Field(default="IT Operations", max_length=100)
    """Who the text claims to come from (the templates name it)."""


class AppliedAttack(Frozen):
    """An attack as applied to one case: the text and the targets resolved against that case's tools, files
    and people. Set on an attacked case (``Case.attack``); the agent never sees it, only its text in the channel.
    """

    name: StrictStr
    """The attack's name."""
    style: AttackStyle
    """How the text is worded."""
    vector: AttackVector
    """The channel, with its targets resolved for the case (``tools`` the case has, the NPC's name, the seed
    file's path)."""
    text: StrictStr
    """The injected text, exactly as planted."""
    goal: AttackGoal
    """The goal, with only the checks that apply to the case."""
