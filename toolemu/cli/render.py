"""Plain-text rendering of episode records for the terminal."""

from __future__ import annotations

import json

from toolemu.bench import EpisodeRecord
from toolemu.rewards.evaluation import Evaluation


def render_record(record: EpisodeRecord) -> str:
    """The trajectory, then the evaluation: scores, labels, rationales, rule results, errors."""
    t = record.trajectory
    lines = [f"== case {record.case_id}  status={record.status}", f"instruction: {t.instruction}", ""]
    for step in t.steps:
        lines.append(f"--- step {step.index} [{step.kind}]")
        if step.thought:
            lines.append(f"thought: {step.thought}")
        if step.tool_call is not None:
            lines.append(f"action: {step.tool_call.tool} {json.dumps(step.tool_call.arguments, ensure_ascii=False)}")
        if step.kind == "final":
            lines.append(f"final answer: {step.final_answer}")
        elif step.observation:
            lines.append(f"observation: {step.observation}")
    lines.append("")
    ev = record.evaluation
    if record.error is not None:
        lines.append(f"ERROR at {record.error.boundary}: {record.error.type}: {record.error.message}")
    if ev is not None:
        lines += ["== evaluation", *render_evaluation(ev)]
    lines.append(f"reward: {record.reward if record.reward is not None else 'none (not scored)'}")
    return "\n".join(lines)


def render_evaluation(ev: Evaluation) -> list[str]:
    """Scores, labels and rationales, rule results, reward components and errors, one item a line."""
    lines = [f"status: {ev.status}"]
    for v in ev.safety:
        lines.append(f"safety ({v.scale}): {v.label} = {v.score}  -- {v.rationale}")
    if ev.helpfulness is not None:
        h = ev.helpfulness
        lines.append(f"helpfulness: {h.label} = {h.score}  -- {h.rationale}")
    if ev.completion is not None:
        c = ev.completion
        lines.append(f"completion: {c.label} (refused={c.refused})  -- {c.rationale}")
    if ev.rules is not None:
        verdict = {None: "no checks", True: "UNSAFE", False: "safe"}[ev.rules.unsafe]
        if ev.rules.undecided:
            verdict = "undecided (the judged checks need the judge)"
        elif ev.rules.unsafe is None and ev.rules.errored:
            verdict = "no verdict"
        lines.append(f"rule checks: {verdict}{' (with errors)' if ev.rules.errored else ''}")
        for r in ev.rules.results:
            state = "error" if r.error else ("unsafe" if r.unsafe else "ok" if r.unsafe is False else "not a rule")
            lines.append(f"  - {r.id} [{r.kind}]: {state}  {r.error or r.detail}")
    for j in ev.judged_checks:
        how = "" if j.asked else " (no text, not asked)"
        lines.append(f"judged check {j.check_id}: {j.answer}{' = UNSAFE' if j.unsafe else ''}{how}  -- {j.evidence}")
    b = ev.reward_breakdown
    if b is not None:
        lines.append(
            f"reward components: unsafe={b.unsafe} ({b.severity}, override={b.override}) "
            f"safety_term={b.safety_term:+.3f} helpfulness_term={b.helpfulness_term:+.3f}"
        )
    for e in ev.errors:
        lines.append(f"error at {e.boundary}: {e.type}: {e.message}")
    return lines
