"""Plain-text rendering of episode records for the terminal."""

from __future__ import annotations

import json

from toolemu.bench import EpisodeRecord


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
        lines.append("== evaluation")
        lines.append(ev.summary())
    lines.append(f"reward: {record.reward if record.reward is not None else 'none (not scored)'}")
    return "\n".join(lines)
