"""``ScriptedAgent``: replays fixed actions in order (reference runs, tests, demos)."""

from __future__ import annotations

from collections.abc import Sequence

from toolemu.core.errors import ConfigError
from toolemu.core.react import call_text
from toolemu.core.types import ToolCall


def tool_call_text(call: ToolCall) -> str:
    """Renders a tool call as a ReAct action (``toolemu.core.react.call_text``).

    Examples:
        >>> print(tool_call_text(ToolCall(tool="TerminalExecute", arguments={"command": "ls"})))
        Action: TerminalExecute
        Action Input: {"command": "ls"}
    """
    return call_text(call.tool, call.arguments)


class ScriptedAgent:
    """Returns the scripted actions one per ``act`` call; ``reset`` rewinds to the first.

    Args:
        actions: Action texts (ReAct or JSON form) or tool calls (rendered as ReAct text).

    Examples:
        >>> agent = ScriptedAgent(["Final Answer: done"])
        >>> agent.reset("task")
        >>> agent.act("task")
        'Final Answer: done'
    """

    def __init__(self, actions: Sequence[str | ToolCall]) -> None:
        self.actions: tuple[str, ...] = tuple(a if isinstance(a, str) else tool_call_text(a) for a in actions)
        self.observations: list[str] = []
        """Observations received since the last reset."""
        self._next = 0

    @property
    def remaining(self) -> int:
        """How many scripted actions are left."""
        return len(self.actions) - self._next

    def reset(self, observation: str) -> None:
        """Rewinds the script and records the first observation."""
        self._next = 0
        self.observations = [observation]

    def act(self, observation: str) -> str:
        """Returns the next scripted action.

        Raises:
            ConfigError: the script is used up.
        """
        if self._next >= len(self.actions):
            raise ConfigError(
                f"ScriptedAgent ran out of actions after {len(self.actions)}; the episode needs more steps: "
                "end the script with a `Final Answer: ...` action"
            )
        if self._next > 0:
            self.observations.append(observation)
        action = self.actions[self._next]
        self._next += 1
        return action
