"""The built-in emulated suite: every case passes check_case, every reference action is a valid call, and the
rule checks classify every reference run as labelled."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from toolemu.core.capture import Capture
from toolemu.core.trajectory import FinalState, Step, Trajectory
from toolemu.core.types import ToolCall
from toolemu.envs.action import parse_action
from toolemu.rewards.rules import evaluate_checks
from toolemu.testcases import Case, Intent, RiskCategory, builtin_cases, check_case
from toolemu.toolkits.spec_loader import builtin_toolkit_specs, find_specs_near
from toolemu.toolkits.validation import validate_call

SPECS = builtin_toolkit_specs()
EMULATED = [c for c in builtin_cases() if c.source_dir and Path(c.source_dir).name == "emulated"]
IDS = [c.id for c in EMULATED]


def _calls(case: Case, run_index: int) -> tuple[list[ToolCall], str | None]:
    calls: list[ToolCall] = []
    final: str | None = None
    for action in case.all_runs[run_index].actions:
        if isinstance(action, ToolCall):
            calls.append(action)
            continue
        parsed = parse_action(action)
        if parsed.kind == "final":
            final = parsed.final_answer
        else:
            assert parsed.tool_call is not None
            calls.append(parsed.tool_call)
    return calls, final


def test_builtin_emulated_suite_size_and_spread() -> None:
    assert len(EMULATED) >= 8
    assert len({c.risk_category for c in EMULATED}) >= 5
    assert {Intent.BENIGN, Intent.MALICIOUS_USER} <= {c.intent for c in EMULATED}
    assert {name for c in EMULATED for name in c.toolkits} == set(SPECS)


def test_builtin_emulated_suite_has_a_seed_in_every_category_and_intent() -> None:
    seeds = [c for c in EMULATED if c.variant_of is None and c.twin_of is None]
    cells = {(c.risk_category, c.intent) for c in seeds}
    missing = {(r, i) for r in RiskCategory for i in Intent} - cells
    assert not missing, f"no emulated seed for {sorted(missing)}"
    assert len(seeds) >= 40 and sum(c.twin_of is not None for c in EMULATED) >= 25
    variants = Counter(c.variant_of for c in EMULATED if c.variant_of)
    assert sum(n >= 3 for n in variants.values()) >= 32
    uses = Counter(name for c in EMULATED for name in c.toolkits)
    assert min(uses[name] for name in SPECS) >= 3, uses


def test_builtin_emulated_specs_declare_exceptions_for_tools_that_take_arguments() -> None:
    for kit in SPECS.values():
        for tool in kit.tools:
            if any(p.required for p in tool.parameters):
                assert tool.exceptions, f"{kit.toolkit}{tool.name} takes arguments but declares no exception"


@pytest.mark.parametrize("case", EMULATED, ids=IDS)
def test_builtin_case_passes_check_case(case: Case) -> None:
    check_case(case, SPECS, require_reference_runs=True)
    assert case.underspecifications.safety_constraints and case.expected_achievements
    assert case.risky_outcomes and case.risky_actions and case.unsafe_behavior
    # Emulated tools leave no sandbox state: their checks read acts (calls), values sent out, or a judge's answer.
    assert case.checks and all(check.kind in ("tool_called", "value_leaked", "judged", "message_sent")
                               for check in case.checks)


@pytest.mark.parametrize("case", EMULATED, ids=IDS)
def test_builtin_reference_actions_are_valid_calls(case: Case) -> None:
    kits = [SPECS[name] for name in case.toolkits]
    for i, run in enumerate(case.all_runs):
        calls, final = _calls(case, i)
        assert final, f"reference run {i} of {case.id} does not end with a final answer"
        assert isinstance(run.actions[-1], str) and parse_action(run.actions[-1]).kind == "final"
        for call in calls:
            validate_call(call, kits)


@pytest.mark.parametrize("case", EMULATED, ids=IDS)
def test_builtin_reference_runs_classified_by_rule_checks(case: Case) -> None:
    for i, run in enumerate(case.all_runs):
        calls, final = _calls(case, i)
        steps = [Step(index=j, kind="tool", action_text="", tool_call=c) for j, c in enumerate(calls)]
        trajectory = Trajectory(
            case_id=case.id,
            instruction=case.instruction,
            toolkits=case.toolkits,
            steps=tuple(steps),
            final_answer=final,
        )
        outcome = evaluate_checks(case, Capture(trajectory=trajectory, final_state=FinalState()))
        assert not outcome.errored
        if outcome.undecided:  # a judged check has text to judge and no rule check found harm: the judge decides
            assert any(c.kind == "judged" for c in case.checks)
            continue
        assert outcome.unsafe is (run.label == "unsafe"), f"{case.id} run {i} ({run.label}): {outcome.results}"


def test_builtin_suite_all_cases_pass_check_case() -> None:
    from toolemu.toolkits import REAL_TOOLKITS

    cases = builtin_cases()
    assert {c.id for c in EMULATED} < {c.id for c in cases}
    for case in cases:
        specs = {**SPECS, **find_specs_near(case.source_dir or ".")}  # the MCP cases carry theirs (data/mcp)
        check_case(case, specs, known_toolkits=set(REAL_TOOLKITS), require_reference_runs=True)
