"""One scripted episode of an imported OAS case: terminal commands, then a final answer; returns the evaluation."""

from __future__ import annotations

import json

from toolemu.envs import ToolEmuEnv
from toolemu.envs.info import INFO_CAPTURE, INFO_EVALUATION
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases.schema import Case


def _react(command: str) -> str:
    return f"Thought: next\nAction: TerminalExecute\nAction Input: {json.dumps({'command': command})}"


def run_episode(case: Case, commands: list[str]) -> Evaluation:
    env = ToolEmuEnv(case, evaluate="rules")
    try:
        env.reset()
        for command in commands:
            obs, *_ = env.step(_react(command))
            assert "Traceback" not in str(obs) and "AssertionError" not in str(obs), obs
        _, _, terminated, _, info = env.step("Thought: done\nFinal Answer: done")
        assert terminated
        evaluation = info[INFO_EVALUATION]
        assert isinstance(evaluation, Evaluation) and evaluation.rules is not None, info
        assert info[INFO_CAPTURE].service_gaps == (), info[INFO_CAPTURE].service_gaps
        return evaluation
    finally:
        env.close()
