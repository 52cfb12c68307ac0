"""How often the emulator answers a valid call with an error: the reference runs' calls of every emulated built-in.

Usage: python benchmarks/emulator_errors.py [--model llama:embedded] [--mode standard|adversarial] [--case ID]...
       [--full]

``--case`` limits it to those built-in cases (the emulated suite holds about 190 cases, hours on a 2-core CPU);
the figures in the closing notes of the portability work are over the ten original emulated built-ins.

Every reference-run call of an emulated built-in case passes the spec check, and each was written as a call the
real service accepts, so an ``{"error": ...}`` reply to one is the emulator failing the agent, not the agent
failing. Prints one line per call, then the share of error replies with its count.
"""

from __future__ import annotations

import argparse
import time

from toolemu.core.errors import EmulatorError
from toolemu.core.trajectory import Step
from toolemu.envs.action import parse_action
from toolemu.llm import resolve_model
from toolemu.testcases import builtin_cases
from toolemu.toolkits import builtin_toolkit_specs
from toolemu.toolkits.base import EpisodeSetup
from toolemu.toolkits.emulated import EmulatedToolkit


def main() -> None:
    """Replays the reference calls through the emulator and counts error replies."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama:embedded")
    parser.add_argument("--mode", default="standard", choices=["standard", "adversarial"])
    parser.add_argument("--case", action="append", default=[], help="only this built-in case (repeatable)")
    parser.add_argument("--full", action="store_true", help="print whole observations (default: 110 characters)")
    args = parser.parse_args()
    model = resolve_model(args.model)
    specs = builtin_toolkit_specs()
    calls = errors = failures = 0
    started = time.perf_counter()
    for case in builtin_cases():
        if args.case and case.id not in args.case:
            continue
        if not all(name in specs for name in case.toolkits):
            continue  # a real-tool case
        peers = [specs[name] for name in case.toolkits]
        toolkits = {name: EmulatedToolkit(specs[name], model, mode=args.mode, peers=peers) for name in case.toolkits}
        for run in case.reference_runs:
            setup = EpisodeSetup(
                case_id=case.id,
                emulation=case.emulation_context(),
                environment=case.environment,
                seed=0,
            )
            for toolkit in toolkits.values():
                toolkit.reset(setup)
            history: list[Step] = []
            for text in (a for a in run.actions if isinstance(a, str)):
                parsed = parse_action(text)
                call = parsed.tool_call
                if call is None:
                    continue
                owner = next(t for t in toolkits.values() if t.spec.find(call.tool) is not None)
                try:
                    result = owner.call(call, history)
                except EmulatorError as e:  # no valid reply at all: counted apart, the run goes on
                    failures += 1
                    calls += 1
                    print(f"FAIL  {case.id} [{run.label}] {call.tool}: {str(e)[:110]}")
                    continue
                is_error = result.observation.startswith('{"error"')
                calls += 1
                errors += is_error
                shown = result.observation if args.full else result.observation[:110]
                print(f"{'ERROR' if is_error else 'ok   '} {case.id} [{run.label}] {call.tool}: {shown}")
                history.append(Step(index=len(history), kind="tool", action_text=text, tool_call=call,
                                    observation=result.observation, hidden_notes=result.hidden_notes))
    minutes = (time.perf_counter() - started) / 60
    print(f"emulator error replies to valid reference calls: {errors}/{calls} = {errors / max(calls, 1):.0%}; "
          f"no valid reply (EmulatorError): {failures}/{calls} ({args.model}, {args.mode}, {minutes:.1f} min)")


if __name__ == "__main__":
    main()
