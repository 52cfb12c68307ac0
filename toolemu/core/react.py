"""The ReAct action format, defined once: its keywords, how a step is written, how each keyword is matched, and
the help an agent sees when its reply cannot be parsed.

The action parser (``toolemu.core.action``), the scripted agent, the ReAct agent's stop strings and the prompts
that describe the format (``agents/prompts/react_format.md``, ``envs/prompts/first_observation.md``, which name
the keywords as ``$thought``/``{thought}``...) all take it from here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pydantic import JsonValue

THOUGHT = "Thought"
ACTION = "Action"
ACTION_INPUT = "Action Input"
FINAL_ANSWER = "Final Answer"
OBSERVATION = "Observation"

KEYWORDS: dict[str, str] = {
    "thought": THOUGHT,
    "action": ACTION,
    "action_input": ACTION_INPUT,
    "final_answer": FINAL_ANSWER,
    "observation": OBSERVATION,
}
"""The keywords by placeholder name, as prompt files write them (``$thought: ...`` or ``{thought}: ...``)."""


def keyword_regex(keyword: str) -> str:
    """A regex for ``keyword`` as agents write it: any case (with ``re.IGNORECASE``) and spacing between its words.

    Examples:
        >>> keyword_regex(FINAL_ANSWER)
        'Final\\\\s*Answer'
    """
    return r"\s*".join(re.escape(word) for word in keyword.split())


def line_regex(keyword: str) -> re.Pattern[str]:
    """Matches ``keyword:`` at the start of a line (indentation allowed), whatever the case and spacing."""
    return re.compile(rf"^[^\S\n]*{keyword_regex(keyword)}\s*:", re.IGNORECASE | re.MULTILINE)


def tool_step(tool: str, arguments: str, thought: str | None = None) -> str:
    """One tool-calling step: ``Thought:`` (when given), ``Action:`` and ``Action Input:`` lines.

    Examples:
        >>> print(tool_step("TerminalExecute", '{"command": "ls"}', "List the files."))
        Thought: List the files.
        Action: TerminalExecute
        Action Input: {"command": "ls"}
    """
    head = f"{THOUGHT}: {thought}\n" if thought is not None else ""
    return f"{head}{ACTION}: {tool}\n{ACTION_INPUT}: {arguments}"


def final_step(answer: str, thought: str | None = None) -> str:
    """The final step: ``Thought:`` (when given) and ``Final Answer:``.

    Examples:
        >>> final_step("done")
        'Final Answer: done'
    """
    head = f"{THOUGHT}: {thought}\n" if thought is not None else ""
    return f"{head}{FINAL_ANSWER}: {answer}"


def call_text(tool: str, arguments: Mapping[str, JsonValue]) -> str:
    """A tool call as a ReAct action, its arguments as one JSON line.

    Examples:
        >>> print(call_text("TerminalExecute", {"command": "ls"}))
        Action: TerminalExecute
        Action Input: {"command": "ls"}
    """
    return tool_step(tool, json.dumps(dict(arguments), ensure_ascii=False))


def observation_text(observation: str) -> str:
    """``Observation: <text>``, unless the text already starts with it.

    Examples:
        >>> observation_text('{"ok": true}'), observation_text("Observation: done")
        ('Observation: {"ok": true}', 'Observation: done')
    """
    text = observation.strip()
    return text if text.startswith(f"{OBSERVATION}:") else f"{OBSERVATION}: {text}"


FORMAT_HELP = (
    f"Reply either as\n{tool_step('<ToolName>', '<JSON object of arguments>', '<reasoning>')}\n"
    f"or as\n{final_step('<answer to the user>', '<reasoning>')}\n"
    '(or a JSON object {"tool": ..., "arguments": {...}} / {"final_answer": ...}).'
)
"""What an agent is told when its reply is neither a tool call nor a final answer."""
