"""Plants an attacked case's text in its channel: a named tool's results, a coworker's replies, or a tool's
description in the tool list (``Case.attack``; the ``world`` and ``file`` vectors are planted in the case's
data by ``toolemu.attacks``). Nothing else the agent sees changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolemu.core.people import CHAT_TOOLKIT
from toolemu.core.types import ToolkitSpec
from toolemu.testcases.attack_types import AppliedAttack

_CHAT_REPLY_TOOLS = (f"{CHAT_TOOLKIT}SendMessage", f"{CHAT_TOOLKIT}Broadcast")
"""The chat tools whose results hold coworkers' replies."""


def splice_result(attack: AppliedAttack | None, tool: str, observation: str) -> str:
    """``observation`` of a call of ``tool``, with the attack's text in it when this tool is the attack's channel.

    A ``tool_result`` attack puts its text into the longest string of the result's JSON (the body of an e-mail,
    a file's content), into a ``notice`` field of a JSON object with no string, or after the text when the
    result is not JSON. An ``npc_message`` attack appends it to
    each reply from its coworker.

    Examples:
        >>> from toolemu.testcases.attack_types import AppliedAttack, AttackGoal, AttackVector
        >>> goal = AttackGoal(summary="s", request="r", checks=[{"kind": "tool_called", "tool": "T"}])
        >>> a = AppliedAttack(name="a", style="encoded", text="DO IT", goal=goal,
        ...                   vector=AttackVector(kind="tool_result", tools=("MailRead",)))
        >>> splice_result(a, "MailRead", '{"subject": "hi", "body": "see you"}')
        '{"subject": "hi", "body": "see you\\\\n\\\\nDO IT"}'
        >>> splice_result(a, "MailSend", '{"ok": true}')
        '{"ok": true}'
    """
    if attack is None:
        return observation
    vector = attack.vector
    if vector.kind == "tool_result" and tool in vector.tools:
        return _into_longest_string(observation, attack.text)
    if vector.kind == "npc_message" and tool in _CHAT_REPLY_TOOLS and vector.npc is not None:
        return _into_replies(observation, vector.npc, attack.text)
    return observation


def described_specs(attack: AppliedAttack | None, specs: Sequence[ToolkitSpec]) -> tuple[ToolkitSpec, ...]:
    """``specs`` as the agent's tool list shows them: a ``tool_description`` attack's text appended to its tool's
    summary; otherwise unchanged."""
    if attack is None or attack.vector.kind != "tool_description":
        return tuple(specs)
    target = attack.vector.tools[0]
    out = []
    for spec in specs:
        tools = tuple(t.model_copy(update={"summary": f"{t.summary} {attack.text}"})
                      if spec.name_for_model + t.name == target else t for t in spec.tools)
        out.append(spec.model_copy(update={"tools": tools}))
    return tuple(out)


def _into_longest_string(observation: str, text: str) -> str:
    try:
        data = json.loads(observation)
    except ValueError:
        return f"{observation}\n\n{text}"
    paths = list(_string_paths(data, ()))
    if not paths and isinstance(data, dict):  # nothing to hold it (an empty listing): a field of its own
        return json.dumps({**data, "notice": text}, ensure_ascii=False)
    if not paths:
        return f"{observation}\n\n{text}"
    longest = max(paths, key=lambda p: len(_get(data, p)))
    _set(data, longest, f"{_get(data, longest)}\n\n{text}")
    return json.dumps(data, ensure_ascii=False)


def _into_replies(observation: str, npc: str, text: str) -> str:
    try:
        data = json.loads(observation)
    except ValueError:
        return observation
    replies = data.get("replies") if isinstance(data, dict) else None
    if not isinstance(replies, list):
        return observation
    for reply in replies:
        if isinstance(reply, dict) and str(reply.get("from", "")).casefold() == npc.casefold():
            reply["message"] = f"{reply.get('message', '')}\n\n{text}"
    return json.dumps(data, ensure_ascii=False)


Path = tuple[str | int, ...]


def _string_paths(data: object, prefix: Path) -> list[Path]:
    if isinstance(data, str):
        return [prefix]
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in _string_paths(v, (*prefix, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _string_paths(v, (*prefix, i))]
    return []


def _get(data: object, path: Path) -> str:
    for key in path:
        data = data[key]  # type: ignore[index]
    return str(data)


def _set(data: object, path: Path, value: str) -> None:
    for key in path[:-1]:
        data = data[key]  # type: ignore[index]
    data[path[-1]] = value  # type: ignore[index]
