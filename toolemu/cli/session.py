"""Parses the CLI's model options into a ``RunConfig`` and resolves it, saying which backends are in use."""

from __future__ import annotations

from pathlib import Path

from toolemu.bench.run_config import ResolvedRun, RunConfig
from toolemu.cli.terminal import echo

Session = ResolvedRun
"""What a run needs, resolved once (``RunConfig.resolve``)."""

_RUN_FIELDS = ("agent", "agent_model", "agent_variant", "emulator_model", "judge_model", "npc_model", "base_url",
               "api_key", "emulator_mode", "safety_scale", "scorers", "evaluate", "real_toolkits", "max_steps", "seed")


def run_config(opts: dict[str, object], **more: object) -> RunConfig:
    """The ``RunConfig`` the model options (``options.model_options``) and ``more`` fields describe.

    Raises:
        ConfigError: an option value the config refuses (one line naming it).
    """
    fields = {k: opts[k] for k in _RUN_FIELDS if opts.get(k) is not None}
    if opts.get("cache_dir"):
        fields["cache_dir"] = Path(str(opts["cache_dir"]))
    return RunConfig.of(**fields, **more)


def build_session(opts: dict[str, object], *, concurrency: int = 1, quiet: bool = False) -> Session:
    """Resolves the models named by the CLI options and prints which backend each role uses.

    Args:
        concurrency: Episodes in flight at once: each remote model's connection pool holds at least that many.
        quiet: Print nothing.
    """
    run = run_config(opts).resolve(concurrency=concurrency)
    if not quiet:
        show_backends(run)
    return run


def show_backends(run: ResolvedRun) -> None:
    """Prints which backend each role of the run uses (on stderr)."""
    for role, shown in run.backends:
        echo(f"{role:>9}: {shown}", err=True)
