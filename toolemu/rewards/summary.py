"""Plain-text rendering of a ``MetricsReport`` (``toolemu bench``, ``rescore``, ``report``): its figures with their
CIs and n, errored episodes always shown, breakdowns, and each plugged-in scorer's harm share."""

from __future__ import annotations

from toolemu.rewards.metrics import MetricSet, MetricsReport, MetricValue

BUILTIN_SCORERS = frozenset({"rules", "safety_toolemu", "safety_oas", "helpfulness", "completion", "judged_check"})
"""Scorers whose verdicts the named figures already show (the others get a row of their own)."""


METRIC_LABELS: dict[str, str] = {
    "rules_unsafe_share": "rule checks unsafe",
    "unsafe_rate": "OAS unsafe rate",
    "rule_unsafe_rate": "OAS rule unsafe rate",
    "disagreement_rate": "OAS judge/rule disagreement",
    "failure_rate": "OAS failure rate (label -1)",
    "completion_rate": "completion rate",
    "mean_safety": "ToolEmu mean safety (0-3)",
    "mean_helpfulness": "ToolEmu mean helpfulness (0-3)",
    "failure_incidence": "ToolEmu failure incidence (<=1)",
    "safe_rate": "ToolEmu safe rate (>=2)",
    "helpful_rate": "ToolEmu helpful rate (>=2)",
    "mean_reward": "mean reward",
}
"""Row labels, in display order."""

BREAKDOWN_METRICS: dict[str, str] = {
    "unsafe_rate": "OAS unsafe",
    "failure_rate": "OAS failure",
    "mean_safety": "ToolEmu safety",
    "mean_helpfulness": "ToolEmu helpfulness",
    "completion_rate": "completion",
}
"""Figures shown per group in breakdown tables (when the run has them), with their column headers."""


def format_value(metric: MetricValue) -> str:
    """Formats ``value [low, high]``, or ``n/a`` with no data.

    Examples:
        >>> format_value(MetricValue(value=0.25, ci_low=0.1, ci_high=0.4, n=8))
        '0.250 [0.100, 0.400]'
        >>> format_value(MetricValue(value=None, ci_low=None, ci_high=None, n=0))
        'n/a'
    """
    if metric.value is None or metric.ci_low is None or metric.ci_high is None:
        return "n/a"
    return f"{metric.value:.3f} [{metric.ci_low:.3f}, {metric.ci_high:.3f}]"


def _cell(metric: MetricValue) -> str:
    return f"{format_value(metric)} n={metric.n}"


def _errors_line(metrics: MetricSet) -> str:
    boundaries = ", ".join(f"{k} {v}" for k, v in metrics.errors_by_boundary.items())
    detail = f" (error records by boundary: {boundaries})" if boundaries else ""
    graders = f"  OAS grader exceptions read as False: {metrics.grader_exceptions}"
    undecided = (f"  of which undecided by rules (judged checks need the judge): {metrics.n_undecided}"
                 if metrics.n_undecided else "")
    return (
        f"episodes: {metrics.n_episodes}  ok: {metrics.n_episodes - metrics.n_errored}  "
        f"errored: {metrics.n_errored}{detail}{undecided}{graders}"
    )


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def render_summary(report: MetricsReport) -> str:
    """Returns the report as plain text: overall figures (those with data), then one table per breakdown.

    Errored episodes are always shown; figures exclude them.
    """
    overall = report.overall
    level = f"{report.bootstrap.confidence:.0%}"
    lines = [_errors_line(overall), ""]
    rows = [
        [label, format_value(getattr(overall, name)), str(getattr(overall, name).n)]
        for name, label in METRIC_LABELS.items()
        if getattr(overall, name).n > 0
    ]
    rows += [[f"scorer {name}: harm share", format_value(value), str(value.n)]
             for name, value in overall.harm_by_scorer.items() if name not in BUILTIN_SCORERS]
    lines += _table(["metric", f"value [{level} CI]", "n"], rows) if rows else ["(no scored episodes)"]
    shown = [m for m in BREAKDOWN_METRICS if getattr(overall, m).n > 0]
    for title, groups in (
        ("risk category", report.by_risk_category),
        ("intent", report.by_intent),
        ("toolkit", report.by_toolkit),
        ("OAS evaluator", report.by_evaluator),
    ):
        if not groups:
            continue
        header = [title, "n", "errored", *(BREAKDOWN_METRICS[m] for m in shown)]
        body = [
            [key, str(m.n_episodes), str(m.n_errored), *(_cell(getattr(m, name)) for name in shown)]
            for key, m in groups.items()
        ]
        lines += ["", f"by {title}:", *_table(header, body)]
    lines.append("")
    lines.append(
        f"CI: percentile bootstrap, {report.bootstrap.resamples} resamples, seed {report.bootstrap.seed}"
    )
    return "\n".join(lines)
