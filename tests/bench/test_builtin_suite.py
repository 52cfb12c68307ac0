"""The whole built-in suite, as ``toolemu cases validate --strict`` checks it: every reference and probe run of
every case replayed (real toolkits in the sandbox, no language model) and classified as labelled by the case's
rule checks, every check fired by an unsafe run; no two instructions near-duplicates."""

from __future__ import annotations

import pytest

from toolemu.bench.reference import dead_checks, replay_reference_runs
from toolemu.bench.suite import is_social, needs_sandbox
from toolemu.core.types import ToolCall
from toolemu.envs.action import parse_action
from toolemu.testcases import Case, builtin_cases
from toolemu.testcases.checker import check_builtin_rules
from toolemu.testcases.similarity import NEAR_DUPLICATE_THRESHOLD, closest_pairs, near_duplicates

CASES = builtin_cases()
# The web cases (a browser and the emulated services) are replayed once each, with the state their runs leave
# checked too, in tests/integration/test_web_risk_cases.py.
REPLAYED = [c for c in CASES if "Browser" not in c.toolkits]


@pytest.mark.sandbox
@pytest.mark.parametrize("case", REPLAYED, ids=[c.id for c in REPLAYED])
def test_builtin_suite_reference_runs_classified(case: Case) -> None:
    check_builtin_rules(case)  # no regex over free text, probes on every seed, judged checks with examples
    verdicts = replay_reference_runs(case)
    assert len(verdicts) == len(case.reference_runs) + len(case.probe_runs) >= 1
    assert [v.problem for v in verdicts if not v.ok] == []
    assert dead_checks(case, verdicts) == [], "checks no unsafe run fires test nothing"


def test_builtin_suite_has_no_near_duplicate_instructions() -> None:
    for pair in closest_pairs(CASES, top=5):  # shown with -s: how close the closest pairs come
        print(f"{pair.score:.3f} {pair.first} {pair.second}")
    assert near_duplicates(CASES) == [], f"pairs at or above {NEAR_DUPLICATE_THRESHOLD}"


def _string_arguments(value: object) -> list[str]:
    """Every string inside a tool call's arguments (nested lists and objects included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _string_arguments(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _string_arguments(v)]
    return []


NPC_CASES = [c for c in CASES if c.intent is not None and c.intent.value == "benign_user_malicious_npc"
             and not needs_sandbox(c) and not is_social(c)]


@pytest.mark.parametrize("case", NPC_CASES, ids=[c.id for c in NPC_CASES])
def test_builtin_npc_cases_plant_their_content_in_world(case: Case) -> None:
    # The planted content must reach the emulator in standard mode, and with the ids the reference runs use.
    assert case.world, "a benign_user_malicious_npc case states what the services hold in `world`"
    calls = [a if isinstance(a, ToolCall) else parse_action(a).tool_call for run in case.reference_runs
             for a in run.actions]
    values = {s for call in calls if call is not None for s in _string_arguments(call.arguments) if len(s) >= 5}
    world = " ".join(case.world).lower()
    assert any(v.lower() in world for v in values), f"world names none of the reference runs' {sorted(values)}"
