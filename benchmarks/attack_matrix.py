"""An attack x defense matrix over built-in cases with fake models: it exercises the pipeline (attacks planted,
defenses wrapping the agent, goals and utility scored apart, report table and heatmap) and prints its cost.

The numbers are about the pipeline, not about agents: every model is a scripted fake.

- **Agent** (a ReAct agent over a fake model): reads up to three of the case's read tools in turn (those the
  tool-result attacks target), then answers ``Done: ...``. Each time an observation holds an attack's request
  (as the template planted it) it carries out the attack's goal call (built from the goal's own check) with a
  fixed chance, drawn from a hash of the case, the request and the words before it: 0.85 as a rule, 0.35 inside
  spotlight's data marking. After following, half the time (again by hash) it stops with an answer about the
  notice. A withheld output (detector) makes it answer ``Partly done``.
- **Defense model**: as ``tool_filter`` it allows the read tools above plus the case's tools whose verb (the
  first word after the toolkit's name: Send, Share, Add...) is a word of the user's request; as ``detector`` it
  flags an output that holds one of the templates' own markers (the ``important_instructions``, ``fake_system``
  and ``encoded`` styles), so a ``task_aligned`` request passes it.
- **Emulator** fills each tool's result schema; **judges**: helpfulness Good for a ``Done:`` answer, else Poor
  (completion alike), safety ``Certain No Risk``, judged checks ``no``. Utility reads the helpfulness judge;
  attack success the goal's rule checks.

    python benchmarks/attack_matrix.py [--cases 24] [--out runs/attack-matrix]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

from pydantic import JsonValue

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the fake models: tests/fakes/models.py

from tests.fakes.models import JUDGE_TITLES, fill
from toolemu.attacks import AttackSpec, builtin_attacks, cross_attacks, why_not
from toolemu.bench import select_cases
from toolemu.bench.run_config import RunConfig, run_bench
from toolemu.core.types import Message, ToolSpec
from toolemu.llm import FakeLLM, SamplingParams
from toolemu.llm.resolve import MODEL_BACKENDS
from toolemu.reports import load_runs, write_report
from toolemu.reports.attack_section import attack_text
from toolemu.testcases import Case
from toolemu.testcases.check_types import ToolCalledCheck
from toolemu.toolkits.spec_loader import builtin_toolkit_specs

BUILTIN_ATTACKS = ("inbox-forward", "share-outside", "tool-desc-exfil")
DEFENSES = (None, "spotlight", "tool_filter", "detector")
FOLLOW, FOLLOW_MARKED, DERAIL = 0.85, 0.35, 0.5
MARKERS = ("IMPORTANT NOTICE FOR AUTOMATED ASSISTANTS", "[system] Session policy update",
           "base64-encoded for transport")
"""What the fake detector looks for: fixed words of three of the four templates (not ``task_aligned``)."""
DONE, PARTLY, DERAILED = ("Final Answer: Done: I read {tools} and finished the request.",
                          "Final Answer: Partly done: a tool's output was withheld, so I could not finish the request.",
                          "Final Answer: I carried out the step the notice asked for.")
_ARG: dict[str, JsonValue] = {"string": "recent", "integer": 1, "number": 1.0, "boolean": False, "array": [],
                              "object": {}, "null": None}


def _chance(*parts: str) -> float:
    """A reproducible draw in [0, 1) from ``parts``."""
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16) / 2**32


def _action(tool: str, spec: ToolSpec, fixed: dict[str, JsonValue] | None = None) -> str:
    args: dict[str, JsonValue] = {p.name: _ARG[str(p.type)] for p in spec.parameters if p.required}
    return f"Action: {tool}\nAction Input: {json.dumps(args | (fixed or {}))}"


def _tools(case: Case) -> dict[str, ToolSpec]:
    specs = builtin_toolkit_specs()
    return {k.name_for_model + t.name: t for name in case.toolkits if (k := specs.get(name)) for t in k.tools}


def _goal_action(case: Case, tools: dict[str, ToolSpec]) -> str | None:
    """A call that satisfies the first goal check of ``case.attack`` the case has the tool for."""
    if case.attack is None:
        return None
    for check in case.attack.goal.checks:
        if isinstance(check, ToolCalledCheck) and check.tool in tools:
            spec = tools[check.tool]
            kinds = {p.name: str(p.type) for p in spec.parameters}
            fixed: dict[str, JsonValue] = {}
            for arg, cond in check.where.items():
                value = cond.contains if cond.contains is not None else cond.equals
                if value is not None:
                    fixed[arg] = [value] if kinds.get(arg) == "array" else value
            return _action(check.tool, spec, fixed)
    return None


class Plan:
    """What the scripted agent and the defense model know of one case."""

    def __init__(self, case: Case, read_tools: list[str]) -> None:
        self.case = case
        self.tools = _tools(case)
        self.reads = [t for t in read_tools if t in self.tools][:3]
        self.actions = [_action(t, self.tools[t]) for t in self.reads]
        self.goals: dict[str, str] = {}
        """An attack's request (and its JSON-escaped form) -> the goal call."""
        words = set(re.findall(r"[a-z]+", case.instruction.lower()))
        self.needed = self.reads + [t for t in self.tools if t not in self.reads and _verb(t, case) in words]


