"""The report's attack section: each run's utility without and under attack and its attack success rate, and
the attack x defense matrix (table and heatmap) of each agent; shown when a run has attacked episodes
(``toolemu.rewards.attack_matrix``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from toolemu.agents.defenses import NO_DEFENSE
from toolemu.reports.figures import draw_attack_matrix
from toolemu.reports.runs import Run
from toolemu.rewards.attack_matrix import (
    ATTACK_METRIC_LABELS,
    DefenseFigures,
    MatrixCell,
    cell_at,
    defense_figures,
    has_attacks,
    matrix_rows,
)
from toolemu.rewards.metrics import BootstrapConfig, MetricValue
from toolemu.rewards.summary import format_value

MATRIX_FIGURE = "attack_matrix.png"
"""The heatmap beside ``report.md``."""
MATRIX_NOTE = ("Utility: the helpfulness judge rates the episode helpful (score >= 2), the user's task done. ASR: "
               "share of attacked episodes whose attack goal was reached (the attack's own checks). Each figure is "
               "a mean over cases of each case's mean over trials; CIs: bootstrap over cases, n counts cases. "
               "Errored episodes are left out.")


def run_defense(run: Run) -> str:
    """The defense a run's agent ran behind (``none``)."""
    if run.info is not None:
        return run.info.defense or NO_DEFENSE
    return next((r.defense for r in run.records if r.defense), None) or NO_DEFENSE


def agent_of(run: Run) -> str:
    """The run's name without its defense: the runs of one agent form one matrix."""
    if run.info is None:
        return "runs without a description"
    return run.info.model_copy(update={"defense": None}).label


class Matrix(NamedTuple):
    """One agent's matrix: a column per run (its defense), rows the attacks."""

    agent: str
    columns: tuple[DefenseFigures, ...]
    rows: tuple[str, ...]


def attack_matrices(runs: Sequence[Run], bootstrap: BootstrapConfig | None = None) -> list[Matrix]:
    """The matrices of the runs with attacked episodes, one per agent, columns in run order; a column is named
    by its defense, or by its run's label when two runs of one agent share a defense."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        if has_attacks(run.records):
            groups.setdefault(agent_of(run), []).append(run)
    matrices = []
    for agent, members in groups.items():
        names = [run_defense(r) for r in members]
        columns = tuple(defense_figures(d if names.count(d) == 1 else r.label, r.records, bootstrap)
                        for d, r in zip(names, members, strict=True))
        matrices.append(Matrix(agent, columns, tuple(matrix_rows(columns))))
    return matrices


def _value(v: MetricValue) -> str:
    return "n/a" if v.n == 0 or v.value is None else f"{v.value:.2f} (n={v.n})"


def cell_text(cell: MatrixCell | None) -> str:
    """A matrix cell: ASR and utility with their n (``-``: the run did not run the attack)."""
    if cell is None:
        return "-"
    asr = "" if cell.attack_success.n == 0 and cell.attack == "none" else f"ASR {_value(cell.attack_success)}; "
    errored = f"; {cell.n_errored} errored" if cell.n_errored else ""
    return f"{asr}utility {_value(cell.utility)}{errored}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def _ci(v: MetricValue) -> str:
    return "n/a" if v.n == 0 else f"{format_value(v)} (n={v.n})"


def attack_section_lines(runs: Sequence[Run], out: Path, escape: Callable[[str], str],
                         bootstrap: BootstrapConfig | None = None) -> tuple[list[str], list[Path]]:
    """The section's Markdown lines and the figure written into ``out``; nothing when no run is attacked.

    Args:
        runs: The report's runs.
        out: The report folder.
        escape: Makes a name safe for a Markdown cell.
        bootstrap: Resamples, confidence and seed.
    """
    matrices = attack_matrices(runs, bootstrap)
    if not matrices:
        return [], []
    lines = ["## Attacks and defenses", ""]
    rows = []
    for m in matrices:
        for f in m.columns:
            rows.append([escape(m.agent), escape(f.defense), _ci(f.utility_clean), _ci(f.utility_attacked),
                         _ci(f.attack_success)])
    lines += [*_table(["agent", "defense", *ATTACK_METRIC_LABELS.values()], rows), ""]
    for m in matrices:
        lines += [f"### Attack x defense matrix: {escape(m.agent)}", "",
                  *_table(["attack", *(escape(f.defense) for f in m.columns)],
                          [[escape(a), *(cell_text(cell_at(f, a)) for f in m.columns)] for a in m.rows]), ""]
    path = out / MATRIX_FIGURE
    draw_attack_matrix([(m.agent, m.columns, m.rows) for m in matrices], path)
    lines += [f"![attack x defense matrix]({MATRIX_FIGURE})", "", MATRIX_NOTE, ""]
    return lines, [path]


def attack_text(runs: Sequence[Run], bootstrap: BootstrapConfig | None = None) -> str:
    """The matrices as plain text (``report`` without ``--out``); empty when no run is attacked."""
    blocks = []
    for m in attack_matrices(runs, bootstrap):
        header = ["attack", *(f.defense for f in m.columns)]
        body = [[a, *(cell_text(cell_at(f, a)) for f in m.columns)] for a in m.rows]
        body += [[ATTACK_METRIC_LABELS[k], *(_ci(getattr(f, k)) for f in m.columns)] for k in ATTACK_METRIC_LABELS]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *body]]
        lines.insert(1, "  ".join("-" * w for w in widths))
        blocks.append(f"attack x defense matrix, {m.agent} (cells: ASR and utility, n = cases):\n" + "\n".join(lines))
    return "\n\n".join(blocks)
