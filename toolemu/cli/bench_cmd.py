"""``toolemu bench``: an agent over a suite of cases, with concurrency, resume and a metrics summary."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.agents.defenses import DEFENSES, NO_DEFENSE
from toolemu.attacks import cross_attacks, load_attacks
from toolemu.bench import summarise_retries
from toolemu.bench.run_config import DEFAULT_AGENT_TIMEOUT_S, run_bench
from toolemu.bench.suite import select_cases
from toolemu.cli.options import model_options
from toolemu.cli.session import run_config, show_backends
from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.core.limits import MAX_CONCURRENCY, MAX_TRIALS
from toolemu.core.outfiles import check_output_path
from toolemu.reports.case_section import case_metric_text
from toolemu.rewards.attack_metrics import attack_figures, render_attack_figures
from toolemu.rewards.metrics import compute_metrics
from toolemu.rewards.summary import render_summary

DEFAULT_OUT = Path("runs/results.jsonl")


@click.command("bench")
@click.option("--suite", default="builtin", show_default=True,
              help="A named suite (all/builtin, smoke, emulated, real, social, seeds, twins, or a risk category such "
                   "as privacy_breach), or a folder/file of cases.")
@click.option("--case", "case_ids", multiple=True, help="Run only these case ids (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Run at most this many cases.")
@click.option("--trials", type=click.IntRange(1, MAX_TRIALS), default=1, show_default=True,
              help="Episodes per case.")
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True,
              help="Episodes in flight.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help=f"Append-only results file; re-running resumes. Its folder must exist (default {DEFAULT_OUT}, "
                   "whose folder is created).")
@click.option("--attack", "attacks", default=None, metavar="NAME[,NAME]",
              help="Run each case under these attacks (built-in names or attack files; `none`: also unattacked); "
                   "each (case, attack) is its own record.")
@click.option("--retry-errors", is_flag=True, help="Also re-run episodes whose latest record is an error.")
@click.option("--executor", type=click.Choice(["threads", "processes", "ray"]), default="threads",
              show_default=True,
              help="threads: episodes on this machine; processes: on this machine in --workers processes (for "
                   "high concurrency against a fast endpoint); ray: as Ray tasks (pip install 'toolemu[ray]').")
@click.option("--workers", type=click.IntRange(min=1, max=256), default=None,
              help="Worker processes for --executor processes (default: the CPUs this process may use).")
@click.option("--ray-address", default=None,
              help="Ray cluster to run on (ray://head:10001, auto); default $RAY_ADDRESS, else a local instance.")
@click.option("--ray-cpus-per-episode", type=click.FloatRange(min=0.01), default=1.0, show_default=True,
              help="CPUs Ray reserves per episode task (below 1 packs model-bound episodes onto a CPU).")
@click.option("--agent-mcp-command", default=None,
              help="Run this external MCP agent instead of --agent: a shell command, started per episode with the "
                   "episode's MCP server URL in $TOOLEMU_MCP_URL, {url} and {instruction} replaced (shell-quoted), "
                   "and the instruction on stdin (README: Cases as MCP servers).")
@click.option("--agent-timeout", type=click.FloatRange(min=1), default=DEFAULT_AGENT_TIMEOUT_S, show_default=True,
              help="Seconds an --agent-mcp-command may run per episode; past that it is killed (an error record).")
@click.option("--defense", "defenses", multiple=True,
              help="Run the agent behind this defense (repeatable or comma-separated; each is its own run, `none` "
                   f"for none): {', '.join([NO_DEFENSE, *DEFENSES])}. See README, Defenses.")
@click.option("--defense-model", default=None, help="Model spec of the tool filter and the detector (default: the "
              "agent's model).")
@click.option("--guard-policy", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The trained guard policy (.zip from `toolemu train guard`) for --defense guard.")
@model_options
def bench_command(suite: str, case_ids: tuple[str, ...], limit: int | None, trials: int, concurrency: int,
                  out: Path, attacks: str | None, retry_errors: bool, executor: str, workers: int | None,
                  ray_address: str | None, ray_cpus_per_episode: float, agent_mcp_command: str | None,
                  agent_timeout: float, defenses: tuple[str, ...], defense_model: str | None,
                  guard_policy: Path | None, **opts: object) -> None:
    """Run an agent over a suite and print safety and helpfulness metrics with confidence intervals."""
    config = run_config(opts, trials=trials, concurrency=concurrency, executor=executor, workers=workers,
                        ray_address=ray_address, ray_cpus_per_episode=ray_cpus_per_episode,
                        agent_mcp_command=agent_mcp_command, agent_timeout_s=agent_timeout,
                        defense_model=defense_model, guard_policy=guard_policy)
    try:
        config.check_executor()
    except ConfigError as e:
        raise click.UsageError(str(e)) from None
    if out is None:
        out = DEFAULT_OUT
        out.parent.mkdir(exist_ok=True)
    check_output_path(out, new=False)
    cases = select_cases(suite, case_ids, limit, real_toolkits=config.real_toolkits)
    if attacks is not None:
        crossing = cross_attacks(cases, load_attacks([a.strip() for a in attacks.split(",") if a.strip()]),
                                 config.real_toolkits)
        for name in dict.fromkeys([*crossing.applied, *crossing.skipped]):
            echo(f"attack {name}: {crossing.applied[name]} cases, {crossing.skipped[name]} skipped (it does not "
                 "fit them)", err=True)
        if not crossing.cases:
            raise ConfigError(f"--attack {attacks}: no attack applies to any selected case")
        cases = list(crossing.cases)
    names: list[str | None] = [n.strip() for d in defenses for n in d.split(",") if n.strip()] or [None]
    runs = [config.model_copy(update={"defense": name}) for name in dict.fromkeys(names)]
    resolved = [c.resolve() for c in runs]  # every defense is checked (and its policy loaded) before any episode
    for run_cfg, run in zip(runs, resolved, strict=True):
        show_backends(run)
        shown = run_cfg.executors()[2]
        defended = f", defense {run.defense}" if run.defense else ""
        echo(f"{len(cases)} cases x {trials} trials -> {out} (config {run.run_hash}{defended}, {shown})", err=True)
        records = run_bench(run_cfg, cases, out=out, retry_errors=retry_errors, run=run)
        echo(render_summary(compute_metrics(records)))
        extra = case_metric_text(records)
        if extra:
            echo(extra)
        if attacks is not None:
            echo(render_attack_figures(attack_figures(records)))
        echo(summarise_retries(records))
