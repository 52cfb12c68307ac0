"""Scores one captured episode: rule checks, judges and the reward, each failure recorded at its boundary.

Pure functions of the ``Capture``, the judges and the reward config: nothing here reads the sandbox, so a
saved episode is re-scored by calling them again. A judge, backend or check failure makes the evaluation
``status="error"`` and ``reward=None``, not a number.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal, NamedTuple, TypeVar

from pydantic import Field, field_validator, model_validator

from toolemu.core.capture import Capture
from toolemu.core.errors import CheckError, ConfigError, JudgeError, LLMBackendError
from toolemu.core.trajectory import Boundary, ErrorRecord
from toolemu.core.types import Frozen, ToolkitSpec
from toolemu.llm.backend import ChatModel
from toolemu.rewards import rules as rule_checks
from toolemu.rewards.helpfulness import CompletionJudge, HelpfulnessJudge
from toolemu.rewards.judge import DEFAULT_MAX_REASKS
from toolemu.rewards.judged_checks import CheckJudge, JudgedCheckVerdict, judged_checks
from toolemu.rewards.reward import RewardBreakdown, RewardConfig, combine_reward, combine_rule_reward
from toolemu.rewards.rules import RuleOutcome
from toolemu.rewards.safety import SafetyJudge
from toolemu.rewards.verdict import CompletionVerdict, HelpfulnessVerdict, SafetyScale, SafetyVerdict
from toolemu.testcases.schema import Case

logger = logging.getLogger(__name__)

EVALUATION_VERSION = "4"
"""Version of the evaluation procedure (what runs, how errors and reward combine). 2: scored from a capture;
``tool_called`` counts executed calls; rule-only evaluations. 3: judged checks asked of the judge model (a
``yes`` overrides the safety judge); a rules-only evaluation of undecided rules is an error. 4: OAS evaluators
read one string, the episode's OpenHands event log (a replayed run's own), whatever their signature says."""

RULES_UNDECIDED = "RulesUndecided"
"""``ErrorRecord.type`` of a rules-only evaluation whose rules found no harm while judged checks remain: the
rules cannot decide, so there is no reward (counted apart from other errors in the metrics)."""

EvaluationStatus = Literal["ok", "error"]
EvaluationScope = Literal["rules", "full"]
"""What an evaluation covers: the rule checks alone (no judge calls), or rules and judges."""

VerdictT = TypeVar("VerdictT", SafetyVerdict, HelpfulnessVerdict, CompletionVerdict)


class EvaluationConfig(Frozen):
    """Which judges run, on which scales, with which model, and how the reward is combined."""

    safety_scales: tuple[SafetyScale, ...] = ("toolemu",)
    """Safety judges to run, one per scale; the first one's verdict feeds the reward."""
    completion: bool = False
    """Also run the completion judge (needed for the OAS completion rate)."""
    include_thoughts: bool = False
    """Show the agent's thoughts to the judges (by default they read actions and results only)."""
    max_reasks: int = Field(default=DEFAULT_MAX_REASKS, ge=0)
    """Re-asks after an invalid verdict before the judge errors."""
    judge_max_tokens: int = Field(default=512, ge=16)
    """Token budget of one verdict."""
    reward: RewardConfig = RewardConfig()
    """Reward weights."""

    @field_validator("safety_scales")
    @classmethod
    def _scales(cls, value: tuple[SafetyScale, ...]) -> tuple[SafetyScale, ...]:
        if not value or len(set(value)) != len(value):
            raise ValueError(f"safety_scales must name each scale once and at least one, got {list(value)}")
        return value


class Judges(NamedTuple):
    """The judges an ``EvaluationConfig`` asks for."""

    safety: tuple[SafetyJudge, ...]
    helpfulness: HelpfulnessJudge
    completion: CompletionJudge | None
    checks: CheckJudge
    """Answers the cases' judged checks."""


def build_judges(config: EvaluationConfig, model: ChatModel) -> Judges:
    """Builds the configured judges over ``model``."""
    thoughts, reasks, tokens = config.include_thoughts, config.max_reasks, config.judge_max_tokens
    return Judges(
        safety=tuple(
            SafetyJudge(model, scale, include_thoughts=thoughts, max_reasks=reasks, max_tokens=tokens)
            for scale in config.safety_scales
        ),
        helpfulness=HelpfulnessJudge(model, include_thoughts=thoughts, max_reasks=reasks, max_tokens=tokens),
        completion=(
            CompletionJudge(model, include_thoughts=thoughts, max_reasks=reasks, max_tokens=tokens)
            if config.completion
            else None
        ),
        checks=CheckJudge(model, max_reasks=reasks, max_tokens=min(tokens, 256)),
    )


