"""Scorers you can plug in: each reads an episode's capture and returns a typed verdict, under its name.

A scorer (after inspect_ai's scorers) is one object with a ``name`` (the key of its verdict in
``Evaluation.verdicts``), a ``version``, a ``role`` (how the reward reads its verdict) and ``score(case,
capture) -> Verdict``. Scorers are registered by name (after Gymnasium's registry): ``register_scorer`` once,
then ``EvaluationConfig(scorers=("name",))`` runs it from ``gym.make``, ``toolemu bench``, ``toolemu rescore``
(``--scorer name``), and its verdicts show in metrics and reports, with no other edit.

The built-in scorers are registered here too: ``rules``, ``safety_toolemu``, ``safety_oas``, ``helpfulness``,
``completion`` and ``judged_check`` (``toolemu.rewards.builtin_scorers``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Literal, Protocol, runtime_checkable

from toolemu.core.capture import Capture
from toolemu.core.errors import ConfigError
from toolemu.core.registry import Registry
from toolemu.llm.backend import ChatModel
from toolemu.rewards.evaluation_config import EvaluationConfig
from toolemu.rewards.mode import EvaluateMode, EvaluationScope
from toolemu.rewards.verdict import Verdict
from toolemu.testcases.schema import Case

ScorerRole = Literal["check", "safety", "helpfulness", "info"]
"""How the reward reads a scorer's verdict: ``check``, evidence of harm (a harm makes the episode unsafe,
whatever the judges said; in the ``rules`` mode these alone decide); ``safety``, a safety judge (the reward uses
one, ``RewardConfig.safety_from``); ``helpfulness``, the helpfulness term (``RewardConfig.helpfulness_from``);
``info``, recorded and shown in metrics only (the completion judge)."""


@runtime_checkable
class Scorer(Protocol):
    """One scorer: what it reads is the case and the episode's capture; what it returns is a ``Verdict``.

    ``score`` raises ``JudgeError`` or ``LLMBackendError`` when a judge fails (recorded at the ``judge``
    boundary) and ``CheckError`` when a rule cannot be evaluated (``check``); neither is ever a score.
    """

    name: str
    """The registered name; the key of its verdict in ``Evaluation.verdicts``."""
    version: str
    """Recorded in ``Evaluation.versions`` under ``name`` (empty: not recorded); part of run config hashes."""
    role: ScorerRole
    """How the reward reads its verdict."""

    def applies(self, case: Case) -> bool:
        """Whether the scorer has anything to score on ``case`` (the judged-check judge needs judged checks)."""
        ...

    def score(self, case: Case, capture: Capture) -> Verdict:
        """Scores one episode."""
        ...


@dataclass(frozen=True, slots=True)
class ScorerContext:
    """What a scorer is built from: the evaluation config and the judge model (``None`` in the ``rules`` mode)."""

    config: EvaluationConfig
    judge: ChatModel | None = None

    def judge_model(self, scorer: str) -> ChatModel:
        """The judge model, for a scorer that needs one.

        Raises:
            ConfigError: no judge model (a rules-only evaluation, or no model given).
        """
        if self.judge is None:
            raise ConfigError(f"scorer `{scorer}` needs a judge model: give judge_model=..., or run it in the full "
                              "evaluate mode")
        return self.judge


ScorerFactory = Callable[..., Scorer]
"""Builds a scorer: ``factory(context=ScorerContext, **defaults)``."""

SCORERS: Registry[Scorer] = Registry("scorer")
"""Scorers by name (append-only); ``register_scorer`` adds one."""
_USES_JUDGE: dict[str, bool] = {}


def register_scorer(name: str, factory: str | ScorerFactory, *, uses_judge: bool, **defaults: object) -> None:
    """Registers a scorer: ``factory(context=ScorerContext, **defaults)`` builds it (a callable, or a
    ``module:attr`` path imported on first use).

    Args:
        name: The scorer's name (its verdict's key); the built scorer's ``name`` must equal it.
        factory: The scorer's factory.
        uses_judge: Whether it calls the judge model: such a scorer runs in the ``full`` mode only (and makes
            the run resolve a judge model); one that does not also runs in the ``rules`` mode.
        **defaults: Keyword arguments for ``factory``.

    Raises:
        ConfigError: ``name`` is already registered.

    Examples:
        >>> "rules" in SCORERS and uses_judge("safety_oas") and not uses_judge("rules")
        True
    """
    SCORERS.register(name, factory, **defaults)
    _USES_JUDGE[name] = uses_judge


SCORER_ENTRY_POINTS = "toolemu.scorers"
"""Package entry-point group of scorer plugins: each entry point names a module (or object) whose import
registers its scorers, so worker processes and Ray workers find them too."""


def load_scorer_plugins() -> None:
    """Imports every ``toolemu.scorers`` entry point of the installed packages (their imports register scorers).

    Raises:
        ConfigError: a plugin failed to import (named, with the error).
    """
    for point in entry_points(group=SCORER_ENTRY_POINTS):
        try:
            point.load()
        except (ImportError, AttributeError) as e:
            raise ConfigError(f"scorer plugin `{point.name}` ({point.value}) failed to load: {e}") from e


def uses_judge(name: str) -> bool:
    """Whether the scorer ``name`` calls the judge model (a name not registered yet is looked up in the
    installed scorer plugins first).

    Raises:
        NotRegisteredError: no scorer of that name (the message suggests one).
    """
    if name not in SCORERS:
        load_scorer_plugins()
    SCORERS.entry(name)
    return _USES_JUDGE[name]


def scorer_names(config: EvaluationConfig, scope: EvaluationScope) -> tuple[str, ...]:
    """The scorers an evaluation of ``scope`` runs, in order: ``rules``, a safety judge per scale,
    ``helpfulness``, ``completion`` (when asked), ``judged_check``, ``attack_goal`` (it scores attacked cases
    only), then ``config.scorers``; the ``rules`` scope keeps those that need no judge model.

    Raises:
        NotRegisteredError: a name of ``config.scorers`` is not registered.

    Examples:
        >>> scorer_names(EvaluationConfig(safety_scales=("oas",)), "full")
        ('rules', 'safety_oas', 'helpfulness', 'judged_check', 'attack_goal')
        >>> scorer_names(EvaluationConfig(), "rules")
        ('rules', 'attack_goal')
    """
    names = ("rules", *(f"safety_{s}" for s in config.safety_scales), "helpfulness",
             *(("completion",) if config.completion else ()), "judged_check", "attack_goal", *config.scorers)
    return names if scope == "full" else tuple(n for n in names if not uses_judge(n))


def needs_judge(config: EvaluationConfig, scope: EvaluationScope) -> bool:
    """Whether an evaluation of ``scope`` under ``config`` calls a judge model."""
    return any(uses_judge(n) for n in scorer_names(config, scope))


def judge_needed(mode: EvaluateMode, config: EvaluationConfig) -> bool:
    """Whether scoring in ``mode`` calls a judge model: ``off`` never; ``rules`` only for a plugged-in scorer
    that needs one; ``full`` and ``auto`` (some case may need the judges) yes. The one rule the env, the suite
    env and a bench run resolve the judge model by."""
    if mode is EvaluateMode.OFF:
        return False
    return needs_judge(config, "rules" if mode is EvaluateMode.RULES else "full")


@dataclass(frozen=True, slots=True)
class Scorers:
    """The scorers of one evaluation, in order, and what they were built with."""

    scope: EvaluationScope
    """``rules``: the scorers that need no judge; ``full``: all of them."""
    members: tuple[Scorer, ...]
    """The scorers, in run order (their verdicts keep this order)."""
    judge_model: str | None = None
    """The judge model's name (``full`` scope)."""
    safety: str | None = None
    """The safety scorer whose verdict feeds the reward by default (the first safety scale's)."""

    def role(self, name: str) -> ScorerRole | None:
        """The role of the member called ``name``."""
        return next((s.role for s in self.members if s.name == name), None)

    def versions(self, case: Case | None = None) -> dict[str, str]:
        """``{name: version}`` of the members with a version (that apply to ``case``, when given)."""
        return {s.name: s.version for s in self.members if s.version and (case is None or s.applies(case))}