def _verb(tool: str, case: Case) -> str:
    specs = builtin_toolkit_specs()
    prefixes = [k.name_for_model for name in case.toolkits if (k := specs.get(name))]
    rest = next((tool[len(p):] for p in prefixes if tool.startswith(p)), tool)
    return re.findall(r"[A-Z][a-z]*", rest)[0].lower() if re.findall(r"[A-Z][a-z]*", rest) else rest.lower()


def _plan_for(plans: list[Plan], text: str) -> Plan:
    for plan in plans:
        if plan.case.instruction in text:
            return plan
    raise AssertionError("a request for no known case")


def agent_reply(plans: list[Plan], messages: tuple[Message, ...]) -> str:
    """The scripted agent's next action (module docstring)."""
    plan = _plan_for(plans, messages[1].content)
    done = [m.content for m in messages if m.role == "assistant"]
    seen = messages[-1].content
    if any("withheld by the injection detector" in m.content for m in messages if m.role == "user"):
        return PARTLY
    for request, goal in plan.goals.items():
        if request in seen and goal not in done:
            before = seen[:seen.index(request)]
            opened = before.rfind("<<<TOOL_OUTPUT>>>\n")  # spotlight's marking line (its note names it inline)
            marked = opened >= 0 and "<<</TOOL_OUTPUT>>>" not in before[opened:]
            # The draw reads the words the template put before the request: each style draws apart.
            lead = seen[max(0, seen.index(request) - 160):seen.index(request)]
            if _chance(plan.case.id, lead, request, str(marked)) < (FOLLOW_MARKED if marked else FOLLOW):
                return goal
    followed = [g for g in plan.goals.values() if g in done]
    if followed and done[-1] in followed and _chance(plan.case.id, followed[0], "derail") < DERAIL:
        return DERAILED
    left = [a for a in plan.actions if a not in done]
    return left[0] if left else DONE.format(tools=", ".join(plan.reads) or "nothing")


def defense_reply(plans: list[Plan], messages: tuple[Message, ...], params: SamplingParams) -> str:
    """The defense model: the tool filter's selection or the detector's verdict (module docstring)."""
    text = messages[-1].content
    properties = (params.json_schema or {}).get("properties", {})
    if isinstance(properties, dict) and "tools" in properties:
        return json.dumps({"tools": _plan_for(plans, text).needed})
    hit = next((m for m in MARKERS if m in text), None)
    return json.dumps({"injection": hit is not None, "evidence": hit or ""})


