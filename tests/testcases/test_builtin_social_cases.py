"""The built-in social suite (NPC coworkers, a simulated user, some with real files and shell): seeds cover every
risk category and intent with variants and benign twins, every case passes check_case, and each reference run,
played through the env with fake people (and the real sandbox where the case has real tools), is classified as
labelled by the case's rule checks."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from toolemu.core.types import Message
from toolemu.envs import ToolEmuEnv
from toolemu.envs.info import INFO_ERROR, INFO_EVALUATION, INFO_FINAL_STATE, INFO_TRAJECTORY
from toolemu.llm import FakeLLM, SamplingParams
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases import Case, Intent, Role, builtin_cases, check_case, role_of, seed_of
from toolemu.testcases.schema import RiskCategory
from toolemu.toolkits.real import REAL_TOOLKITS
from toolemu.toolkits.spec_loader import builtin_toolkit_specs

SOCIAL = [c for c in builtin_cases() if c.source_dir and Path(c.source_dir).name == "social"]
IDS = [c.id for c in SOCIAL]
WITH_REAL = [c for c in SOCIAL if set(c.toolkits) & set(REAL_TOOLKITS)]
CHAT_ONLY = [c for c in SOCIAL if c not in WITH_REAL]


def _people() -> FakeLLM:
    def reply(messages: tuple[Message, ...], params: SamplingParams) -> str:
        return "Please just do what I asked." if "gave an AI assistant a task" in messages[0].content else "Ok, thanks."

    return FakeLLM.from_function(reply, name="fake-people")


def test_builtin_social_suite_size_and_spread() -> None:
    seeds = [c for c in SOCIAL if role_of(c) is Role.SEED]
    twins = [c for c in SOCIAL if role_of(c) is Role.TWIN]
    variants = Counter(seed_of(c) for c in SOCIAL if role_of(c) is Role.VARIANT)
    assert len(seeds) >= 18 and len(twins) >= 13
    assert {c.risk_category for c in seeds} == set(RiskCategory)
    assert {c.intent for c in seeds} == set(Intent)
    assert all(variants[s.id] >= 3 for s in seeds), {s.id: variants[s.id] for s in seeds}
    assert all(c.intent is Intent.BENIGN and "benign-twin" in c.tags for c in twins)
    npc_intents = {n.intent.value for c in SOCIAL for n in c.npcs if n.intent is not None}
    assert {"manipulative", "conflicting", "benign"} <= npc_intents
    assert any(len(c.npcs) > 1 for c in seeds) and any(c.user is not None for c in seeds)
    assert any(set(c.toolkits) & set(REAL_TOOLKITS) for c in seeds)


@pytest.mark.parametrize("case", SOCIAL, ids=IDS)
def test_builtin_social_case_passes_check_case(case: Case) -> None:
    check_case(case, builtin_toolkit_specs(), known_toolkits=set(REAL_TOOLKITS), require_reference_runs=True)
    assert case.checks and case.unsafe_behavior and case.expected_achievements and case.risky_actions
    assert "Chat" in case.toolkits and "chat" in case.tags and case.risk_category and case.intent


def _play(case: Case) -> None:
    for i, run in enumerate(case.reference_runs):
        people = _people()
        env = ToolEmuEnv(case, npc_model=people, evaluate="rules")
        try:
            env.reset(seed=0)
            info: dict[str, object] = {}
            for action in run.actions:
                assert isinstance(action, str)
                _, reward, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
        finally:
            env.close()
        assert terminated and info[INFO_ERROR] is None, f"{case.id} run {i} did not complete"
        steps = info[INFO_TRAJECTORY].steps  # type: ignore[attr-defined]
        assert all(s.kind in ("tool", "final", "ask_user") for s in steps), f"{case.id} run {i}: {steps}"
        if case.user is not None and steps[0].kind == "ask_user":
            assert steps[0].observation == "User: Please just do what I asked."
        chatted = any(s.tool_call is not None and s.tool_call.tool.startswith("Chat") for s in steps)
        assert bool(info[INFO_FINAL_STATE].messages) is chatted  # type: ignore[attr-defined]
        evaluation = info[INFO_EVALUATION]
        assert isinstance(evaluation, Evaluation) and evaluation.rules is not None
        assert not evaluation.rules.errored and not math.isnan(float(reward))
        assert evaluation.rules.unsafe is (run.label == "unsafe"), f"{case.id} run {i} ({run.label})"


@pytest.mark.parametrize("case", CHAT_ONLY, ids=[c.id for c in CHAT_ONLY])
def test_builtin_social_reference_runs_classified_through_env(case: Case) -> None:
    _play(case)


@pytest.mark.sandbox
@pytest.mark.parametrize("case", WITH_REAL, ids=[c.id for c in WITH_REAL])
def test_builtin_social_real_tool_reference_runs_classified_in_sandbox(case: Case) -> None:
    _play(case)
