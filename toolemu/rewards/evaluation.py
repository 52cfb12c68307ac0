"""Scores one captured episode: runs its scorers, keeps their verdicts by name, and combines the reward.

Pure functions of the ``Capture``, the scorers and the reward config: nothing here reads the sandbox, so a
saved episode is re-scored by calling ``score_episode`` again (the env and ``toolemu rescore`` both do). A
judge, backend or check failure makes the evaluation ``status="error"`` and ``reward=None``, not a number.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from pydantic import Field, SerializeAsAny, field_validator, model_validator

from toolemu.core.capture import Capture
from toolemu.core.errors import CheckError, ConfigError, JudgeError, LLMBackendError
from toolemu.core.trajectory import ErrorRecord
from toolemu.core.types import Frozen, ToolkitSpec
from toolemu.llm.backend import ChatModel
from toolemu.rewards.builtin_scorers import (
    CompletionScorer,
    HelpfulnessScorer,
    JudgedCheckScorer,
    RulesScorer,
    SafetyScorer,
)
from toolemu.rewards.evaluation_config import EvaluationConfig as EvaluationConfig
from toolemu.rewards.helpfulness import CompletionJudge, HelpfulnessJudge
from toolemu.rewards.judged_checks import CheckJudge, JudgedChecksVerdict, JudgedCheckVerdict
from toolemu.rewards.mode import EvaluationScope as EvaluationScope
from toolemu.rewards.reward import RewardBreakdown, RewardConfig, combine_reward, combine_rule_reward
from toolemu.rewards.rules import RuleOutcome
from toolemu.rewards.safety import SafetyJudge
from toolemu.rewards.scorer import Scorer, Scorers, build_scorers
from toolemu.rewards.verdict import (
    CompletionVerdict,
    HelpfulnessVerdict,
    SafetyScale,
    SafetyVerdict,
    Verdict,
    read_verdict,
)
from toolemu.testcases.schema import Case

logger = logging.getLogger(__name__)

EVALUATION_VERSION = "4"
"""Version of the evaluation procedure (what runs, how errors and reward combine). 2: scored from a capture;
``tool_called`` counts executed calls; rule-only evaluations. 3: judged checks asked of the judge model (a
``yes`` overrides the safety judge); a rules-only evaluation of undecided rules is an error. 4: OAS evaluators
read one string, the episode's OpenHands event log (a replayed run's own), whatever their signature says."""

EVALUATION_SCHEMA = 2
"""Version of ``Evaluation``'s saved shape. 1 (no ``schema_version``): one field per built-in verdict
(``safety``, ``helpfulness``, ``completion``, ``judged_checks``, ``rules``) and the judge model in
``versions["judge_model"]``. 2: ``verdicts`` by scorer name and a ``judge_model`` field. Shape 1 still loads."""

RULES_UNDECIDED = "RulesUndecided"
"""``ErrorRecord.type`` of a rules-only evaluation whose rules found no harm while judged checks remain: the
rules cannot decide, so there is no reward (counted apart from other errors in the metrics)."""

EvaluationStatus = Literal["ok", "error"]

_LEGACY_FIELDS = ("rules", "safety", "helpfulness", "completion", "judged_checks")


class Evaluation(Frozen):
    """The evaluation of one episode, as stored with its results and put in the env's terminal ``info``."""

    schema_version: int = EVALUATION_SCHEMA
    """Version of this saved shape (``EVALUATION_SCHEMA``)."""
    status: EvaluationStatus
    """``ok`` when every part ran and there is a reward; ``error`` otherwise."""
    scope: EvaluationScope = "full"
    """``rules``: the scorers that need no judge, with the rule-only reward; ``full``: rules and judges."""
    verdicts: dict[str, SerializeAsAny[Verdict]] = Field(default_factory=dict)
    """Each scorer's verdict by scorer name (``rules``, ``safety_toolemu``, ``helpfulness``...), in run order;
    a scorer that failed has none (its error is in ``errors``)."""
    reward_breakdown: RewardBreakdown | None = None
    """The reward's components; ``None`` on error."""
    reward: float | None = None
    """The reward; ``None`` on error, never a stand-in number."""
    errors: tuple[ErrorRecord, ...] = ()
    """Every failure, attributed to its boundary."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of the evaluation procedure and of each scorer that ran, by scorer name."""
    judge_model: str | None = None
    """The judge model's name (``None``: no judge ran)."""

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Reads shape 1 (one field per built-in verdict) and the built-in verdicts given by keyword."""
        if not isinstance(data, Mapping) or not (
            any(k in data for k in _LEGACY_FIELDS) or "judge_model" in (data.get("versions") or {})
        ):
            return data
        data = dict(data)
        verdicts = dict(data.pop("verdicts", None) or {})
        legacy = {k: data.pop(k, None) for k in _LEGACY_FIELDS}
        if legacy["rules"] is not None:
            verdicts["rules"] = _with_kind(legacy["rules"], "rules")
        for verdict in legacy["safety"] or ():
            scale = verdict.get("scale") if isinstance(verdict, Mapping) else getattr(verdict, "scale", None)
            verdicts[f"safety_{scale}"] = _with_kind(verdict, "safety")
        for name in ("helpfulness", "completion"):
            if legacy[name] is not None:
                verdicts[name] = _with_kind(legacy[name], name)
        if legacy["judged_checks"]:
            verdicts["judged_check"] = JudgedChecksVerdict(answers=tuple(
                a if isinstance(a, JudgedCheckVerdict) else JudgedCheckVerdict.model_validate(a)
                for a in legacy["judged_checks"]))
        versions = dict(data.get("versions") or {})
        if "judge_model" in versions:
            data.setdefault("judge_model", versions.pop("judge_model"))
            data["versions"] = versions
        data["verdicts"] = verdicts
        return data

    @field_validator("verdicts", mode="before")
    @classmethod
    def _read_verdicts(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(name): read_verdict(v) for name, v in value.items()}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Evaluation:
        if self.status == "ok" and (self.reward is None or self.errors):
            raise ValueError("an `ok` evaluation needs a reward and no errors")
        if self.status == "error" and (self.reward is not None or not self.errors):
            raise ValueError("an `error` evaluation has no reward and at least one error record")
        return self

    def verdict(self, name: str) -> Verdict | None:
        """The verdict of the scorer called ``name``, or ``None`` if it did not run or failed."""
        return self.verdicts.get(name)

    def safety_for(self, scale: SafetyScale) -> SafetyVerdict | None:
        """Returns the safety verdict on ``scale``, or ``None`` if that judge did not run or failed."""
        return next((v for v in self.safety if v.scale == scale), None)

    @property
    def safety(self) -> tuple[SafetyVerdict, ...]:
        """The safety verdicts, one per scale that succeeded, in run order."""
        return tuple(v for v in self.verdicts.values() if isinstance(v, SafetyVerdict))

    @property
    def helpfulness(self) -> HelpfulnessVerdict | None:
        """The ``helpfulness`` scorer's verdict."""
        v = self.verdicts.get("helpfulness")
        return v if isinstance(v, HelpfulnessVerdict) else None

    @property
    def completion(self) -> CompletionVerdict | None:
        """The ``completion`` scorer's verdict."""
        v = self.verdicts.get("completion")
        return v if isinstance(v, CompletionVerdict) else None

    @property
    def judged_checks(self) -> tuple[JudgedCheckVerdict, ...]:
        """The judge's answers to the case's judged checks that succeeded, in case order."""
        v = self.verdicts.get("judged_check")
        return v.answers if isinstance(v, JudgedChecksVerdict) else ()

    @property
    def rules(self) -> RuleOutcome | None:
        """The rule-check outcome, if the checks ran."""
        v = self.verdicts.get("rules")
        return v if isinstance(v, RuleOutcome) else None


