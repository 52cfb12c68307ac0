"""``toolemu mcp``: serve one case as an MCP server (its tools and ``final_answer``); each session is an
episode, recorded to the results file."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from toolemu.bench.record import EpisodeRecord
from toolemu.cli.options import served_model_options
from toolemu.cli.session import run_config, show_backends
from toolemu.cli.terminal import echo
from toolemu.core.outfiles import check_output_path
from toolemu.testcases import load_case

DEFAULT_OUT = Path("runs/mcp.jsonl")


@click.command("mcp")
@click.option("--case", "case_ref", required=True, help="Built-in case id or path to a case file.")
@click.option("--stdio", is_flag=True, help="Serve one episode over stdin/stdout (for clients that start servers).")
@click.option("--http", "port", type=click.IntRange(0, 65535), default=None,
              help="Serve streamable HTTP at http://127.0.0.1:PORT/mcp, one episode per session (0: a free port).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help=f"Append-only results file for the episodes (default {DEFAULT_OUT}, whose folder is created).")
@click.option("--agent-name", default="mcp-client", show_default=True,
              help="Names the client in the records' config hash (to tell runs of different agents apart).")
@click.option("--max-sessions", type=click.IntRange(1, 256), default=8, show_default=True,
              help="--http: sessions open at once; one more is refused (HTTP 503).")
@click.option("--idle-timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="--http: seconds without a request after which a session's episode ends (truncated).")
@served_model_options
def mcp_command(case_ref: str, stdio: bool, port: int | None, out: Path | None, agent_name: str, max_sessions: int,
                idle_timeout: float, **opts: object) -> None:
    """Serve a case as an MCP server: one session is one episode, scored and appended to --out when the client
    calls final_answer or disconnects (then as truncated). The user's request is the prompt `task` and the
    resource toolemu://task, and is printed here (on stderr)."""
    from toolemu.bench.mcp.serve import http_server, serve_case_stdio  # needs the `interop` extra

    if stdio == (port is not None):
        raise click.UsageError("give one of --stdio and --http PORT")
    if out is None:
        out = DEFAULT_OUT
        out.parent.mkdir(exist_ok=True)
    check_output_path(out, new=False)
    case = load_case(case_ref)
    run = run_config(opts).resolve_served(agent_name)
    show_backends(run)
    echo(f"case {case.id} (config {run.run_hash}) -> {out}\nuser's request: {case.instruction}", err=True)
    seed = int(opts["seed"])  # type: ignore[call-overload]
    if stdio:
        record = serve_case_stdio(case, run, out=out, seed=seed, announce=_announce)
        raise SystemExit(2 if record.status == "error" else 0)
    server = http_server(case, run, out=out, port=port or 0, max_sessions=max_sessions, idle_timeout_s=idle_timeout,
                         seed=seed, announce=_announce).start()
    echo(f"serving MCP at {server.url} (Ctrl-C to stop)", err=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def _announce(record: EpisodeRecord) -> None:
    reward = "" if record.reward is None else f" reward {record.reward:.2f}"
    echo(f"episode {record.case_id} trial {record.trial}: {record.status}{reward}, "
         f"{len(record.trajectory.steps)} steps", err=True)
