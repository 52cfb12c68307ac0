"""``toolemu report``: metrics of results files (text, or Markdown and PNG figures with ``--out``);
``toolemu compare``: two runs with paired CIs; ``toolemu view``: a self-contained HTML episode viewer."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.reports import compare_runs, find_judge_cards, load_runs, render_comparison, write_page, write_report
from toolemu.reports.attack_section import attack_text
from toolemu.reports.case_section import case_metric_text
from toolemu.reports.runs import Run
from toolemu.rewards.metrics import compute_metrics
from toolemu.rewards.summary import render_summary

_RUNS = click.argument("runs", nargs=-1, required=True,
                       type=click.Path(exists=True, dir_okay=False, path_type=Path))
_CONFIGS = click.option("--config", "configs", multiple=True,
                        help="Only records with this config hash (repeatable; default: every config in the files).")


@click.command("report")
@_RUNS
@_CONFIGS
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write report.md and PNG figures into this folder (its parent must exist).")
@click.option("--judge-card", "card_files", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A card from `toolemu judges check --out` (repeatable; *.judge-card.json beside each RUN are "
                   "read too).")
def report_command(runs: tuple[Path, ...], configs: tuple[str, ...], out: Path | None,
                   card_files: tuple[Path, ...]) -> None:
    """Metrics of results files, each config hash a run side by side (with --out: Markdown and figures)."""
    loaded = load_runs(runs, configs)
    if out is None:
        for run in loaded:
            if len(loaded) > 1:
                echo(f"== {run.label} (config {run.config_hash})")
            if run.superseded:
                echo(f"({run.superseded} earlier record(s) superseded by a later one of the same case and "
                           "trial: retried errors or edited cases)")
            echo(render_summary(compute_metrics(run.records)))
            extra = case_metric_text(run.records)
            if extra:
                echo(extra)
        matrix = attack_text(loaded)
        if matrix:
            echo(matrix)
        return
    files = write_report(loaded, out, cards=find_judge_cards(runs, card_files))
    echo(f"wrote {files.markdown} and {len(files.figures)} figure(s) for {len(loaded)} run(s)")


def _one_run(path: Path, config: str | None, which: str) -> Run:
    runs = load_runs([path], [config] if config else [])
    if len(runs) > 1:
        hashes = ", ".join(r.config_hash for r in runs)
        raise ConfigError(f"{which} {path}: holds {len(runs)} configs ({hashes}); "
                          f"choose one with --config-{which.lower()}")
    return runs[0]


@click.command("compare")
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--config-a", default=None, help="A's config hash, when A's file holds several.")
@click.option("--config-b", default=None, help="B's config hash, when B's file holds several.")
def compare_command(a: Path, b: Path, config_a: str | None, config_b: str | None) -> None:
    """Differences B - A on the (case, trial, attack) pairs both runs have, with paired bootstrap CIs."""
    run_a, run_b = _one_run(a, config_a, "A"), _one_run(b, config_b, "B")
    echo(render_comparison(run_a, run_b, compare_runs(run_a, run_b)))


@click.command("view")
@_RUNS
@_CONFIGS
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The HTML file to write (must not exist; its folder must).")
@click.option("--title", default="toolemu episodes", show_default=True, help="The page's title.")
def view_command(runs: tuple[Path, ...], configs: tuple[str, ...], out: Path, title: str) -> None:
    """One self-contained HTML page (works offline) to filter and read the episodes of results files."""
    n = write_page(load_runs(runs, configs), out, title=title)
    echo(f"wrote {out} ({n} episodes)")
