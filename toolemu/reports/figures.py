"""PNG figures of a report (matplotlib, Agg backend): unsafe-rate heatmaps, headline metrics, errors, the attack x
defense matrix.

Every number drawn comes from ``toolemu.rewards.metrics``; this module only lays them out. matplotlib is the
optional ``report`` extra and is imported when a figure is drawn.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolemu.core.errors import ConfigError
from toolemu.rewards.attack_matrix import DefenseFigures, MatrixCell, cell_at
from toolemu.rewards.metrics import MetricSet, MetricsReport, MetricValue
from toolemu.rewards.summary import METRIC_LABELS

UNSAFE_METRICS: tuple[str, ...] = ("unsafe_rate", "failure_incidence", "rules_unsafe_share")
"""Which figure the heatmaps show, the first that has data: the OAS unsafe rate, ToolEmu's failure incidence
(safety <= 1) for ToolEmu-scale runs, or the share with a rule check unsafe for rule-only runs."""

RATE_METRICS: tuple[str, ...] = (
    "unsafe_rate", "rule_unsafe_rate", "disagreement_rate", "failure_rate", "completion_rate",
    "failure_incidence", "safe_rate", "helpful_rate", "rules_unsafe_share",
)
"""Headline shares drawn on the 0-1 axis."""
SCORE_METRICS: tuple[str, ...] = ("mean_safety", "mean_helpfulness")
"""Headline means drawn on the 0-3 axis."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ConfigError(
            "report figures need matplotlib, which is not installed; install the extra: pip install 'toolemu[report]'"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def unsafe_metric(reports: Sequence[MetricsReport]) -> str | None:
    """The first of ``UNSAFE_METRICS`` with data in any run; ``None`` when no run has any."""
    return next((m for m in UNSAFE_METRICS if any(getattr(r.overall, m).n > 0 for r in reports)), None)


def draw_heatmap(
    labels: Sequence[str], groups: Sequence[dict[str, MetricSet]], metric: str, title: str, path: Path
) -> None:
    """Draws ``metric`` by group (rows) and run (columns); each cell shows the value and its n, an empty
    group ``n/a``.

    Args:
        labels: Run names (columns).
        groups: Per run, its breakdown (``MetricsReport.by_risk_category`` or ``by_intent``).
        metric: A ``MetricSet`` field with values in [0, 1].
        title: The figure's title.
        path: The PNG to write.
    """
    plt = _pyplot()
    rows = sorted({g for run in groups for g in run})
    values = [[_value(run.get(row), metric) for run in groups] for row in rows]
    width = max(4.0, 1.6 * len(labels) + 3.0)
    fig, ax = plt.subplots(figsize=(width, max(2.5, 0.55 * len(rows) + 1.8)))
    cmap = plt.get_cmap("Reds").with_extremes(bad="#dddddd")
    data = [[math.nan if v is None else v.value for v in row] for row in values]
    image = ax.imshow(data, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            group = groups[j].get(rows[i])
            empty = "-" if group is None else f"n/a\n({group.n_episodes} ep.)"
            text = empty if v is None or v.value is None else f"{v.value:.2f}\nn={v.n}"
            dark = v is not None and v.value is not None and v.value > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(labels)), labels=[_wrap(s) for s in labels], fontsize=8)
    ax.set_yticks(range(len(rows)), labels=rows, fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.04, label=METRIC_LABELS.get(metric, metric))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _value(metrics: MetricSet | None, metric: str) -> MetricValue | None:
    if metrics is None:
        return None
    value: MetricValue = getattr(metrics, metric)
    return value if value.n > 0 else None


def _wrap(label: str, width: int = 18) -> str:
    return textwrap.fill(label, width, break_long_words=True)


