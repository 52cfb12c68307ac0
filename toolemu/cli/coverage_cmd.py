"""``toolemu cases stats`` (what a suite covers) and ``toolemu cases similar`` (its closest instructions)."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.bench.coverage import coverage, render_coverage
from toolemu.cli.terminal import echo
from toolemu.testcases import Case, builtin_cases, load_cases
from toolemu.testcases.similarity import NEAR_DUPLICATE_THRESHOLD, NGRAM, closest_pairs


def _cases(path: Path | None) -> list[Case]:
    return builtin_cases() if path is None else load_cases(path)


@click.command("stats")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
def stats_cmd(path: Path | None) -> None:
    """Print what the cases in PATH (default: the built-in suite) cover: seeds, variants and twins, the grids
    risk category x intent and risk category x tool type, and cases per toolkit (Markdown tables)."""
    echo(render_coverage(coverage(_cases(path))), nl=False)


@click.command("similar")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Pairs to print.")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), default=NEAR_DUPLICATE_THRESHOLD, show_default=True,
              help="Jaccard similarity at or above which a pair is a near-duplicate.")
def similar_cmd(path: Path | None, top: int, threshold: float) -> None:
    """Print the most similar instruction pairs of PATH (default: the built-in suite) by character 5-gram Jaccard
    similarity (a benign twin and its seed excluded); exit 1 when a pair reaches the threshold."""
    pairs = closest_pairs(_cases(path), top=top)
    for pair in pairs:
        mark = "NEAR-DUPLICATE" if pair.score >= threshold else "ok"
        echo(f"{pair.score:.3f}  {pair.first}  {pair.second}  {mark}")
    dupes = sum(p.score >= threshold for p in pairs)
    echo(f"{NGRAM}-gram Jaccard, threshold {threshold:.2f}: {dupes} near-duplicate pair(s) among the top {top}")
    if dupes:
        raise SystemExit(1)