def build_scorers(config: EvaluationConfig, judge: ChatModel | None, scope: EvaluationScope) -> Scorers:
    """Builds the scorers an evaluation of ``scope`` runs (``scorer_names``).

    Raises:
        ConfigError: the ``full`` scope without a judge model, or a scorer whose ``name`` is not its registered
            name.
        NotRegisteredError: a scorer of ``config.scorers`` is not registered.
    """
    if scope == "full" and judge is None:
        raise ConfigError("a full evaluation needs a judge model; give judge_model=... or use evaluate='rules'")
    context = ScorerContext(config=config, judge=judge if scope == "full" else None)
    members = []
    for name in scorer_names(config, scope):
        scorer = SCORERS.make(name, context=context)
        if scorer.name != name:
            raise ConfigError(f"scorer registered as `{name}` calls itself `{scorer.name}`; give it name = {name!r}")
        members.append(scorer)
    safety = next((s.name for s in members if s.role == "safety"), None)
    if scope == "full":
        roles = {s.name: s.role for s in members}
        reward = config.reward
        wanted_roles: tuple[tuple[str, str, str | None], ...] = (
            ("safety_from", "safety", reward.safety_from or safety),
            ("helpfulness_from", "helpfulness", reward.helpfulness_from))
        for field, wanted, chosen in wanted_roles:
            if chosen is None or roles.get(chosen) != wanted:
                raise ConfigError(f"RewardConfig.{field}: {chosen!r} is not a {wanted} scorer of this evaluation "
                                  f"(its scorers: {', '.join(roles)})")
    return Scorers(scope=scope, members=tuple(members), judge_model=judge.name if scope == "full" and judge else None,
                   safety=safety)


_BUILTIN = "toolemu.rewards.builtin_scorers"
register_scorer("rules", f"{_BUILTIN}:rules_scorer", uses_judge=False)
register_scorer("safety_toolemu", f"{_BUILTIN}:safety_scorer", uses_judge=True, scale="toolemu")
register_scorer("safety_oas", f"{_BUILTIN}:safety_scorer", uses_judge=True, scale="oas")
register_scorer("helpfulness", f"{_BUILTIN}:helpfulness_scorer", uses_judge=True)
register_scorer("completion", f"{_BUILTIN}:completion_scorer", uses_judge=True)
register_scorer("judged_check", f"{_BUILTIN}:judged_check_scorer", uses_judge=True)
register_scorer("attack_goal", "toolemu.rewards.attack_goal:attack_goal_scorer", uses_judge=False)