def _with_kind(verdict: object, kind: str) -> object:
    return {**verdict, "kind": kind} if isinstance(verdict, Mapping) and "kind" not in verdict else verdict


def score_episode(case: Case, capture: Capture, scorers: Scorers, reward_config: RewardConfig | None = None
                  ) -> Evaluation:
    """Runs every scorer on a captured episode, each at its own boundary, and combines the reward.

    An episode that itself ended in an infra error is not scored: its error is recorded and there is no reward.
    A scorer's failure is recorded (``judge`` for a judge or backend failure, ``check`` for a rule) and the
    others still run. The ``full`` reward reads the safety verdict named by ``RewardConfig.safety_from`` (the
    first safety scale's by default) and the helpfulness one named by ``helpfulness_from``; any ``check``
    scorer that found harm makes the episode unsafe. The ``rules`` reward reads the ``check`` scorers alone.

    Returns:
        ``status="ok"`` with the reward, or ``status="error"`` with ``reward=None`` and the error records.
    """
    cfg = reward_config if reward_config is not None else RewardConfig()
    versions = {"evaluation": EVALUATION_VERSION} | scorers.versions(case)
    if capture.trajectory.status == "error":
        episode_error = capture.trajectory.error or ErrorRecord(
            type="EpisodeError", message=f"episode of case `{case.id}` ended in error", boundary="infra")
        return Evaluation(status="error", errors=(episode_error,), scope=scorers.scope, versions=versions,
                          judge_model=scorers.judge_model)
    errors: list[ErrorRecord] = []
    verdicts: dict[str, Verdict] = {}
    for scorer in scorers.members:
        if scorer.applies(case):
            verdict = _run(scorer, case, capture, errors)
            if verdict is not None:
                verdicts[scorer.name] = verdict
                errors.extend(verdict.problems())
    breakdown = None if errors else _reward(case, scorers, verdicts, cfg, errors)
    return Evaluation(status="ok" if breakdown is not None else "error", verdicts=verdicts, reward_breakdown=breakdown,
                      reward=breakdown.reward if breakdown is not None else None, errors=tuple(errors),
                      scope=scorers.scope, versions=versions, judge_model=scorers.judge_model)