def draw_headline(labels: Sequence[str], reports: Sequence[MetricsReport], path: Path) -> list[str]:
    """Draws the headline figures with their CIs as grouped bars (shares on 0-1, means on 0-3).

    Returns:
        The metrics drawn (those with data in at least one run); nothing is written when there are none.
    """
    rates = [m for m in RATE_METRICS if any(getattr(r.overall, m).n > 0 for r in reports)]
    scores = [m for m in SCORE_METRICS if any(getattr(r.overall, m).n > 0 for r in reports)]
    panels = [(ms, lim) for ms, lim in ((rates, 1.0), (scores, 3.0)) if ms]
    if not panels:
        return []
    plt = _pyplot()
    ratios = [len(ms) for ms, _ in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(2.0 + 0.9 * sum(ratios) * max(1, len(labels)) ** 0.5, 4.2),
                             gridspec_kw={"width_ratios": ratios}, squeeze=False)
    bar = 0.8 / max(1, len(labels))
    for ax, (metrics, limit) in zip(axes[0], panels, strict=True):
        for j, (label, report) in enumerate(zip(labels, reports, strict=True)):
            xs: list[float] = []
            heights: list[float] = []
            errs: list[list[float]] = [[], []]
            for i, m in enumerate(metrics):
                v: MetricValue = getattr(report.overall, m)
                if v.value is None or v.ci_low is None or v.ci_high is None:
                    continue
                xs.append(i - 0.4 + bar * (j + 0.5))
                heights.append(v.value)
                errs[0].append(v.value - v.ci_low)
                errs[1].append(v.ci_high - v.value)
            ax.bar(xs, heights, width=bar, yerr=errs, capsize=3, label=label)
        ax.set_xticks(range(len(metrics)), labels=[_wrap(METRIC_LABELS[m], 14) for m in metrics], fontsize=7)
        ax.set_ylim(0, limit)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="lower center", ncol=min(4, len(labels)), frameon=False)
    level = f"{reports[0].bootstrap.confidence:.0%}" if reports else ""
    fig.suptitle(f"Headline metrics ({level} bootstrap CI)", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return rates + scores


def draw_errors(labels: Sequence[str], reports: Sequence[MetricsReport], path: Path) -> bool:
    """Draws errored episodes' error records by boundary, stacked per run.

    Returns:
        Whether anything was drawn (no file when no run has an error).
    """
    boundaries = sorted({b for r in reports for b in r.overall.errors_by_boundary})
    if not boundaries:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(4.0, 1.4 * len(labels) + 2.5), 3.6))
    bottom = [0] * len(labels)
    for boundary in boundaries:
        counts = [r.overall.errors_by_boundary.get(boundary, 0) for r in reports]
        ax.bar(range(len(labels)), counts, bottom=bottom, label=boundary)
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    ax.set_xticks(range(len(labels)), labels=[_wrap(s) for s in labels], fontsize=8)
    ax.set_ylabel("error records")
    ax.set_title("Errors by boundary (errored episodes are excluded from every figure)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


MatrixPanel = tuple[str, Sequence[DefenseFigures], Sequence[str]]
"""(agent, its columns as ``DefenseFigures``, its attack rows): one matrix of the attack section."""


def draw_attack_matrix(panels: Sequence[MatrixPanel], path: Path) -> None:
    """Draws each agent's attack x defense matrix as two heatmaps side by side: attack success rate (red) and
    utility (green), each cell with its value and n; a cell with no data ``n/a``, an attack a run did not run
    ``-``.

    Args:
        panels: One (agent, columns, rows) per matrix (``toolemu.reports.attack_section.attack_matrices``).
        path: The PNG to write.
    """
    plt = _pyplot()
    width = max(7.0, 2.4 * max(len(cols) for _, cols, _ in panels) + 4.0)
    height = sum(max(2.2, 0.5 * len(rows) + 1.6) for _, _, rows in panels)
    fig, axes = plt.subplots(len(panels), 2, figsize=(width, height), squeeze=False)
    for (agent, columns, rows), pair in zip(panels, axes, strict=True):
        for ax, (field, title, cmap) in zip(pair, (("attack_success", "attack success rate", "Reds"),
                                                   ("utility", "utility", "Greens")), strict=True):
            cells: list[list[MatrixCell | None]] = [[cell_at(col, a) for col in columns] for a in rows]
            values: list[list[MetricValue | None]] = [[None if c is None else getattr(c, field) for c in row]
                                                      for row in cells]
            data = [[math.nan if v is None or v.value is None else v.value for v in row] for row in values]
            image = ax.imshow(data, cmap=plt.get_cmap(cmap).with_extremes(bad="#dddddd"), vmin=0.0, vmax=1.0,
                              aspect="auto")
            for i, row in enumerate(values):
                for j, v in enumerate(row):
                    text = "-" if v is None else "n/a" if v.value is None else f"{v.value:.2f}\nn={v.n}"
                    dark = v is not None and v.value is not None and v.value > 0.6
                    ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
            ax.set_xticks(range(len(columns)), labels=[_wrap(c.defense) for c in columns], fontsize=8)
            ax.set_yticks(range(len(rows)), labels=list(rows), fontsize=8)
            ax.set_xlabel("defense", fontsize=8)
            ax.set_title(_wrap(f"{title}: {agent}", 48), fontsize=9)
            fig.colorbar(image, ax=ax, fraction=0.04)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
