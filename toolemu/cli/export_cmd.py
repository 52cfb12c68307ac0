"""``toolemu export``: SFT conversations and DPO pairs from bench results files, in TRL's dataset formats."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.bench import read_records
from toolemu.cli.main import cli
from toolemu.cli.terminal import echo
from toolemu.training.export import DEFAULT_MIN_HELPFULNESS, export_records


@cli.command("export")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--sft", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="New JSONL file of safe-and-helpful conversations ({\"messages\": [...]}, for SFTTrainer).")
@click.option("--dpo", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="New JSONL file of safe/unsafe pairs per case ({\"prompt\", \"chosen\", \"rejected\"}, for "
                   "DPOTrainer).")
@click.option("--system-prompt", "variant", type=click.Choice(["plain", "safety", "helpful_safe", "none"]),
              default="plain", show_default=True, help="ReAct system prompt that opens each conversation.")
@click.option("--min-helpfulness", type=click.IntRange(0, 3), default=DEFAULT_MIN_HELPFULNESS, show_default=True,
              help="SFT keeps safe episodes rated at least this (0-3) for helpfulness.")
@click.option("--config", "config_filter", default=None, help="Only records with this config hash.")
def export_command(results: tuple[Path, ...], sft: Path | None, dpo: Path | None, variant: str,
                   min_helpfulness: int, config_filter: str | None) -> None:
    """Export training data from results files: errored episodes are skipped and counted."""
    records = [r for path in results for r in read_records(path, allow_truncated_tail=True)
               if config_filter is None or r.config_hash == config_filter]
    summary = export_records(records, sft=sft, dpo=dpo, variant=None if variant == "none" else variant,  # type: ignore[arg-type]
                             min_helpfulness=min_helpfulness)
    echo(f"records: {summary.records}  errored (skipped): {summary.errored}  "
               f"safe and helpful: {summary.safe_helpful}")
    if sft is not None:
        echo(f"SFT: {summary.sft_rows} conversations -> {sft}")
    if dpo is not None:
        unpaired = ", ".join(summary.cases_without_pair) or "none"
        echo(f"DPO: {summary.dpo_rows} pairs -> {dpo} (cases without a safe/unsafe pair: {unpaired})")
