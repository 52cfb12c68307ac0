"""Loop guard: an agent that repeats the same call is told so, then the episode is truncated.

Part of ``toolemu.envs``. Small models often resend a call the env rejected (or a tool answered with an error)
until the step budget runs out, or resend a call that worked and got the same answer again (the embedded model
read one email 14 times in a row); the guard makes that visible to the agent and ends the episode early.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from toolemu.core.trajectory import Step


def rejected_key(step: Step) -> str | None:
    """Returns what identifies ``step`` as a repeatable rejected call, or ``None`` when the call succeeded.

    Rejected: unparseable text, a call the env refused (unknown tool, bad arguments), or a tool that answered
    with an ``{"error": ...}`` observation.

    Examples:
        >>> rejected_key(Step(index=0, kind="parse_error", action_text=" hi ", observation="bad"))
        'text:hi'
        >>> rejected_key(Step(index=0, kind="tool", action_text="x", observation='{"ok": true}')) is None
        True
    """
    if step.kind == "parse_error":
        return f"text:{step.action_text.strip()}"
    failed = step.outcome in ("rejected", "errored") or step.kind == "tool_error"
    if failed or (step.kind == "tool" and _is_error_observation(step.observation)):
        if step.tool_call is None:
            return f"text:{step.action_text.strip()}"
        args = json.dumps(step.tool_call.arguments, sort_keys=True, default=str)
        return f"call:{step.tool_call.tool}:{args}"
    return None


def repeat_key(step: Step) -> str | None:
    """Returns what identifies ``step`` as a repeat: a rejected call (``rejected_key``), or a call that ran
    together with the answer it got (the same call answered differently is not a loop); ``None`` otherwise.

    Examples:
        >>> from toolemu.core.types import ToolCall
        >>> call = ToolCall(tool="T", arguments={"a": 1})
        >>> repeat_key(Step(index=0, kind="tool", action_text="x", tool_call=call, observation="{}"))[:15]
        'ran:T:{"a": 1}:'
        >>> repeat_key(Step(index=0, kind="final", action_text="x", final_answer="done")) is None
        True
    """
    key = rejected_key(step)
    if key is not None:
        return key
    if step.kind == "tool" and step.tool_call is not None:
        args = json.dumps(step.tool_call.arguments, sort_keys=True, default=str)
        answer = hashlib.sha256(step.observation.encode("utf-8", errors="replace")).hexdigest()[:16]
        return f"ran:{step.tool_call.tool}:{args}:{answer}"
    return None


def _is_error_observation(observation: str) -> bool:
    text = observation.lstrip()
    if not text.startswith("{"):
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"error"}


@dataclass(slots=True)
class LoopGuard:
    """Counts identical calls in a row: the same rejected call, or the same call with the same answer.

    Args:
        limit: Repeats that trigger a warning observation; after ``limit`` more the episode is truncated.
            0 disables the guard.
    """

    limit: int
    _key: str | None = field(default=None, init=False)
    _count: int = field(default=0, init=False)

    def reset(self) -> None:
        """Forgets the previous episode."""
        self._key, self._count = None, 0

    def observe(self, step: Step) -> None:
        """Records the step just taken."""
        key = repeat_key(step)
        if key is None or key != self._key:
            self._key, self._count = key, (1 if key is not None else 0)
        else:
            self._count += 1

    @property
    def repeats(self) -> int:
        """How many identical calls in a row (rejected, or the same answer each time), ending with the last step."""
        return self._count

    @property
    def tripped(self) -> bool:
        """Whether the episode must end: the warning was ignored ``limit`` more times."""
        return self.limit > 0 and self._count >= 2 * self.limit

    def warning(self) -> str | None:
        """Returns the note appended to the observation from the ``limit``-th repeat on, else ``None``."""
        if self.limit <= 0 or self._count < self.limit:
            return None
        if self.tripped:
            return f"[toolemu: the same call was sent {self._count} times in a row; the episode is over.]"
        left = 2 * self.limit - self._count
        happened = (
            "got the same answer each time; it will not change. Use what it returned, call another tool"
            if self._key is not None and self._key.startswith("ran:")
            else "it failed each time. Change the tool or its arguments"
        )
        return (
            f"[toolemu: you sent this same call {self._count} times in a row and {happened}, or give a Final "
            f"Answer; {left} more identical call{'s' if left > 1 else ''} will end the episode.]"
        )
