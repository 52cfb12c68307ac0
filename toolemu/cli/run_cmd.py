"""``toolemu run``: one case, one episode; prints the trajectory and the scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import click

from toolemu.bench import run_episode
from toolemu.cli.options import model_options
from toolemu.cli.render import render_record
from toolemu.cli.session import build_session
from toolemu.cli.terminal import echo, one_line
from toolemu.core.errors import ANY_EXPECTED_FAULT
from toolemu.core.outfiles import check_output_path, dump_json, write_new
from toolemu.core.untrusted import scrub_surrogates
from toolemu.envs import INFO_STATUS, INFO_STEP, ToolEmuEnv
from toolemu.testcases import load_case


@click.command("run")
@click.option("--case", "case_ref", required=True, help="Built-in case id or path to a case file.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the episode record (trajectory, final state, evaluation) as JSON to this new file "
                   "(an existing file is never overwritten).")
@click.option("--quiet", is_flag=True, help="No per-step progress lines on stderr.")
@model_options
def run_command(case_ref: str, out: Path | None, quiet: bool, **opts: object) -> None:
    """Run one episode of a case and print the trajectory and the scores.

    A progress line per step goes to stderr (local models take seconds to minutes per step).
    """
    if out is not None:  # refused before the episode runs, so no work is lost to a bad path
        check_output_path(out)
    case = load_case(case_ref)
    session = build_session(opts)
    env = ToolEmuEnv(case, session.env_config)
    try:
        record = run_episode(env, session.make_agent(), seed=int(opts["seed"]),  # type: ignore[call-overload]
                             config_hash=session.run_hash, on_step=None if quiet else _progress(env))
    finally:
        try:
            env.close()
        except ANY_EXPECTED_FAULT as e:  # the episode's record still prints and is written
            echo(f"warning: closing the env failed: {type(e).__name__}: {one_line(e)}", err=True)
    echo(scrub_surrogates(render_record(record)))
    if out is not None:
        write_new(out, dump_json(record, indent=2))
        echo(f"wrote {out}", err=True)
    if record.status == "error":
        raise SystemExit(2)


def _progress(env: ToolEmuEnv) -> Callable[[Mapping[str, object], float], None]:
    def show(info: Mapping[str, object], seconds: float) -> None:
        steps = env.trajectory().steps
        what = "no step"
        if steps:
            step = steps[-1]
            call = step.tool_call.tool if step.tool_call is not None else ""
            what = f"{step.kind} {call}".strip()
        status = info[INFO_STATUS]
        end = "" if status == "running" else f" -> {status} (evaluation included)"
        echo(f"step {info[INFO_STEP]}/{env.max_steps}: {what}, {seconds:.1f}s{end}", err=True)

    return show