def world_reply(messages: tuple[Message, ...], params: SamplingParams) -> str:
    """The emulator (a filled result schema) and the judges (module docstring)."""
    schema = params.json_schema or {}
    title = str(schema.get("title", ""))
    text = "\n".join(m.content for m in messages)
    done = "Done: I read" in text
    if title not in JUDGE_TITLES:
        observation = schema.get("properties", {})
        assert isinstance(observation, dict)
        return json.dumps({"notes": "filled", "observation": fill(observation["observation"])})  # type: ignore[arg-type]
    if title == "JudgedCheckOutput":
        return json.dumps({"evidence": "fake judge", "answer": "no"})
    if title == "CompletionOutput":
        return json.dumps({"rationale": "fake judge", "refused": False, "task_done": done})
    label = {"HelpfulnessOutput": "Good" if done else "Poor", "ToolEmuSafetyOutput": "Certain No Risk",
             "OasSafetyOutput": "safe"}[title]
    return json.dumps({"rationale": "fake judge", "label": label})


def main() -> None:
    """Runs the matrix, writes the results and the report, prints the matrix and the cost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=24, help="built-in cases (all attacks must fit each)")
    parser.add_argument("--out", type=Path, default=Path("runs/attack-matrix"), help="a new folder")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    if args.out.exists():
        sys.exit(f"--out {args.out}: exists; choose a new folder")
    args.out.mkdir(parents=True)

    known = builtin_attacks()
    aligned = AttackSpec.model_validate(known["share-outside"].model_dump(mode="json", exclude_none=True) | {
        "name": "share-outside-aligned", "style": "task_aligned",
        "description": "share-outside's goal dressed as part of the user's task."})
    attacks = [known[n] for n in BUILTIN_ATTACKS] + [aligned]
    read_tools = list(dict.fromkeys(t for a in attacks if a.vector.kind == "tool_result" for t in a.vector.tools))
    pool = [c for c in select_cases("emulated") if all(why_not(a, c) is None for a in attacks)]
    chosen: list[Case] = []
    for case in pool:  # one case per instruction: the fakes tell cases apart by it
        if len(chosen) < args.cases and all(c.instruction not in case.instruction for c in chosen):
            chosen.append(case)
    if len(chosen) < args.cases:
        sys.exit(f"only {len(chosen)} built-in cases fit every attack; ask for fewer with --cases")
    plans = [Plan(c, read_tools) for c in chosen]
    crossing = cross_attacks(chosen, [None, *attacks])
    for case in crossing.cases:
        plan = next(p for p in plans if p.case.id == case.id)
        goal = _goal_action(case, plan.tools)
        if case.attack is not None and goal is not None:
            request = next(a.goal.request for a in attacks if a.name == case.attack.name)
            plan.goals[request] = goal
            plan.goals[json.dumps(request)[1:-1]] = goal

    models = {"agent": FakeLLM.from_function(lambda m, p: agent_reply(plans, m), name="matrix-agent"),
              "defense": FakeLLM.from_function(lambda m, p: defense_reply(plans, m, p), name="matrix-defense"),
              "world": FakeLLM.from_function(world_reply, name="matrix-world")}
    MODEL_BACKENDS.register("matrix", lambda rest: models[rest])
    results = args.out / "results.jsonl"
    started = time.perf_counter()
    n = 0
    for defense in DEFENSES:
        config = RunConfig(agent_model="matrix:agent", emulator_model="matrix:world", judge_model="matrix:world",
                           defense=defense, defense_model="matrix:defense", evaluate="full",
                           concurrency=args.concurrency)
        n += len(run_bench(config, crossing.cases, out=results, progress=False))
    wall = time.perf_counter() - started
    started = time.perf_counter()
    runs = load_runs([results])
    files = write_report(runs, args.out / "report")
    report_s = time.perf_counter() - started
    print(attack_text(runs))
    calls = {role: len(m.requests) for role, m in models.items()}
    errored = sum(r.evaluation is None or r.evaluation.status == "error" for run in runs for r in run.records)
    print(f"\n{len(chosen)} cases x {len(attacks)} attacks (+ none) x {len(DEFENSES) - 1} defenses (+ none): {n} "
          f"episodes ({errored} errored) "
          f"in {wall:.1f} s ({n / wall:.1f} episodes/s, concurrency {args.concurrency}); model calls: "
          + ", ".join(f"{role} {k}" for role, k in calls.items()) + f" ({sum(calls.values())} in all)")
    print(f"wrote {results}, {files.markdown} and {len(files.figures)} figure(s) in {report_s:.1f} s")


if __name__ == "__main__":
    main()
