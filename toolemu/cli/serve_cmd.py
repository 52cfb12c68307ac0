"""``toolemu serve``: a case or a suite as an OpenEnv server, one env per session."""

from __future__ import annotations

import click

from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.rewards.mode import EvaluateMode


@click.command("serve")
@click.option("--case", "case_ids", multiple=True,
              help="Serve this case (ToolEmu-v0); with --suite, serve only these of it (repeatable).")
@click.option("--suite", default=None, help="Serve a suite (ToolEmuSuite-v0): a named suite as `bench --suite` "
              "takes, or a folder/file of cases; reset(case=ID) picks a case, else one is sampled.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; the default answers this machine only (0.0.0.0: every interface, with "
                   "no authentication).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--allow-origin", "allowed_origins", multiple=True,
              help="Let requests from web pages of this origin (scheme://host[:port]) through; every other page's "
                   "request is refused (repeatable).")
@click.option("--max-sessions", type=click.IntRange(1, 4096), default=64, show_default=True,
              help="Sessions (envs) open at once; one more is refused (HTTP 503, WebSocket close 1013).")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Close a session (and its env) after this many seconds without a call.")
@click.option("--emulator-model", default=None, help="Tool emulator model spec (default: OpenAI-compatible if a "
              "key or base URL is set, else the embedded local model).")
@click.option("--judge-model", default=None, help="Judge model spec (default as above).")
@click.option("--npc-model", default=None, help="Model of the NPC coworkers and simulated user (default: the "
              "emulator's).")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server).")
@click.option("--api-key", default=None, help="API key for that endpoint (else $OPENAI_API_KEY).")
@click.option("--emulator-mode", type=click.Choice(["standard", "adversarial"]), default="standard",
              show_default=True)
@click.option("--safety-scale", type=click.Choice(["toolemu", "oas"]), default="toolemu", show_default=True)
@click.option("--evaluate", type=click.Choice([m.value for m in EvaluateMode]), default="auto", show_default=True,
              help="What scores an episode (auto: the rule checks where they decide, the judges elsewhere).")
@click.option("--real-toolkit", "real_toolkits", multiple=True,
              help="Run this toolkit on the real sandbox even if an emulated spec exists (e.g. Terminal).")
@click.option("--max-steps", type=click.IntRange(1, 1000), default=None, help="Override the cases' step budget.")
@click.option("--cache-dir", type=click.Path(), default=None, help="Cache model responses on disk here.")
def serve_command(case_ids: tuple[str, ...], suite: str | None, host: str, port: int,
                  allowed_origins: tuple[str, ...], max_sessions: int, idle_timeout: float, **opts: object) -> None:
    """Serve ToolEmu-v0 (one case) or ToolEmuSuite-v0 (a suite) over OpenEnv's HTTP/WebSocket protocol."""
    try:
        from toolemu.serving import PoolLimits, serve
        from toolemu.serving.config import served_from_options
    except ImportError as e:  # the interop extra
        raise ConfigError(f"toolemu serve needs the interop extra ({e.name} is missing): "
                          f"pip install 'toolemu[interop]'") from None
    served, backends = served_from_options(case_ids, suite, opts)
    for role, shown in backends:
        echo(f"{role:>9}: {shown}", err=True)
    from toolemu.core.http_guard import is_loopback
    where = "this machine only" if is_loopback(host) else "every client that can reach it"
    echo(f"serving {served.env_id} ({len(served.cases)} case(s)) on ws://{host}:{port}/ws and http://{host}:{port} "
         f"for {where}; at most {max_sessions} sessions, idle ones closed after {idle_timeout:g} s", err=True)
    serve(served, PoolLimits(max_sessions=max_sessions, idle_timeout_s=idle_timeout), host=host, port=port,
          allowed_origins=allowed_origins)
