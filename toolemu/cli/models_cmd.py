"""``toolemu models``: which packaged local models are installed, and where their files are."""

from __future__ import annotations

import importlib.metadata

import click

from toolemu.cli.terminal import echo
from toolemu.core.errors import BuildError
from toolemu.llm.embedded import MODELS, cache_dir, model_path, model_status
from toolemu.llm.llama_build import REBUILD_COMMAND, scan_installed
from toolemu.llm.llamacpp import INSTALL_HINT
from toolemu.toolkits.sandbox.doctor import quota_summary


def _runtime() -> str:
    try:
        version = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return f"llama-cpp-python not installed: {INSTALL_HINT}"
    try:
        found = {lib.name: hits for lib, hits in scan_installed().items() if hits}
    except BuildError as e:
        return f"llama-cpp-python {version} (AMX scan not run: {e})"
    if found:
        return (f"llama-cpp-python {version}: NOT PORTABLE, contains AMX code ({', '.join(found)}); "
                f"rebuild with `{REBUILD_COMMAND}`")
    return f"llama-cpp-python {version} (no AMX code)"


@click.command("models")
@click.option("--assemble", is_flag=True, help="Join, verify and cache installed models not assembled yet.")
def models_cmd(assemble: bool) -> None:
    """List the packaged models (use them as llama:<key>), whether they are installed, and their files."""
    echo(f"runtime: {_runtime()}")
    echo(f"model cache: {cache_dir()}")
    echo(f"sandbox limits: {quota_summary()} (every quota and time limit: `toolemu doctor`)")
    for key, model in MODELS.items():
        if assemble and model_status(key).installed:
            model_path(key)
        status = model_status(key)
        echo(f"\nllama:{key}  {model.title}  [{'installed' if status.installed else 'not installed'}]")
        if not status.installed:
            every = len(status.missing) == len(model.distributions) > 1
            missing = f"all {len(model.distributions)} packages" if every else ", ".join(status.missing)
            echo(f"  missing: {missing}")
            echo(f"  install: {model.install_command}")
        elif status.path is None or not status.exists:
            echo(f"  file:    {status.path} (not assembled yet: `toolemu models --assemble` or first use)")
        else:
            size = f"{(status.size or 0) / 2**20:.1f} MiB"
            checked = "sha256 verified" if status.verified else "sha256 not verified yet (checked on first use)"
            echo(f"  file:    {status.path} ({size}, {checked})")
