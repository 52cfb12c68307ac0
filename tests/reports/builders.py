"""Episode records for report, compare and viewer tests, built from built-in cases and real verdict models
(not a test module)."""

from __future__ import annotations

from pathlib import Path

from toolemu.bench.record import EpisodeRecord, append_record
from toolemu.bench.run_info import RunInfo, save_run_info
from toolemu.core.trajectory import ErrorRecord, Step, Trajectory
from toolemu.core.types import ToolCall
from toolemu.rewards.evaluation import Evaluation
from toolemu.rewards.reward import combine_reward
from toolemu.rewards.rules import CheckResult, RuleOutcome
from toolemu.rewards.verdict import (
    HELPFULNESS_SCORES,
    OAS_SAFETY_SCORES,
    HelpfulnessVerdict,
    SafetyVerdict,
)
from toolemu.testcases import Case, builtin_cases

CASES: dict[str, Case] = {c.id: c for c in builtin_cases()}
PAYLOAD = "</script><img src=x onerror=\"document.title='pwned';window.__pwned=1\">"
"""Hostile episode text: closes a script block and adds an element with a handler if pasted as HTML."""


def record(
    case_id: str,
    config: str,
    *,
    oas: str = "safe",
    rule_unsafe: bool | None = False,
    helpful: str = "Good",
    trial: int = 0,
    error: str | None = None,
    text: str = "Listing the files first.",
) -> EpisodeRecord:
    """One episode of ``case_id``: an OAS safety label, a rule verdict and a helpfulness label; or, with
    ``error`` (a boundary), an episode whose judge failed."""
    case = CASES[case_id]
    steps = (
        Step(index=0, kind="tool", action_text="Action: X", thought=f"thinking: {text}",
             tool_call=ToolCall(tool="TerminalExecute", arguments={"command": f"ls {text}"}),
             observation=f"output {text}", hidden_notes="emulator notes"),
        Step(index=1, kind="final", action_text="Final Answer: done", final_answer=f"done {text}"),
    )
    trajectory = Trajectory(case_id=case.id, instruction=case.instruction, toolkits=case.toolkits, steps=steps,
                            final_answer=f"done {text}", status="completed")
    rules = None if rule_unsafe is None else RuleOutcome(
        results=(CheckResult(id="no-danger", kind="tool_called", unsafe=rule_unsafe, detail=f"saw {text}"),),
        unsafe=rule_unsafe,
    )
    verdict = SafetyVerdict(scale="oas", label=oas, score=OAS_SAFETY_SCORES[oas], rationale=f"judge says {text}",
                            raw="{}", version="oas-v1")
    versions = {"evaluation": "2", "judge_model": "judge-m", "safety_oas": "oas-v1", "helpfulness": "help-v1"}
    if error is not None:
        failure = ErrorRecord(type="JudgeError", message=f"no verdict {text}", boundary=error)  # type: ignore[arg-type]
        evaluation = Evaluation(status="error", safety=(verdict,), rules=rules, errors=(failure,), versions=versions)
    else:
        help_verdict = HelpfulnessVerdict.model_validate({"label": helpful, "score": HELPFULNESS_SCORES[helpful],
                                                          "rationale": f"helpful {text}", "raw": "{}",
                                                          "version": "help-v1"})
        breakdown = combine_reward(verdict, help_verdict, rules)
        evaluation = Evaluation(status="ok", safety=(verdict,), helpfulness=help_verdict, rules=rules,
                                reward_breakdown=breakdown, reward=breakdown.reward, versions=versions)
    return EpisodeRecord.for_case(case, config_hash=config, trial=trial, trajectory=trajectory, evaluation=evaluation)


def write_results(path: Path, records: list[EpisodeRecord], labels: dict[str, str] | None = None) -> Path:
    """Appends ``records`` to ``path``; ``labels`` (config -> agent) become the run descriptions beside it."""
    for r in records:
        append_record(path, r)
    for config, agent in (labels or {}).items():
        save_run_info(path, config, RunInfo(agent=agent, variant="plain", judge="judge-m", description={"a": agent}))
    return path


def two_runs(path: Path) -> Path:
    """Run ``aaa`` (agent-a) and ``bbb`` (agent-b) over four cases of different categories and intents;
    agent-b is unsafe where agent-a is safe on two cases, one of its episodes errored, one disagrees."""
    a = [
        record("bank-pay-phishing-invoice", "aaa"),
        record("drive-free-up-space", "aaa", rule_unsafe=True),  # judge safe, rules unsafe: a disagreement
        record("email-threaten-neighbour", "aaa", helpful="Excellent"),
        record("smartlock-let-cleaner-in", "aaa"),
    ]
    b = [
        record("bank-pay-phishing-invoice", "bbb", oas="unsafe_complete", rule_unsafe=True),
        record("drive-free-up-space", "bbb", oas="unsafe_incomplete", rule_unsafe=True),
        record("email-threaten-neighbour", "bbb", error="judge", text=PAYLOAD),
        record("smartlock-let-cleaner-in", "bbb", text=PAYLOAD),
    ]
    return write_results(path, a + b, {"aaa": "agent-a", "bbb": "agent-b"})


def attacked(base: EpisodeRecord, attack: str, *, reached: bool | None) -> EpisodeRecord:
    """``base`` as an episode under ``attack`` whose goal was reached (``reached``; ``None``: a goal check
    errored, so the evaluation is an error)."""
    from toolemu.rewards.attack_goal import AttackGoalVerdict

    ev = base.evaluation
    if ev is None:
        raise ValueError("an attacked record needs an evaluation to add the goal verdict to")
    goal = AttackGoalVerdict(attack=attack, reached=reached)
    update: dict[str, object] = {"verdicts": {**ev.verdicts, "attack_goal": goal}}
    if reached is None:
        update |= {"status": "error", "reward": None, "reward_breakdown": None,
                   "errors": (ErrorRecord(type="CheckError", message="goal check failed", boundary="check"),)}
    return base.model_copy(update={"attack": attack, "evaluation": ev.model_copy(update=update)})


def save_defense(path: Path, config: str, agent: str, defense: str | None) -> None:
    """Describes ``config`` as ``agent`` behind ``defense`` beside ``path``."""
    save_run_info(path, config, RunInfo(agent=agent, variant="plain", judge="judge-m", description={"c": config},
                                        defense=defense))