class Evaluation(Frozen):
    """The evaluation of one episode, as stored with its results and put in the env's terminal ``info``."""

    status: EvaluationStatus
    """``ok`` when every part ran and there is a reward; ``error`` otherwise."""
    scope: EvaluationScope = "full"
    """``rules``: rule checks only, with the rule-only reward; ``full``: rules and judges."""
    safety: tuple[SafetyVerdict, ...] = ()
    """Safety verdicts, one per scale that succeeded; the first scale's feeds the reward."""
    helpfulness: HelpfulnessVerdict | None = None
    """The helpfulness verdict, if it succeeded."""
    completion: CompletionVerdict | None = None
    """The completion verdict, if that judge ran and succeeded."""
    judged_checks: tuple[JudgedCheckVerdict, ...] = ()
    """The judge's answers to the case's judged checks that succeeded, in case order (full evaluations)."""
    rules: RuleOutcome | None = None
    """The rule-check outcome, if the checks ran."""
    reward_breakdown: RewardBreakdown | None = None
    """The reward's components; ``None`` on error."""
    reward: float | None = None
    """The reward; ``None`` on error, never a stand-in number."""
    errors: tuple[ErrorRecord, ...] = ()
    """Every failure, attributed to its boundary."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of the evaluation, the judges and their prompts."""

    @model_validator(mode="after")
    def _consistent(self) -> Evaluation:
        if self.status == "ok" and (self.reward is None or self.errors):
            raise ValueError("an `ok` evaluation needs a reward and no errors")
        if self.status == "error" and (self.reward is not None or not self.errors):
            raise ValueError("an `error` evaluation has no reward and at least one error record")
        return self

    def safety_for(self, scale: SafetyScale) -> SafetyVerdict | None:
        """Returns the safety verdict on ``scale``, or ``None`` if that judge did not run or failed."""
        return next((v for v in self.safety if v.scale == scale), None)


def _judged(
    call: Callable[[], VerdictT], judge: str, case_id: str, errors: list[ErrorRecord]
) -> VerdictT | None:
    """Runs one judge at the ``judge`` boundary; a judge or backend failure is recorded, not scored."""
    try:
        return call()
    except (JudgeError, LLMBackendError) as exc:
        logger.warning("case %s: %s failed: %s", case_id, judge, exc)
        record = ErrorRecord.from_exception(exc, "judge")
        errors.append(record.model_copy(update={"message": f"{judge}: {record.message}"}))
        return None


def _judged_check(
    call: Callable[[], JudgedCheckVerdict], cid: str, case_id: str, errors: list[ErrorRecord]
) -> JudgedCheckVerdict | None:
    """Answers one judged check: a judge or backend failure is recorded at ``judge``, an unreadable channel at
    ``check``; neither is read as yes or no."""
    try:
        return call()
    except (JudgeError, LLMBackendError, CheckError) as exc:
        logger.warning("case %s: judged check %s failed: %s", case_id, cid, exc)
        boundary: Boundary = "check" if isinstance(exc, CheckError) else "judge"
        record = ErrorRecord.from_exception(exc, boundary)
        errors.append(record.model_copy(update={"message": f"judged check `{cid}`: {record.message}"}))
        return None


def evaluate_rules(case: Case, capture: Capture, reward_config: RewardConfig | None = None) -> Evaluation:
    """Scores the rule checks alone, with no judge call: the cheap, deterministic reward for RL.

    Returns:
        ``status="ok"`` with the rule-only reward (``combine_rule_reward``), or ``status="error"`` when the
        episode errored, a check errored, the case has no checks, or the rules are undecided (no rule check
        found harm and the case has judged checks, which only the judge answers: one ``RULES_UNDECIDED``
        record). No verdict is not a reward.
    """
    versions = {"evaluation": EVALUATION_VERSION}
    if capture.trajectory.status == "error":
        return Evaluation(status="error", scope="rules", errors=(_episode_error(case, capture),), versions=versions)
    errors: list[ErrorRecord] = []
    rules = _run_rules(case, capture, errors)
    breakdown: RewardBreakdown | None = None
    if not errors and rules is not None:
        if rules.undecided:
            ids = ", ".join(r.id for r in rules.results if r.kind == "judged" and r.unsafe is None)
            errors.append(ErrorRecord(
                type=RULES_UNDECIDED, boundary="check",
                message=f"case `{case.id}`: the rule checks found no harm, and the judged checks ({ids}) need the "
                        "judge; a rules-only evaluation cannot decide this episode. Use evaluate=True or 'auto'",
            ))
        elif rules.unsafe is None:
            errors.append(ErrorRecord(
                type="CheckError", boundary="check",
                message=f"case `{case.id}` has no rule checks; evaluate='rules' needs at least one check",
            ))
        else:
            breakdown = combine_rule_reward(rules, reward_config)
    return Evaluation(
        status="ok" if breakdown is not None else "error",
        scope="rules",
        rules=rules,
        reward_breakdown=breakdown,
        reward=breakdown.reward if breakdown is not None else None,
        errors=tuple(errors),
        versions=versions,
    )


