"""Does planted content reach the agent in standard mode? Emulated reference calls with and without ``world``.

Usage: python benchmarks/emulator_world.py [--model llama:embedded] [--case ID]... [--limit 5]

For each emulated built-in case with a ``world`` (default: the first ``--limit`` seeds whose intent is
``benign_user_malicious_npc``), replays its safe reference run's calls through the emulator in standard mode,
once with the case as it is and once with ``world`` removed, and counts the calls whose observation shows at least
one of the world's distinctive values (an e-mail address, a URL, an account number, an id with digits) that no
call so far has supplied. Without ``world`` the standard emulator knows only the instruction, so such values
appear only by chance.
"""

from __future__ import annotations

import argparse
import json
import re
import time

from toolemu.core.errors import EmulatorError
from toolemu.core.trajectory import Step
from toolemu.envs.action import parse_action
from toolemu.llm import resolve_model
from toolemu.llm.backend import ChatModel
from toolemu.testcases import Case, builtin_cases
from toolemu.toolkits import builtin_toolkit_specs
from toolemu.toolkits.base import EpisodeSetup
from toolemu.toolkits.emulated import EmulatedToolkit

_DISTINCTIVE = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail addresses
    r"|https?://[^\s\"'<>]+"  # URLs
    r"|\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,}"  # IBAN-like account numbers
    r"|\b[A-Za-z]+[-_]\d{3,}\b"  # ids such as evt-6201, INV-2231
)


def distinctive(world: tuple[str, ...]) -> set[str]:
    """The values in ``world`` that an emulator would not invent by chance.

    Examples:
        >>> sorted(distinctive(("Mail from a@b.io about evt-6201: pay GB29 NWBK 6016 1331 9268 19.",)))
        ['GB29 NWBK 6016 1331 9268 19', 'a@b.io', 'evt-6201']
    """
    return {m.group(0).rstrip(".,;:)") for fact in world for m in _DISTINCTIVE.finditer(fact)}


def _normal(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def replay(case: Case, model: ChatModel, specs: dict[str, object]) -> tuple[int, int, int]:
    """Returns (calls, calls showing a world value, calls with no valid reply) for the safe reference run."""
    peers = [specs[name] for name in case.toolkits]
    toolkits = [EmulatedToolkit(specs[name], model, mode="standard", peers=peers) for name in case.toolkits]  # type: ignore[arg-type]
    setup = EpisodeSetup(case_id=case.id, emulation=case.emulation_context(), environment=case.environment, seed=0)
    for toolkit in toolkits:
        toolkit.reset(setup)
    wanted = {_normal(v) for v in distinctive(case.world)}
    run = next(r for r in case.reference_runs if r.label == "safe")
    history: list[Step] = []
    calls = shown = failed = 0
    supplied = ""  # what the agent's calls so far have said: a value echoed from them reveals nothing
    for text in (a for a in run.actions if isinstance(a, str)):
        call = parse_action(text).tool_call
        if call is None:
            continue
        owner = next(t for t in toolkits if t.spec.find(call.tool) is not None)
        supplied += _normal(json.dumps(call.arguments, ensure_ascii=False))
        calls += 1
        try:
            result = owner.call(call, history)
        except EmulatorError:
            failed += 1
            continue
        shown += any(v in _normal(result.observation) and v not in supplied for v in wanted)
        history.append(Step(index=len(history), kind="tool", action_text=text, tool_call=call,
                            observation=result.observation, hidden_notes=result.hidden_notes))
    return calls, shown, failed


def main() -> None:
    """Prints, per case, the calls that show a world value with and without ``world``, then the totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama:embedded")
    parser.add_argument("--case", action="append", default=[], help="this built-in case (repeatable)")
    parser.add_argument("--limit", type=int, default=5, help="seeds to take when no --case is given")
    args = parser.parse_args()
    model = resolve_model(args.model)
    specs = builtin_toolkit_specs()
    emulated = [c for c in builtin_cases() if c.world and all(n in specs for n in c.toolkits)]
    if args.case:
        cases = [c for c in emulated if c.id in args.case]
    else:
        cases = [c for c in emulated if c.intent is not None and c.intent.value == "benign_user_malicious_npc"
                 and c.variant_of is None and c.twin_of is None][: args.limit]
    totals = {"with": [0, 0, 0], "without": [0, 0, 0]}
    started = time.perf_counter()
    for case in cases:
        line = []
        for name, variant in (("with", case), ("without", case.model_copy(update={"world": ()}))):
            calls, shown, failed = replay(variant, model, specs)  # type: ignore[arg-type]
            totals[name] = [a + b for a, b in zip(totals[name], (calls, shown, failed), strict=True)]
            line.append(f"{name} world: {shown}/{calls} calls show a world value ({failed} no valid reply)")
        print(f"{case.id}: " + "; ".join(line), flush=True)
    for name, (calls, shown, failed) in totals.items():
        print(f"{name} world: {shown}/{calls} = {shown / max(calls, 1):.0%} of calls show a world value; "
              f"{failed} with no valid reply")
    print(f"({len(cases)} cases, {model.name}, standard mode, {(time.perf_counter() - started) / 60:.1f} min)")


if __name__ == "__main__":
    main()
