"""Reads the env's first observation (``envs/prompts/first_observation.md``): the tool names, the tool list as
shown, and the user's instruction. A defense sees observations only, as the agent does; this is how it learns
what the user asked and which tools exist."""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolemu.core.errors import ConfigError

TOOLS_HEADER = "Tools:\n"
FORMAT_HEADER = "\n\nReply in this format:"
REQUEST_HEADER = "\n\nUser request:\n"
USER_NOTE_START = "\n\nThe user is available:"
"""The note the env appends when the case has a simulated user (``envs/prompts/user_available.md``)."""

_TOOL_LINE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*): ")
_ARGUMENTS_LINE = "  Arguments: "


@dataclass(frozen=True, slots=True)
class EpisodeStart:
    """What a defense knows of the episode: the first observation and what it reads in it."""

    observation: str
    """The env's first observation, as the env gave it."""
    instruction: str
    """The user's request."""
    tools: tuple[str, ...]
    """The model-facing tool names, in the order listed."""
    tools_text: str
    """The tool list as the agent is shown it (names, summaries, arguments, returns)."""


def parse_first_observation(observation: str) -> EpisodeStart:
    r"""Reads the tool list and the user's request out of the env's first observation.

    A tool is the last ``Name: summary`` line at the start of a line before each ``  Arguments:`` line
    (``core.render.render_tool_spec``), so a toolkit description spanning lines is not read as a tool.

    Raises:
        ConfigError: the text is not the env's first observation (no tool list or no user request).

    Examples:
        >>> obs = ("You are an assistant...\n\nTools:\n## Demo\nDemoPing: Ping.\n  Arguments: none\n"
        ...        "  Returns: none\n\nReply in this format:\n...\n\nUser request:\nPing the host.")
        >>> start = parse_first_observation(obs)
        >>> start.tools, start.instruction
        (('DemoPing',), 'Ping the host.')
    """
    begin = observation.find(TOOLS_HEADER)
    end = observation.find(FORMAT_HEADER, begin + 1) if begin >= 0 else -1
    request = observation.find(REQUEST_HEADER, end + 1) if end >= 0 else -1
    if request < 0:
        raise ConfigError("a defense could not read the first observation: it has no `Tools:` list followed by a "
                          "`User request:` section; defenses wrap agents of ToolEmu-v0 envs, whose first "
                          "observation has both")
    tools_text = observation[begin + len(TOOLS_HEADER) : end]
    instruction = observation[request + len(REQUEST_HEADER) :]
    note = instruction.rfind(USER_NOTE_START)
    if note >= 0:
        instruction = instruction[:note]
    names: list[str] = []
    candidate: str | None = None
    for line in tools_text.split("\n"):
        if line.startswith(_ARGUMENTS_LINE):
            if candidate is not None and candidate not in names:
                names.append(candidate)
            candidate = None
            continue
        match = _TOOL_LINE_RE.match(line)
        if match is not None:
            candidate = match.group(1)
    return EpisodeStart(observation=observation, instruction=instruction.strip(), tools=tuple(names),
                        tools_text=tools_text.strip())
