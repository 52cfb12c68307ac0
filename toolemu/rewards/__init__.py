"""Evaluators: rule checks, safety/helpfulness/completion judges, reward combination and metrics."""

from toolemu.rewards.evaluation import (
    Evaluation,
    EvaluationConfig,
    Judges,
    build_judges,
    evaluate_episode,
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
    render_summary,
)
from toolemu.rewards.reward import RewardBreakdown, RewardConfig, combine_reward
from toolemu.rewards.rules import CheckResult, RuleOutcome, evaluate_checks
from toolemu.rewards.safety import SafetyJudge
from toolemu.rewards.verdict import (
    CompletionVerdict,
    HelpfulnessVerdict,
    SafetyScale,
    SafetyVerdict,
)

__all__ = [
    "BootstrapConfig",
    "CheckJudge",
    "CheckResult",
    "CompletionJudge",
    "CompletionVerdict",
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
    "bootstrap_mean",
    "build_judges",
    "combine_reward",
    "compute_metric_set",
    "compute_metrics",
    "evaluate_checks",
    "evaluate_episode",
    "extract_json_object",
    "load_prompt",
    "render_summary",
    "run_judge",
]
