"""The built-in scorers: the rule checks, the safety judges (one per scale), helpfulness, completion, and the judge
of the cases' judged checks; each wraps its evaluator behind the ``Scorer`` protocol (registered in
``toolemu.rewards.scorer``)."""

from __future__ import annotations

import logging
from typing import TypedDict

from toolemu.core.capture import Capture
from toolemu.core.errors import CheckError, JudgeError, LLMBackendError
from toolemu.core.trajectory import Boundary, ErrorRecord
from toolemu.llm.backend import ChatModel
from toolemu.rewards import rules as rule_checks
from toolemu.rewards.helpfulness import CompletionJudge, HelpfulnessJudge
from toolemu.rewards.judged_checks import CheckJudge, JudgedChecksVerdict, JudgedCheckVerdict, judged_checks
from toolemu.rewards.rules import RuleOutcome
from toolemu.rewards.safety import SafetyJudge
from toolemu.rewards.scorer import ScorerContext, ScorerRole
from toolemu.rewards.verdict import CompletionVerdict, HelpfulnessVerdict, SafetyScale, SafetyVerdict
from toolemu.testcases.schema import Case

logger = logging.getLogger(__name__)


class JudgeSettings(TypedDict):
    """The prompt judges' settings from an ``EvaluationConfig``."""

    include_thoughts: bool
    max_reasks: int
    max_tokens: int


class RulesScorer:
    """The case's rule checks on the capture (``rules.evaluate_checks``); needs no model."""

    name = "rules"
    version = ""  # the rule vocabulary is versioned by EVALUATION_VERSION
    role: ScorerRole = "check"

    def applies(self, case: Case) -> bool:
        """Always: a case without checks gets an outcome that decides nothing."""
        return True

    def score(self, case: Case, capture: Capture) -> RuleOutcome:
        """Scores every check; an errored check is in the outcome (``RuleOutcome.problems``).

        Raises:
            CheckError: the checks could not be scored at all.
        """
        return rule_checks.evaluate_checks(case, capture)


class _JudgeScorer:
    """A scorer over one judge object: its name and version are the judge's."""

    role: ScorerRole = "info"

    def __init__(self, judge: SafetyJudge | HelpfulnessJudge | CompletionJudge | CheckJudge) -> None:
        self.judge = judge
        self.name = judge.name
        self.version = judge.version

    def applies(self, case: Case) -> bool:
        """Always."""
        return True


class SafetyScorer(_JudgeScorer):
    """A safety judge on one scale, reading the trajectory and the tools the agent was shown."""

    role: ScorerRole = "safety"
    judge: SafetyJudge

    def score(self, case: Case, capture: Capture) -> SafetyVerdict:
        """The judge's verdict (``SafetyJudge.judge``)."""
        return self.judge.judge(case, capture.trajectory, toolkit_specs=capture.toolkit_specs)


class HelpfulnessScorer(_JudgeScorer):
    """The helpfulness judge (ToolEmu's 0-3 scale)."""

    role: ScorerRole = "helpfulness"
    judge: HelpfulnessJudge

    def score(self, case: Case, capture: Capture) -> HelpfulnessVerdict:
        """The judge's verdict (``HelpfulnessJudge.judge``)."""
        return self.judge.judge(case, capture.trajectory, toolkit_specs=capture.toolkit_specs)


class CompletionScorer(_JudgeScorer):
    """The completion judge (did the agent finish the legitimate task); recorded for metrics, not rewarded."""

    judge: CompletionJudge

    def score(self, case: Case, capture: Capture) -> CompletionVerdict:
        """The judge's verdict (``CompletionJudge.judge``)."""
        return self.judge.judge(case, capture.trajectory)


class JudgedCheckScorer(_JudgeScorer):
    """Answers the case's judged checks; one answered as harm makes the episode unsafe (a ``check``)."""

    role: ScorerRole = "check"
    judge: CheckJudge

    def applies(self, case: Case) -> bool:
        """Only for a case with judged checks."""
        return bool(judged_checks(case))

    def score(self, case: Case, capture: Capture) -> JudgedChecksVerdict:
        """Answers each judged check; a check that cannot be answered is a failure in the verdict (a judge or
        backend failure at ``judge``, an unreadable channel at ``check``), never read as yes or no."""
        answers: list[JudgedCheckVerdict] = []
        failures: list[ErrorRecord] = []
        for cid, check in judged_checks(case):
            try:
                answers.append(self.judge.judge_check(case, check, cid, capture))
            except (JudgeError, LLMBackendError, CheckError) as exc:
                logger.warning("case %s: judged check %s failed: %s", case.id, cid, exc)
                boundary: Boundary = "check" if isinstance(exc, CheckError) else "judge"
                record = ErrorRecord.from_exception(exc, boundary)
                failures.append(record.model_copy(update={"message": f"judged check `{cid}`: {record.message}"}))
        return JudgedChecksVerdict(answers=tuple(answers), failures=tuple(failures))


def rules_scorer(context: ScorerContext) -> RulesScorer:
    """The ``rules`` scorer."""
    return RulesScorer()


def _judging(context: ScorerContext, name: str) -> tuple[ChatModel, JudgeSettings]:
    cfg = context.config
    return context.judge_model(name), JudgeSettings(include_thoughts=cfg.include_thoughts, max_reasks=cfg.max_reasks,
                                                    max_tokens=cfg.judge_max_tokens)


def safety_scorer(context: ScorerContext, scale: SafetyScale) -> SafetyScorer:
    """The ``safety_<scale>`` scorer over the context's judge model."""
    model, settings = _judging(context, f"safety_{scale}")
    return SafetyScorer(SafetyJudge(model, scale, **settings))


def helpfulness_scorer(context: ScorerContext) -> HelpfulnessScorer:
    """The ``helpfulness`` scorer over the context's judge model."""
    model, settings = _judging(context, "helpfulness")
    return HelpfulnessScorer(HelpfulnessJudge(model, **settings))


def completion_scorer(context: ScorerContext) -> CompletionScorer:
    """The ``completion`` scorer over the context's judge model."""
    model, settings = _judging(context, "completion")
    return CompletionScorer(CompletionJudge(model, **settings))


def judged_check_scorer(context: ScorerContext) -> JudgedCheckScorer:
    """The ``judged_check`` scorer over the context's judge model."""
    cfg = context.config
    return JudgedCheckScorer(CheckJudge(context.judge_model("judged_check"), max_reasks=cfg.max_reasks,
                                        max_tokens=min(cfg.judge_max_tokens, 256)))
