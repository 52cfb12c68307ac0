"""``toolemu models``: which packaged local models are installed, and where their files are."""

from __future__ import annotations

import click

from toolemu.cli.main import cli
from toolemu.llm.embedded import MODELS, cache_dir, model_path, model_status


@cli.command("models")
@click.option("--assemble", is_flag=True, help="Join, verify and cache installed models whose file is missing.")
def models_cmd(assemble: bool) -> None:
    """List the packaged models (llama:<key>), whether they are installed, and their files."""
    click.echo(f"model cache: {cache_dir()}")
    for key in MODELS:
        if assemble and model_status(key).installed:
            model_path(key)
        status = model_status(key)
        model = status.model
        state = "installed" if status.installed else "not installed"
        click.echo(f"\nllama:{key}  {model.title}  [{state}]")
        if not status.installed:
            click.echo(f"  missing: {', '.join(status.missing)}")
            click.echo(f"  install: {model.install_command}")
            continue
        if status.path is None or not status.exists:
            click.echo(f"  file:    {status.path} (not assembled yet; run `toolemu models --assemble`)")
            continue
        size = f"{(status.size or 0) / 2**20:.1f} MiB"
        checked = "sha256 verified" if status.verified else "sha256 not verified yet (checked on first use)"
        click.echo(f"  file:    {status.path} ({size}, {checked})")
