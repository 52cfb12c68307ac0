"""``toolemu rescore``: re-judge saved episodes and re-run their rule checks into a new results file."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.bench.rescore import rescore_file, rescore_hash
from toolemu.bench.run_info import RunInfo, load_run_info, save_run_info
from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.llm import describe_model, resolve_model
from toolemu.rewards.evaluation import EvaluationConfig
from toolemu.rewards.metrics import compute_metrics
from toolemu.rewards.scorer import Scorers, build_scorers
from toolemu.rewards.summary import render_summary


@click.command("rescore")
@click.argument("results", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="New results file for the re-scored records (must not exist).")
@click.option("--judge-model", default=None, help="Judge model spec (default: OpenAI-compatible if a key or base "
              "URL is set, else the embedded local model).")
@click.option("--rules-only", is_flag=True, help="Re-run the rule checks alone (rule-only reward, no judge).")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint for the judge.")
@click.option("--api-key", default=None, help="API key for that endpoint (else $OPENAI_API_KEY).")
@click.option("--safety-scale", type=click.Choice(["toolemu", "oas"]), default="toolemu", show_default=True)
@click.option("--scorer", "scorers", multiple=True, help="Also run this registered scorer (repeatable).")
@click.option("--config", "config_filter", default=None, help="Only records with this config hash.")
@click.option("--cache-dir", type=click.Path(), default=None, help="Cache model responses on disk here.")
def rescore_command(results: Path, out: Path, judge_model: str | None, rules_only: bool, base_url: str | None,
                    api_key: str | None, safety_scale: str, scorers: tuple[str, ...], config_filter: str | None,
                    cache_dir: str | None) -> None:
    """Re-score saved episodes (from bench or run --out) without re-running agents."""
    if rules_only and judge_model is not None:
        raise ConfigError("--rules-only runs no judge; drop --judge-model (or --rules-only)")
    evaluation = EvaluationConfig(safety_scales=(safety_scale,), scorers=scorers)  # type: ignore[arg-type]
    model = None
    if not rules_only:
        model = resolve_model(judge_model, base_url=base_url, api_key=api_key,
                              cache_dir=Path(cache_dir) if cache_dir else None)
        echo(f"   judges: {describe_model(model)}", err=True)
    built = build_scorers(evaluation, model, "rules" if rules_only else "full")
    records = rescore_file(results, out, built, evaluation, only_config=config_filter)
    _describe(results, out, built, {r.config_hash for r in records})
    echo(f"re-scored {len(records)} episode(s) -> {out} (config {records[0].config_hash})", err=True)
    echo(render_summary(compute_metrics(records)))


def _describe(results: Path, out: Path, scorers: Scorers, new_hashes: set[str]) -> None:
    """Names the re-scored runs beside ``out`` after the runs they came from (when those are described)."""
    scope, judge = scorers.scope, scorers.judge_model
    for old, info in load_run_info(results).items():
        new = rescore_hash(old, scorers)
        if new in new_hashes:
            how = f"re-judged by {judge}" if judge else "rules re-run"
            save_run_info(out, new, RunInfo(
                agent=info.agent, variant=f"{info.variant}, {how}" if info.variant else how, judge=judge,
                description={"rescored_from": old, "scope": scope, "judge": judge, "run": info.description},
                defense=info.defense))
