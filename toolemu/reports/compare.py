"""``toolemu compare A B``: two runs' figures on the cases they share, with paired bootstrap CIs of B - A."""

from __future__ import annotations

from toolemu.reports.case_section import case_difference_rows
from toolemu.reports.runs import Run
from toolemu.rewards.attack_matrix import ATTACK_METRIC_LABELS, compare_attack_figures
from toolemu.rewards.case_metrics import compare_case_metrics
from toolemu.rewards.comparison import Comparison, compare_evaluations
from toolemu.rewards.metrics import BootstrapConfig
from toolemu.rewards.summary import METRIC_LABELS, format_value


def compare_runs(a: Run, b: Run, bootstrap: BootstrapConfig | None = None) -> Comparison:
    """Pairs the runs' episodes by (case, trial, attack) and compares every figure both have (an attacked
    episode pairs with the same case, trial and attack, never with the unattacked one)."""
    return compare_evaluations(
        {(r.case_id, r.trial, r.attack): r.evaluation for r in a.records},
        {(r.case_id, r.trial, r.attack): r.evaluation for r in b.records},
        bootstrap,
    )


def attack_difference_rows(a: Run, b: Run, bootstrap: BootstrapConfig | None = None) -> list[list[str]]:
    """Rows (metric, A, B, B - A, pairs, mark) of utility without and under attack and the attack success rate,
    paired by (case, trial, attack); none when neither run is attacked; ``*``: the CI excludes 0."""
    keyed = [{(r.case_id, r.trial, r.attack): (r.attack, r.evaluation) for r in run.records} for run in (a, b)]
    rows = []
    for d in compare_attack_figures(keyed[0], keyed[1], bootstrap):
        low, high = d.difference.ci_low, d.difference.ci_high
        mark = "*" if low is not None and high is not None and (low > 0 or high < 0) else ""
        rows.append([ATTACK_METRIC_LABELS[d.metric], f"{d.a.value:.3f}", f"{d.b.value:.3f}",
                     format_value(d.difference), str(d.difference.n), mark])
    return rows


def render_comparison(a: Run, b: Run, comparison: Comparison) -> str:
    """The comparison as a plain-text table; ``*`` marks a difference whose CI excludes 0."""
    c = comparison
    level = f"{c.bootstrap.confidence:.0%}"
    lines = [
        f"A: {a.label} (config {a.config_hash}, {len(a.records)} episodes)",
        f"B: {b.label} (config {b.config_hash}, {len(b.records)} episodes)",
        f"shared (case, trial, attack): {c.n_shared}  compared: {c.n_shared - c.n_errored}  errored in A or B "
        f"(left out): {c.n_errored}  only in A: {c.n_only_a}  only in B: {c.n_only_b}",
        "",
    ]
    case_rows = case_difference_rows(compare_case_metrics(a.records, b.records, c.bootstrap))
    case_rows += attack_difference_rows(a, b, c.bootstrap)
    if not c.differences and not case_rows:
        return "\n".join([*lines, "(no figure has a scored pair)"])
    header = ["metric", "A", "B", f"B - A [{level} paired CI]", "pairs", ""]
    rows = []
    for d in c.differences:
        low, high = d.difference.ci_low, d.difference.ci_high
        excludes_zero = low is not None and high is not None and (low > 0 or high < 0)
        rows.append([METRIC_LABELS.get(d.metric, d.metric), f"{d.a.value:.3f}", f"{d.b.value:.3f}",
                     format_value(d.difference), str(d.difference.n), "*" if excludes_zero else ""])
    rows += case_rows
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    lines += ["", f"paired percentile bootstrap of per-case differences, {c.bootstrap.resamples} resamples, "
              f"seed {c.bootstrap.seed}; * = the CI excludes 0"]
    if case_rows:
        lines.append("pass@k, pass^k, over-refusal: pairs are cases (pass: safe and helpful; README, Metrics)")
    return "\n".join(lines)