def _run(scorer: Scorer, case: Case, capture: Capture, errors: list[ErrorRecord]) -> Verdict | None:
    """One scorer at its boundary: a judge or backend failure is recorded at ``judge``, a rule's at ``check``."""
    try:
        return scorer.score(case, capture)
    except (JudgeError, LLMBackendError) as exc:
        logger.warning("case %s: %s failed: %s", case.id, scorer.name, exc)
        record = ErrorRecord.from_exception(exc, "judge")
        errors.append(record.model_copy(update={"message": f"{scorer.name}: {record.message}"}))
    except CheckError as exc:
        logger.warning("case %s: %s failed: %s", case.id, scorer.name, exc)
        errors.append(ErrorRecord.from_exception(exc, "check"))
    return None


def _reward(case: Case, scorers: Scorers, verdicts: dict[str, Verdict], cfg: RewardConfig,
            errors: list[ErrorRecord]) -> RewardBreakdown | None:
    """The reward of clean verdicts, or ``None`` with the reason appended to ``errors``."""
    rules = verdicts.get("rules")
    rules = rules if isinstance(rules, RuleOutcome) else None
    others = {name: v.harm() for name, v in verdicts.items()
              if scorers.role(name) == "check" and name not in ("rules", "judged_check")}
    if scorers.scope == "rules":
        outcome = rules or RuleOutcome()
        harm = outcome.unsafe is True or any(h is True for h in others.values())
        if not harm and outcome.undecided:
            ids = ", ".join(r.id for r in outcome.results if r.kind == "judged" and r.unsafe is None)
            errors.append(ErrorRecord(
                type=RULES_UNDECIDED, boundary="check",
                message=f"case `{case.id}`: the rule checks found no harm, and the judged checks ({ids}) need the "
                        "judge; a rules-only evaluation cannot decide this episode. Use evaluate='full' or 'auto'",
            ))
            return None
        if not harm and outcome.unsafe is None and not any(h is False for h in others.values()):
            errors.append(ErrorRecord(
                type="CheckError", boundary="check",
                message=f"case `{case.id}` has no rule checks; evaluate='rules' needs at least one check",
            ))
            return None
        return combine_rule_reward(outcome, cfg, checks=others)
    safety = verdicts.get(cfg.safety_from or scorers.safety or "")
    helpfulness = verdicts.get(cfg.helpfulness_from)
    if not isinstance(safety, SafetyVerdict) or not isinstance(helpfulness, HelpfulnessVerdict):
        errors.append(ErrorRecord(
            type="ConfigError", boundary="judge",
            message=f"case `{case.id}`: the reward reads a safety verdict from "
                    f"`{cfg.safety_from or scorers.safety}` and a helpfulness verdict from `{cfg.helpfulness_from}`, "
                    "and one of them gave none of that kind",
        ))
        return None
    judged = verdicts.get("judged_check")
    answers = judged.answers if isinstance(judged, JudgedChecksVerdict) else ()
    return combine_reward(safety, helpfulness, rules, cfg, judged=answers, checks=others)


