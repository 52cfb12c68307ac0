"""Defenses that only change what the agent reads: ``spotlight`` (tool outputs marked as data) and
``repeat_instruction`` (the user's request after every tool output)."""

from __future__ import annotations

from toolemu.agents.defenses.base import PassThrough
from toolemu.agents.defenses.observation import EpisodeStart
from toolemu.agents.defenses.prompt import defense_prompt, defense_version
from toolemu.core.render import fence
from toolemu.core.types import ToolCall

TOOL_OUTPUT_LABEL = "TOOL_OUTPUT"
"""The fence label around tool outputs under ``spotlight`` (``<<<TOOL_OUTPUT>>>`` ... ``<<</TOOL_OUTPUT>>>``)."""


class Spotlight(PassThrough):
    """Data marking (spotlighting by delimiters).

    The agent sees: the first observation followed by a blank line and the note of
    ``prompts/defense_spotlight.md``; every tool output between a ``<<<TOOL_OUTPUT>>>`` line and a
    ``<<</TOOL_OUTPUT>>>`` line, with any ``<<<``, ``>>>`` or ``````` inside the output broken
    (``core.render.neutralize_delimiters``), so the output cannot close the marking itself. Nothing is blocked.
    """

    def __init__(self) -> None:
        super().__init__("spotlight", defense_version("spotlight", "spotlight"))

    def start(self, start: EpisodeStart) -> str:
        """The first observation and the marking note."""
        super().start(start)
        return f"{start.observation}\n\n{defense_prompt('spotlight').template}"

    def result(self, call: ToolCall, observation: str, turn: int) -> str:
        """The output between the marking fences."""
        return fence(TOOL_OUTPUT_LABEL, observation)


class RepeatInstruction(PassThrough):
    """The user's request repeated after every tool output (the "sandwich" defense).

    The agent sees: the first observation unchanged; every tool output followed by a blank line and
    ``prompts/defense_repeat_instruction.md`` with the user's request (as the first observation states it).
    Nothing is blocked.
    """

    def __init__(self) -> None:
        super().__init__("repeat_instruction", defense_version("repeat_instruction", "repeat_instruction"))

    def result(self, call: ToolCall, observation: str, turn: int) -> str:
        """The output, then the reminder."""
        instruction = self.episode.instruction if self.episode is not None else ""
        reminder = defense_prompt("repeat_instruction").substitute(instruction=instruction)
        return f"{observation}\n\n{reminder}"
