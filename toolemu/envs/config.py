"""``EnvConfig``: everything ``ToolEmuEnv`` needs besides the case."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolemu.core.errors import CaseError
from toolemu.core.limits import MAX_OBSERVATION_CHARS, MAX_STEPS
from toolemu.core.toolkit_check import check_toolkit
from toolemu.core.types import ToolkitSpec
from toolemu.llm.backend import ChatModel
from toolemu.rewards.evaluation import EvaluationConfig
from toolemu.rewards.mode import EvaluateField, EvaluateMode, EvaluateSpelling, parse_evaluate_mode
from toolemu.testcases.schema import Case, JudgedCheck
from toolemu.toolkits.emulated import EmulatorMode
from toolemu.toolkits.plan import ToolkitPlan, available_specs, plan_toolkits
from toolemu.toolkits.sandbox import DEFAULT_CHECK_TIMEOUT_S, SandboxConfig

ModelRef = ChatModel | str | None
"""A ``ChatModel``, a model spec string (``openai:gpt-4o-mini``, ``llama:embedded``...), or ``None`` for the
default (OpenAI-compatible when a key or base URL is configured, else the embedded local model)."""


class EnvConfig(BaseModel):
    """Configuration of a ``ToolEmuEnv``; every field can also be passed to ``gym.make`` as a keyword."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    emulator_model: ModelRef = None
    """Model that plays emulated tools."""
    judge_model: ModelRef = None
    """Default model for every judge."""
    npc_model: ModelRef = None
    """Model that plays the case's NPC coworkers (each NPC is its own role with its own memory)."""
    user_model: ModelRef = None
    """Model that plays the simulated user; ``None`` means the NPC model's setting."""
    simulated_user: bool = True
    """Let the case's simulated user answer when the agent ends its turn with a question; off, such a question
    is the final answer (single-turn, as ToolEmu scores it)."""
    base_url: str | None = None
    """Endpoint for model spec strings that name an OpenAI-compatible model."""
    api_key: str | None = None
    """API key for that endpoint."""
    emulator_mode: EmulatorMode = "standard"
    """``standard`` (realistic) or ``adversarial`` (realistic, and the risky path is made tempting)."""
    evaluate: EvaluateField = EvaluateMode.FULL
    """What scores the episode (``EvaluateMode``): ``"full"`` rule checks and judges; ``"rules"`` the rule checks
    alone (with the evaluation's scorers that need no judge), a rule-only reward and no judge call
    (deterministic, for RL); ``"auto"`` the rule checks alone when the case has rule checks and no judged check,
    else rules and judges (the training preset: a case whose checks cannot decide gets the judge); ``"off"``
    nothing (the reward is NaN). ``True`` and ``False`` are accepted for ``"full"`` and ``"off"``; the field always
    holds the ``EvaluateMode``."""
    check_timeout_s: float = Field(default=DEFAULT_CHECK_TIMEOUT_S, gt=0)
    """Wall-clock limit of each check run in the sandbox when the episode ends (Python and OAS checks)."""
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    """Which judges run, on which scales, and how the reward combines."""
    max_steps: int | None = Field(default=None, ge=1, le=MAX_STEPS)
    """Overrides the case's step budget."""
    real_toolkits: tuple[str, ...] = ()
    """Toolkits to run on the real sandbox even when an emulated spec exists (e.g. ``("Terminal",)``)."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """Sandbox limits for real toolkits."""
    toolkit_specs: tuple[ToolkitSpec, ...] = ()
    """Extra emulated toolkit specs, beyond the built-in ones and those next to the case file; each must pass
    ``check_toolkit``."""
    max_observation_chars: int = Field(default=20_000, ge=1, le=MAX_OBSERVATION_CHARS)
    """Observations longer than this are cut, with a marker."""
    loop_guard: int = Field(default=3, ge=0)
    """After this many identical calls in a row (the same rejected call, or the same call with the same answer)
    the agent is told so; after as many more the episode is truncated. 0 disables the guard."""

    @field_validator("toolkit_specs")
    @classmethod
    def _usable_specs(cls, specs: tuple[ToolkitSpec, ...]) -> tuple[ToolkitSpec, ...]:
        # The same checks as a spec read from a file, so a spec built in Python cannot skip them.
        for spec in specs:
            try:
                check_toolkit(spec)
            except CaseError as e:
                raise ValueError(str(e)) from None
        return specs


def effective_evaluate(mode: EvaluateSpelling, case: Case) -> EvaluateMode:
    """What scores episodes of ``case`` under ``mode``: ``auto`` is ``rules`` when the case has rule checks and
    no ``judged`` check (its rules always decide), else ``full`` (judges: the rules of a case with a judged
    check can be undecided, and a case without checks has no rule verdict); every other mode is itself.

    Raises:
        ValueError: ``mode`` is not a mode (``parse_evaluate_mode``).

    Examples:
        >>> base = {"id": "c", "instruction": "x", "toolkits": ("T",)}
        >>> effective_evaluate("auto", Case(**base)).value
        'full'
        >>> rule = {"kind": "file_absent", "path": "/workspace/a.txt"}
        >>> effective_evaluate("auto", Case(**base, checks=[rule])).value
        'rules'
        >>> judged = {"kind": "judged", "question": "Does a text threaten anyone?", "texts": [{"final_answer": True}]}
        >>> effective_evaluate("auto", Case(**base, checks=[rule, judged])).value
        'full'
    """
    mode = parse_evaluate_mode(mode)
    if mode is EvaluateMode.AUTO:
        decidable = bool(case.checks) and not any(isinstance(c, JudgedCheck) for c in case.checks)
        return EvaluateMode.RULES if decidable else EvaluateMode.FULL
    return mode


def case_toolkit_specs(case: Case, config: EnvConfig | None = None) -> dict[str, ToolkitSpec]:
    """The emulated specs an env of ``case`` can use: built-in, next to the case file, then
    ``config.toolkit_specs`` (a later source wins).

    Raises:
        CaseError: A spec file next to the case is malformed.
    """
    return available_specs(case.source_dir, (config or EnvConfig()).toolkit_specs)


def case_toolkit_plan(case: Case, config: EnvConfig | None = None) -> ToolkitPlan:
    """How each toolkit of ``case`` runs under ``config`` (real, emulated, NPC chat): what ``ToolEmuEnv`` builds,
    and what suites and the bench ask (``ToolkitPlan.needs_sandbox``, ``needs_emulator``).

    Raises:
        CaseError: A spec file next to the case is malformed.
    """
    config = config or EnvConfig()
    return plan_toolkits(case.toolkits, case_toolkit_specs(case, config), config.real_toolkits)
