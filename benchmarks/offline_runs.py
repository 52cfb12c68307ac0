"""Offline episodes on the embedded model, one after another: status, steps, minutes and emulator error replies.

Usage: python benchmarks/offline_runs.py CASE... [--out DIR] [--max-steps N]

Runs each case as ``toolemu run`` does with no key and no network (agent, emulator and judges on
``llama:embedded``), writes each episode record to ``DIR/<case>.json``, prints a progress line per step and,
at the end, one line per case and every tool call the emulator answered with an error (the call passed the
spec check, so each is either the emulator failing a valid call or an agent mistake the spec cannot see, such
as an id that does not exist: read them). ``--summarise DIR`` prints the table again from the saved records.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from toolemu.bench import run_episode
from toolemu.bench.record import EpisodeRecord
from toolemu.cli.session import build_session
from toolemu.core.outfiles import dump_json
from toolemu.envs import INFO_STATUS, INFO_STEP, ToolEmuEnv
from toolemu.testcases import load_case


def _session_options(max_steps: int | None) -> dict[str, object]:
    return {
        "agent_model": None, "agent_variant": "plain", "emulator_model": None, "judge_model": None,
        "npc_model": None, "base_url": None, "api_key": None, "emulator_mode": "standard",
        "safety_scale": "toolemu", "evaluate": "full", "real_toolkits": (), "max_steps": max_steps, "seed": 0,
        "cache_dir": None,
    }


def _run(case_id: str, out: Path, max_steps: int | None) -> None:
    case = load_case(case_id)
    session = build_session(_session_options(max_steps))
    env = ToolEmuEnv(case, session.env_config)
    started = time.perf_counter()

    def progress(info: object, seconds: float) -> None:
        assert isinstance(info, dict)
        print(f"  {case_id} step {info[INFO_STEP]}/{env.max_steps} {info[INFO_STATUS]} {seconds:.0f}s", flush=True)

    try:
        record = run_episode(env, session.make_agent(), seed=0, config_hash=session.run_hash, on_step=progress)
    finally:
        env.close()
    (out / f"{case_id}.json").write_text(dump_json(record, indent=2), encoding="utf-8")
    print(f"{case_id}: {record.status} after {time.perf_counter() - started:.0f}s", flush=True)


def _is_error_reply(observation: str) -> bool:
    """An emulated tool's error answer is an observation ``{"error": "..."}`` (the call itself ran)."""
    try:
        value = json.loads(observation.split("\n[toolemu:")[0])
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"error"}


def _summarise(out: Path) -> None:
    calls = errored = 0
    lines, errors = [], []
    for path in sorted(out.glob("*.json")):
        record = EpisodeRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
        steps = record.trajectory.steps
        tool_steps = [s for s in steps if s.tool_call is not None and s.outcome in ("executed", "errored")]
        bad = [s for s in tool_steps if s.outcome == "errored" or _is_error_reply(s.observation)]
        calls += len(tool_steps)
        errored += len(bad)
        error = f" ({record.error.boundary}: {record.error.message[:90]})" if record.error else ""
        lines.append(
            f"{record.case_id:32} {record.status:9} steps {len(steps):2}  {record.seconds / 60:5.1f} min  "
            f"tool calls {len(tool_steps):2}, answered with an error {len(bad)}  reward {record.reward}{error}"
        )
        for s in bad:
            assert s.tool_call is not None
            errors.append(f"  {record.case_id} step {s.index}: {s.tool_call.tool} {json.dumps(s.tool_call.arguments)}"
                          f"\n      -> {s.observation[:160]}")
    print("\n".join(lines))
    print(f"emulator error replies: {errored}/{calls} tool calls that passed the spec check")
    print("\n".join(errors))


def main() -> None:
    """Runs the cases (or re-reads their records) and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--out", type=Path, default=Path("runs/offline"))
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--summarise", action="store_true", help="only print the table from the saved records")
    args = parser.parse_args()
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(key, None)  # offline: the embedded model, whatever the shell has set
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summarise:
        for case_id in args.cases:
            if (args.out / f"{case_id}.json").exists():
                print(f"{case_id}: already in {args.out}, skipped")
                continue
            _run(case_id, args.out, args.max_steps)
    _summarise(args.out)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other work slows every figure)")


if __name__ == "__main__":
    main()
