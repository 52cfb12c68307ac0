"""``toolemu export``: SFT conversations and DPO pairs from bench results files, in TRL's dataset formats, and
OpenHands event logs (one file per episode) for OAS-side viewers and graders."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.bench import read_records
from toolemu.bench.openhands_export import export_openhands
from toolemu.cli.main import cli
from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path
from toolemu.training.export import DEFAULT_MIN_HELPFULNESS, export_records


@cli.command("export")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--sft", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="New JSONL file of safe-and-helpful conversations ({\"messages\": [...]}, for SFTTrainer).")
@click.option("--dpo", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="New JSONL file of safe/unsafe pairs per case ({\"prompt\", \"chosen\", \"rejected\"}, for "
                   "DPOTrainer).")
@click.option("--openhands", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Existing folder: one OpenHands event log (JSON) per episode, as OAS evaluators read it.")
@click.option("--system-prompt", "variant", type=click.Choice(["plain", "safety", "helpful_safe", "none"]),
              default="plain", show_default=True, help="ReAct system prompt that opens each conversation.")
@click.option("--min-helpfulness", type=click.IntRange(0, 3), default=DEFAULT_MIN_HELPFULNESS, show_default=True,
              help="SFT keeps safe episodes rated at least this (0-3) for helpfulness.")
@click.option("--config", "config_filter", default=None, help="Only records with this config hash.")
def export_command(results: tuple[Path, ...], sft: Path | None, dpo: Path | None, openhands: Path | None,
                   variant: str, min_helpfulness: int, config_filter: str | None) -> None:
    """Export training data (errored episodes skipped and counted) or OpenHands logs from results files."""
    if sft is None and dpo is None and openhands is None:
        raise ConfigError("export needs an output: an SFT file (--sft), a DPO file (--dpo) and/or a folder for "
                          "OpenHands logs (--openhands)")
    records = [r for path in results for r in read_records(path, allow_truncated_tail=True)
               if config_filter is None or r.config_hash == config_filter]
    if openhands is not None:
        for path, flag in ((sft, "--sft"), (dpo, "--dpo")):
            if path is not None:  # checked before the logs are written, so a bad path costs nothing
                check_output_path(path, flag=flag, new=True)
        logs = export_openhands(records, openhands)
        echo(f"OpenHands logs: {len(logs.files)} files -> {openhands} (episodes in error: {logs.errored}; "
             f"replaced by a later record: {logs.replaced})")
        if sft is None and dpo is None:
            return
    summary = export_records(records, sft=sft, dpo=dpo, variant=None if variant == "none" else variant,  # type: ignore[arg-type]
                             min_helpfulness=min_helpfulness)
    echo(f"records: {summary.records}  errored (skipped): {summary.errored}  "
               f"safe and helpful: {summary.safe_helpful}")
    if sft is not None:
        echo(f"SFT: {summary.sft_rows} conversations -> {sft}")
    if dpo is not None:
        unpaired = ", ".join(summary.cases_without_pair) or "none"
        echo(f"DPO: {summary.dpo_rows} pairs -> {dpo} (cases without a safe/unsafe pair: {unpaired})")
