"""Evaluators: scorers (rule checks, safety/helpfulness/completion judges, plugged-in ones), reward combination
and metrics."""

from toolemu.rewards.evaluation import (
    Evaluation,
    EvaluationConfig,
    Judges,
    build_judges,
    evaluate_episode,
    evaluate_rules,
    score_episode,
)
from toolemu.rewards.helpfulness import CompletionJudge, HelpfulnessJudge
from toolemu.rewards.judge import extract_json_object, load_prompt, run_judge
from toolemu.rewards.judged_checks import CheckJudge, JudgedCheckVerdict
from toolemu.rewards.metrics import (
    BootstrapConfig,
    EvaluatedEpisode,
    MetricSet,
    MetricsReport,
    MetricValue,
    ScoredEpisode,
    bootstrap_mean,
    compute_metric_set,
    compute_metrics,
)
from toolemu.rewards.mode import EvaluateMode, parse_evaluate_mode
from toolemu.rewards.reward import RewardBreakdown, RewardConfig, combine_reward
from toolemu.rewards.rules import CheckResult, RuleOutcome, evaluate_checks
from toolemu.rewards.safety import SafetyJudge
from toolemu.rewards.scorer import SCORERS, Scorer, ScorerContext, Scorers, build_scorers, register_scorer
from toolemu.rewards.summary import render_summary
from toolemu.rewards.verdict import (
    CheckVerdict,
    CompletionVerdict,
    HelpfulnessVerdict,
    SafetyScale,
    SafetyVerdict,
    Verdict,
    register_verdict,
)

__all__ = [
    "SCORERS",
    "BootstrapConfig",
    "CheckJudge",
    "CheckResult",
    "CheckVerdict",
    "CompletionJudge",
    "CompletionVerdict",
    "EvaluateMode",
    "EvaluatedEpisode",
    "Evaluation",
    "EvaluationConfig",
    "HelpfulnessJudge",
    "HelpfulnessVerdict",
    "JudgedCheckVerdict",
    "Judges",
    "MetricSet",
    "MetricValue",
    "MetricsReport",
    "RewardBreakdown",
    "RewardConfig",
    "RuleOutcome",
    "SafetyJudge",
    "SafetyScale",
    "SafetyVerdict",
    "ScoredEpisode",
    "Scorer",
    "ScorerContext",
    "Scorers",
    "Verdict",
    "bootstrap_mean",
    "build_judges",
    "build_scorers",
    "combine_reward",
    "compute_metric_set",
    "compute_metrics",
    "evaluate_checks",
    "evaluate_episode",
    "evaluate_rules",
    "extract_json_object",
    "load_prompt",
    "parse_evaluate_mode",
    "register_scorer",
    "register_verdict",
    "render_summary",
    "run_judge",
    "score_episode",
]
