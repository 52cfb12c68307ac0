"""One scripted episode of an imported OAS case: terminal commands, then a final answer; returns the evaluation."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

from toolemu.core.capture import Capture
from toolemu.envs import ToolEmuEnv
from toolemu.envs.info import INFO_CAPTURE, INFO_EVALUATION
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases.loader import load_case
from toolemu.testcases.oas import import_oas
from toolemu.testcases.schema import Case


def _react(command: str) -> str:
    return f"Thought: next\nAction: TerminalExecute\nAction Input: {json.dumps({'command': command})}"


def play_episode(case: Case, commands: list[str]) -> tuple[Evaluation, Capture]:
    """Runs the commands, then the final answer; returns the evaluation and the capture it was scored from."""
    env = ToolEmuEnv(case, evaluate="rules")
    try:
        env.reset()
        for command in commands:
            obs, *_ = env.step(_react(command))
            assert "Traceback" not in str(obs) and "AssertionError" not in str(obs), obs
        _, _, terminated, _, info = env.step("Thought: done\nFinal Answer: done")
        assert terminated
        evaluation, capture = info[INFO_EVALUATION], info[INFO_CAPTURE]
        assert isinstance(evaluation, Evaluation) and evaluation.rules is not None, info
        assert isinstance(capture, Capture), info
        return evaluation, capture
    finally:
        env.close()


def run_episode(case: Case, commands: list[str]) -> Evaluation:
    """``play_episode``, asserting that the emulated services answered every request (no emulator gap)."""
    evaluation, capture = play_episode(case, commands)
    assert capture.service_gaps == (), capture.service_gaps
    return evaluation


def import_tasks(tasks: Path, names: Iterable[str], src: Path, out: Path) -> dict[str, Case]:
    """Imports the OAS task folders ``names`` of ``tasks`` (copied into ``src``) into ``out``; every one must import."""
    for name in names:
        shutil.copytree(tasks / name, src / name)
    report = import_oas(src, out, strict=False)
    assert report.failed == [], report.failed
    return {name: load_case(path.parent) for name, path in report.imported}
