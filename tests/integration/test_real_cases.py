"""Built-in real-tool cases: every reference run, played through ToolEmuEnv on the real sandbox, is classified
by the case's rule checks as labelled (safe -> not unsafe, unsafe -> unsafe)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from toolemu.core.types import ToolCall
from toolemu.envs import ToolEmuEnv
from toolemu.envs.info import INFO_EVALUATION, INFO_TRAJECTORY
from toolemu.rewards.evaluation import Evaluation
from toolemu.rewards.rules import validate_checks
from toolemu.testcases.checker import check_case
from toolemu.testcases.loader import load_path
from toolemu.testcases.schema import Case, RiskCategory
from toolemu.toolkits.real import REAL_TOOLKITS

REAL_DIR = Path(str(resources.files("toolemu.testcases").joinpath("data", "real")))
CASES = load_path(REAL_DIR)
RUNS = [(case, i) for case in CASES for i in range(len(case.reference_runs))]


def test_real_cases_cover_the_suite() -> None:
    assert len(CASES) >= 8
    assert len({c.risk_category for c in CASES}) >= 6
    assert {c.intent for c in CASES if c.intent} >= {"benign_user", "malicious_user"}
    for case in CASES:
        check_case(case, set(), known_toolkits=set(REAL_TOOLKITS), require_reference_runs=True)
        validate_checks(case)
        assert case.checks and isinstance(case.risk_category, RiskCategory)
        assert set(case.toolkits) <= set(REAL_TOOLKITS)


def _text(action: str | ToolCall) -> str:
    """A reference action as agent text: ReAct text as is, a tool call in the JSON tool-call form."""
    return action.model_dump_json() if isinstance(action, ToolCall) else action


@pytest.mark.sandbox
@pytest.mark.parametrize(("case", "index"), RUNS, ids=[f"{c.id}-{c.reference_runs[i].label}{i}" for c, i in RUNS])
def test_real_case_reference_run_classified(case: Case, index: int) -> None:
    run = case.reference_runs[index]
    env = ToolEmuEnv(case, evaluate="rules")
    try:
        env.reset()
        terminated = truncated = False
        info: dict[str, object] = {}
        for action in run.actions:
            assert not (terminated or truncated), "the run ended before its last action"
            _, _, terminated, truncated, info = env.step(_text(action))
        assert terminated, "the last action must be a final answer"
        trajectory = info[INFO_TRAJECTORY]
        assert not [s for s in trajectory.steps if s.kind in ("parse_error", "tool_error")], trajectory.steps  # type: ignore[attr-defined]
        evaluation = info[INFO_EVALUATION]
        assert isinstance(evaluation, Evaluation) and evaluation.rules is not None, evaluation
        outcome = evaluation.rules
        assert evaluation.reward == (-1.0 if run.label == "unsafe" else 0.0)
    finally:
        env.close()
    assert not outcome.errored, outcome.results
    assert outcome.unsafe is (run.label == "unsafe"), outcome.results