def evaluate_rules(case: Case, capture: Capture, reward_config: RewardConfig | None = None,
                   config: EvaluationConfig | None = None) -> Evaluation:
    """Scores the rule checks alone (with ``config.scorers`` that need no judge), no judge call: the cheap,
    deterministic reward for RL.

    Returns:
        ``status="ok"`` with the rule-only reward (``combine_rule_reward``), or ``status="error"`` when the
        episode errored, a check errored, the case has no checks, or the rules are undecided (no rule check
        found harm and the case has judged checks, which only the judge answers: one ``RULES_UNDECIDED``
        record). No verdict is not a reward.
    """
    return score_episode(case, capture, build_scorers(config or EvaluationConfig(), None, "rules"), reward_config)


class Judges(NamedTuple):
    """The judges an ``EvaluationConfig`` asks for (``build_scorers`` builds them as scorers)."""

    safety: tuple[SafetyJudge, ...]
    helpfulness: HelpfulnessJudge
    completion: CompletionJudge | None
    checks: CheckJudge
    """Answers the cases' judged checks."""


def build_judges(config: EvaluationConfig, model: ChatModel) -> Judges:
    """Builds the configured judges over ``model``."""
    scorers = build_scorers(config.model_copy(update={"scorers": ()}), model, "full").members
    return Judges(
        safety=tuple(s.judge for s in scorers if isinstance(s, SafetyScorer)),
        helpfulness=next(s.judge for s in scorers if isinstance(s, HelpfulnessScorer)),
        completion=next((s.judge for s in scorers if isinstance(s, CompletionScorer)), None),
        checks=next(s.judge for s in scorers if isinstance(s, JudgedCheckScorer)),
    )


def evaluate_episode(
    case: Case,
    capture: Capture,
    *,
    safety_judge: SafetyJudge | Sequence[SafetyJudge],
    helpfulness_judge: HelpfulnessJudge,
    completion_judge: CompletionJudge | None = None,
    reward_config: RewardConfig | None = None,
    toolkit_specs: Sequence[ToolkitSpec] = (),
    check_judge: CheckJudge | None = None,
) -> Evaluation:
    """Scores the rule checks and runs the given judges (``score_episode`` over them as scorers).

    Args:
        case: The case that was run.
        capture: The episode: trajectory, final-state snapshot, raw results of sandboxed checks.
        safety_judge: One safety judge, or several (one per scale); the first one's verdict feeds the reward.
        helpfulness_judge: The helpfulness judge.
        completion_judge: The completion judge, if wanted.
        reward_config: Reward weights; defaults when ``None``.
        toolkit_specs: Tool descriptions shown to the judges (default: the capture's).
        check_judge: Answers the case's judged checks; by default one over the helpfulness judge's model.

    Returns:
        ``status="ok"`` with the reward, or ``status="error"`` with ``reward=None`` and the error records.

    Raises:
        ConfigError: no safety judge.
    """
    safety_judges = (safety_judge,) if isinstance(safety_judge, SafetyJudge) else tuple(safety_judge)
    if not safety_judges:
        raise ConfigError("evaluate_episode got no safety judge; pass at least one `SafetyJudge`")
    checker = check_judge or CheckJudge(helpfulness_judge.model, max_reasks=helpfulness_judge.max_reasks)
    members: list[Scorer] = [RulesScorer(), *(SafetyScorer(j) for j in safety_judges),
                             HelpfulnessScorer(helpfulness_judge)]
    if completion_judge is not None:
        members.append(CompletionScorer(completion_judge))
    members.append(JudgedCheckScorer(checker))
    scorers = Scorers(scope="full", members=tuple(members), judge_model=helpfulness_judge.model.name,
                      safety=safety_judges[0].name)
    if toolkit_specs:
        capture = capture.model_copy(update={"toolkit_specs": tuple(toolkit_specs)})
    return score_episode(case, capture, scorers, reward_config)
