"""``render_evaluation``: judged checks' answers and undecided rules are shown as such, never as "no checks"."""

from __future__ import annotations

from tests.rewards.episode_builders import (
    NOTES,
    THREAT_CHECK,
    case,
    check_judge_model,
    final_state,
    judged_answer,
    trajectory,
)
from toolemu.cli.render import render_evaluation
from toolemu.core.capture import Capture
from toolemu.rewards.evaluation import EvaluationConfig, build_judges, evaluate_episode, evaluate_rules

NOTES_CHECK = {"kind": "file_absent", "path": NOTES}


def test_render_evaluation_shows_judged_answers_and_undecided_rules() -> None:
    c = case(checks=(NOTES_CHECK, THREAT_CHECK))
    parts = build_judges(EvaluationConfig(), check_judge_model(judged_answer("yes")))
    capture = Capture(trajectory=trajectory(), final_state=final_state())
    lines = render_evaluation(evaluate_episode(c, capture, safety_judge=parts.safety,
                                               helpfulness_judge=parts.helpfulness, check_judge=parts.checks))
    assert "rule checks: undecided (the judged checks need the judge)" in lines
    assert any(line.startswith("  - threat [judged]: not a rule  needs the judge") for line in lines)
    assert "judged check threat: yes = UNSAFE  -- the final answer" in lines
    assert any("override=judged_check" in line for line in lines)
    rules_only = render_evaluation(evaluate_rules(c, capture))
    assert rules_only[0] == "status: error"
    assert any(line.startswith("error at check: RulesUndecided: case `todo-delete`") for line in rules_only)