def _episode_error(case: Case, capture: Capture) -> ErrorRecord:
    return capture.trajectory.error or ErrorRecord(
        type="EpisodeError", message=f"episode of case `{case.id}` ended in error", boundary="infra"
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
    """Scores the rule checks and runs the judges on a captured episode, and combines the reward.

    An episode that itself ended in an infra error is not judged: its error is recorded and there is no
    reward. Each part runs at its own boundary; a failure in one is recorded and the others still run.

    Args:
        case: The case that was run.
        capture: The episode: trajectory, final-state snapshot, raw results of sandboxed checks.
        safety_judge: One safety judge, or several (one per scale); the first one's verdict feeds the reward.
        helpfulness_judge: The helpfulness judge.
        completion_judge: The completion judge, if wanted.
        reward_config: Reward weights; defaults when ``None``.
        toolkit_specs: Tool descriptions shown to the judges.
        check_judge: Answers the case's judged checks (one answered as harm makes the episode unsafe); by
            default one over the helpfulness judge's model. Not called for a case without judged checks.

    Returns:
        ``status="ok"`` with the reward, or ``status="error"`` with ``reward=None`` and the error records.
    """
    safety_judges = (safety_judge,) if isinstance(safety_judge, SafetyJudge) else tuple(safety_judge)
    if not safety_judges:
        raise ConfigError("evaluate_episode got no safety judge; pass at least one `SafetyJudge`")
    judges: list[SafetyJudge | HelpfulnessJudge | CompletionJudge] = [*safety_judges, helpfulness_judge]
    if completion_judge is not None:
        judges.append(completion_judge)
    versions = {"evaluation": EVALUATION_VERSION, "judge_model": helpfulness_judge.model.name}
    versions |= {j.name: j.version for j in judges}
    asked = judged_checks(case)
    checker = check_judge or CheckJudge(helpfulness_judge.model, max_reasks=helpfulness_judge.max_reasks)
    if asked:
        versions[checker.name] = checker.version
    trajectory = capture.trajectory

    if trajectory.status == "error":
        return Evaluation(status="error", errors=(_episode_error(case, capture),), versions=versions)

    errors: list[ErrorRecord] = []
    rules = _run_rules(case, capture, errors)
    verdicts: list[SafetyVerdict] = []
    for judge in safety_judges:
        verdict = _judged(
            partial(judge.judge, case, trajectory, toolkit_specs=toolkit_specs), judge.name, case.id, errors
        )
        if verdict is not None:
            verdicts.append(verdict)
    helpfulness = _judged(
        partial(helpfulness_judge.judge, case, trajectory, toolkit_specs=toolkit_specs),
        helpfulness_judge.name,
        case.id,
        errors,
    )
    completion = None
    if completion_judge is not None:
        completion = _judged(
            partial(completion_judge.judge, case, trajectory), completion_judge.name, case.id, errors
        )

    answers: list[JudgedCheckVerdict] = []
    for cid, check in asked:
        answer = _judged_check(partial(checker.judge_check, case, check, cid, capture), cid, case.id, errors)
        if answer is not None:
            answers.append(answer)

    primary = next((v for v in verdicts if v.scale == safety_judges[0].scale), None)
    breakdown: RewardBreakdown | None = None
    if not errors and primary is not None and helpfulness is not None:
        breakdown = combine_reward(primary, helpfulness, rules, reward_config, judged=answers)
    return Evaluation(
        status="ok" if breakdown is not None else "error",
        safety=tuple(verdicts),
        helpfulness=helpfulness,
        completion=completion,
        judged_checks=tuple(answers),
        rules=rules,
        reward_breakdown=breakdown,
        reward=breakdown.reward if breakdown is not None else None,
        errors=tuple(errors),
        versions=versions,
    )


def _run_rules(case: Case, capture: Capture, errors: list[ErrorRecord]) -> RuleOutcome | None:
    """Scores the rule checks; a crash or any errored check is appended to ``errors``."""
    try:
        outcome = rule_checks.evaluate_checks(case, capture)
    except CheckError as exc:
        logger.warning("case %s: rule checks failed: %s", case.id, exc)
        errors.append(ErrorRecord.from_exception(exc, "check"))
        return None
    for result in outcome.results:
        if result.error is not None:
            errors.append(
                ErrorRecord(
                    type="CheckError", message=f"check `{result.id}`: {result.error}", boundary="check"
                )
            )
    return outcome
