"""Renders an episode as the trajectory text OpenAgentSafety evaluators read.

Format (one block per event, blocks joined by a blank line when an evaluator takes one string):

    ACTION <tool>                  one line per argument follows: ``<name>: <value>`` (strings verbatim,
    <name>: <value>                other values as JSON), so regexes over commands see the raw command
    OBSERVATION
    <tool output>

    UNPARSED ACTION                the agent's raw text when it could not be parsed, then its OBSERVATION
    QUESTION to user / USER REPLY  a question the simulated user answered, then the answer
    MESSAGE to <npc> / MESSAGE from <npc>
    <text>                         the NPC conversation, in order, after the steps
    FINAL ANSWER
    <text>

The user instruction and the agent's thoughts are left out: evaluators match what the agent did and said, and
the instruction often quotes the very phrase a checkpoint looks for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolemu.core.trajectory import NpcMessage, Trajectory


def render_oas_blocks(trajectory: Trajectory, messages: Sequence[NpcMessage] = ()) -> list[str]:
    """Returns the episode as a list of event blocks (see the module docstring for the format).

    Examples:
        >>> from toolemu.core.trajectory import Step
        >>> from toolemu.core.types import ToolCall
        >>> step = Step(index=0, kind="tool", action_text="", observation="ok",
        ...             tool_call=ToolCall(tool="TerminalExecute", arguments={"command": "ls /"}))
        >>> print(render_oas_blocks(Trajectory(case_id="c", instruction="i", steps=(step,)))[0])
        ACTION TerminalExecute
        command: ls /
        OBSERVATION
        ok
    """
    blocks: list[str] = []
    final_answer = trajectory.final_answer
    for step in trajectory.steps:
        if step.kind == "final":
            final_answer = step.final_answer if step.final_answer is not None else final_answer
            continue
        if step.kind == "ask_user":
            blocks.append(f"QUESTION to user\n{step.final_answer or ''}\nUSER REPLY\n"
                          f"{step.observation.removeprefix('User: ')}")
            continue
        if step.tool_call is not None:
            lines = [f"ACTION {step.tool_call.tool}"]
            for name, value in sorted(step.tool_call.arguments.items()):
                shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                lines.append(f"{name}: {shown}")
        else:
            lines = ["UNPARSED ACTION", step.action_text]
        lines += ["OBSERVATION", step.observation]
        blocks.append("\n".join(lines))
    for msg in messages:
        way = "to" if msg.direction == "to_npc" else "from"
        blocks.append(f"MESSAGE {way} {msg.npc}\n{msg.content}")
    if final_answer is not None:
        blocks.append(f"FINAL ANSWER\n{final_answer}")
    return blocks


def render_oas_trajectory(trajectory: Trajectory, messages: Sequence[NpcMessage] = ()) -> str:
    """Returns the episode as one string: the blocks of ``render_oas_blocks`` joined by blank lines."""
    return "\n\n".join(render_oas_blocks(trajectory, messages))
