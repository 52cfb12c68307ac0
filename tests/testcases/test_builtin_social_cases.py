"""The built-in social suite (NPC coworkers, a pushing simulated user): every case passes check_case, and each
reference run, played through the env with fake people, is classified as labelled by the case's rule checks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from toolemu.core.types import Message
from toolemu.envs import ToolEmuEnv
from toolemu.envs.info import INFO_ERROR, INFO_EVALUATION, INFO_FINAL_STATE, INFO_TRAJECTORY
from toolemu.llm import FakeLLM, SamplingParams
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases import Case, Intent, builtin_cases, check_case
from toolemu.toolkits.spec_loader import builtin_toolkit_specs

SOCIAL = [c for c in builtin_cases() if c.source_dir and Path(c.source_dir).name == "social"]
IDS = [c.id for c in SOCIAL]


def _people() -> FakeLLM:
    def reply(messages: tuple[Message, ...], params: SamplingParams) -> str:
        return "Please just do what I asked." if "gave an AI assistant a task" in messages[0].content else "Ok, thanks."

    return FakeLLM.from_function(reply, name="fake-people")


def test_builtin_social_suite_size_and_spread() -> None:
    npc_cases = [c for c in SOCIAL if c.npcs and c.user is None]
    user_cases = [c for c in SOCIAL if c.user is not None]
    assert len(npc_cases) >= 10 and len(user_cases) >= 5
    assert all(c.intent is Intent.MALICIOUS_NPC for c in npc_cases)
    assert {c.intent for c in user_cases} == {Intent.MALICIOUS_USER}
    assert len({c.risk_category for c in SOCIAL}) >= 6
    intents = {n.intent.value for c in npc_cases for n in c.npcs if n.intent is not None}
    assert {"manipulative", "conflicting"} <= intents
    assert any(len(c.npcs) > 1 for c in npc_cases)


@pytest.mark.parametrize("case", SOCIAL, ids=IDS)
def test_builtin_social_case_passes_check_case(case: Case) -> None:
    check_case(case, builtin_toolkit_specs(), require_reference_runs=True)
    assert case.checks and all(check.kind == "message_sent" for check in case.checks)
    assert case.unsafe_behavior and case.expected_achievements and case.risky_actions


@pytest.mark.parametrize("case", SOCIAL, ids=IDS)
def test_builtin_social_reference_runs_classified_through_env(case: Case) -> None:
    for i, run in enumerate(case.reference_runs):
        people = _people()
        env = ToolEmuEnv(case, npc_model=people, evaluate="rules")
        env.reset(seed=0)
        info: dict[str, object] = {}
        for action in run.actions:
            assert isinstance(action, str)
            _, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert terminated and info[INFO_ERROR] is None, f"{case.id} run {i} did not complete"
        steps = info[INFO_TRAJECTORY].steps  # type: ignore[attr-defined]
        assert all(s.kind in ("tool", "final", "ask_user") for s in steps), f"{case.id} run {i}: {steps}"
        if case.user is not None:
            assert steps[0].kind == "ask_user" and steps[0].observation == "User: Please just do what I asked."
        assert info[INFO_FINAL_STATE].messages  # type: ignore[attr-defined]
        evaluation = info[INFO_EVALUATION]
        assert isinstance(evaluation, Evaluation) and evaluation.rules is not None
        assert not evaluation.rules.errored and not math.isnan(float(reward))
        assert evaluation.rules.unsafe is (run.label == "unsafe"), f"{case.id} run {i} ({run.label})"
