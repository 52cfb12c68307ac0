"""``toolemu run``: one case, one episode; prints the trajectory and the scores."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.bench import run_episode
from toolemu.cli.main import cli
from toolemu.cli.options import model_options
from toolemu.cli.render import render_record
from toolemu.cli.session import build_session
from toolemu.envs import ToolEmuEnv
from toolemu.testcases import load_case


@cli.command("run")
@click.option("--case", "case_ref", required=True, help="Built-in case id or path to a case file.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the episode record (trajectory, final state, evaluation) as JSON here.")
@model_options
def run_command(case_ref: str, out: Path | None, **opts: object) -> None:
    """Run one episode of a case and print the trajectory and the scores."""
    case = load_case(case_ref)
    session = build_session(opts)
    env = ToolEmuEnv(case, session.env_config)
    try:
        record = run_episode(env, session.make_agent(), seed=int(opts["seed"]),  # type: ignore[call-overload]
                             config_hash=session.run_hash)
    finally:
        env.close()
    click.echo(render_record(record))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(record.model_dump_json(indent=2), encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
    if record.status == "error":
        raise SystemExit(2)
