"""``toolemu replay`` (re-run an OpenHands event log through a case's env) and ``toolemu cases
import-openhands`` (record it without running it)."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.bench.record import append_record
from toolemu.bench.replay import (
    ReplayResult,
    import_log,
    released_beside,
    released_verdict,
    replay_log,
    rule_verdict,
)
from toolemu.cli.cases_cmd import cases
from toolemu.cli.main import cli
from toolemu.cli.terminal import echo
from toolemu.core.errors import CaseError
from toolemu.core.outfiles import check_output_path
from toolemu.core.untrusted import load_data
from toolemu.testcases import load_case
from toolemu.testcases.openhands import load_openhands_log


def read_released(path: Path) -> dict[str, object]:
    """Reads a released OAS verdict (``.eval.json``).

    Raises:
        CaseError: The file is not a JSON object.
    """
    data = load_data(path, what="released verdict")
    if not isinstance(data, dict):
        raise CaseError(f"{path}: a released verdict is a JSON object with `checkpoints`, got {type(data).__name__}")
    return data


def report(result: ReplayResult, released: Path | None) -> None:
    """Prints the verdict line (ours against the released one) and the replay's notes."""
    record = result.record
    line = f"{record.case_id}: {len(record.trajectory.steps)} step(s), {record.status}; rule verdict: " \
           f"{rule_verdict(record)}"
    if released is not None:
        line += f"; released verdict: {released_verdict(read_released(released))}"
    echo(line)
    for note in result.notes:
        echo(f"  note: {note}", err=True)


@cli.command("replay")
@click.argument("run_log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--case", "case_ref", required=True, help="The case to replay it in (id, case file or folder).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the episode record to this new results file (JSON lines, as bench writes).")
@click.option("--released", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Released verdict to compare with (default: <run>.eval.json beside the log, if any).")
@click.option("--no-clock", is_flag=True,
              help="Run at the real time, not at the log's timestamps (which need libfaketime).")
def replay_command(run_log: Path, case_ref: str, out: Path | None, released: Path | None, no_clock: bool) -> None:
    """Replay an OpenHands run: its commands, cells and edits go through the env; rule checks score it.

    The sandbox runs at the log's own times, with the command time limit its durations need and OAS's service
    ports answering (503, not emulated).
    """
    if out is not None:
        check_output_path(out)
    case = load_case(case_ref)
    log = load_openhands_log(run_log)
    result = replay_log(case, log, clock=not no_clock)
    report(result, released or released_beside(run_log))
    if out is not None:
        append_record(out, result.record)
        echo(f"wrote {out}", err=True)


@cases.command("import-openhands")
@click.argument("run_log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--case", "case_ref", required=True, help="The case the run was of (id, case file or folder).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="New results file for the record (JSON lines; `toolemu rescore` adds the judges).")
@click.option("--released", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Released OAS verdict standing in for the evaluator (default: <run>.eval.json beside the log).")
def import_openhands_command(run_log: Path, case_ref: str, out: Path, released: Path | None) -> None:
    """Import an OpenHands run as an episode record without executing it.

    The steps keep the observations OpenHands recorded; there are no final files, so checks that read them
    are errors unless a released verdict stands in for the OAS evaluator (it is marked as released).
    """
    check_output_path(out)
    case = load_case(case_ref)
    log = load_openhands_log(run_log)
    released = released or released_beside(run_log)
    data = read_released(released) if released is not None else None
    result = import_log(case, log, released=data, released_source=str(released or ""))
    report(result, released)
    append_record(out, result.record)
    echo(f"wrote {out}", err=True)
