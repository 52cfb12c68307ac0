"""Parses an agent's text into a tool call or a final answer (ReAct, whose format ``toolemu.core.react`` defines,
and JSON tool-call forms).

Lenient where agents are sloppy (code fences, text around the JSON, Python literals), strict where a
guess could run the wrong tool: anything ambiguous is an ``ActionParseError`` the agent sees.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from pydantic import JsonValue

from toolemu.core.errors import ActionParseError
from toolemu.core.jsontext import parse_json_object, strip_fences
from toolemu.core.limits import MAX_ACTION_CHARS, MAX_ACTION_NESTING, MAX_FINAL_ANSWER_CHARS
from toolemu.core.react import ACTION, ACTION_INPUT, FINAL_ANSWER, OBSERVATION, THOUGHT, keyword_regex, line_regex
from toolemu.core.react import FORMAT_HELP as FORMAT_HELP
from toolemu.core.types import ToolCall
from toolemu.core.untrusted import scrub_surrogates

_FINAL_RE = line_regex(FINAL_ANSWER)
_ACTION_RE = re.compile(rf"^[^\S\n]*{keyword_regex(ACTION)}\s*:\s*(?P<tool>[^\n]*)", re.IGNORECASE | re.MULTILINE)
_INPUT_RE = line_regex(ACTION_INPUT)
_THOUGHT_RE = re.compile(rf"^[^\S\n]*{keyword_regex(THOUGHT)}\s*:\s*", re.IGNORECASE | re.MULTILINE)
_OBSERVATION_RE = line_regex(OBSERVATION)
_TOOL_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_BRACKET_RE = re.compile(r"[\[\]{}()]")
_OPENERS = frozenset("[{(")
_ACTION_FINAL_RE = re.compile(rf"^[`'\"]?{keyword_regex(FINAL_ANSWER)}[`'\"]?\s*(?::|$)", re.IGNORECASE)
"""``Action: Final Answer: ...``: small models often write the final answer as if it were a tool."""



class ParsedAction(NamedTuple):
    """The result of parsing one agent turn."""

    kind: Literal["tool", "final"]
    thought: str | None
    tool_call: ToolCall | None
    final_answer: str | None


def _parse_json_form(text: str) -> ParsedAction | None:
    body = strip_fences(text)
    if not body.startswith("{"):
        return None
    try:
        obj = parse_json_object(body)
    except ValueError:
        return None
    thought = obj.get("thought")
    thought_s = thought if isinstance(thought, str) else None
    if "final_answer" in obj:
        return ParsedAction("final", thought_s, None, str(obj["final_answer"]))
    fn = obj.get("function")
    if isinstance(fn, dict):  # OpenAI tool-call shape: {"type": "function", "function": {...}}
        obj = fn
    name = obj.get("tool", obj.get("name"))
    if not isinstance(name, str):
        return None
    args: JsonValue = obj.get("arguments", obj.get("args", obj.get("parameters", {})))
    if isinstance(args, str):
        try:
            args = parse_json_object(args, allow_empty=True)
        except ValueError as e:
            raise ActionParseError(f"Could not parse the arguments of `{name}`: {e}.\n{FORMAT_HELP}") from None
    if not isinstance(args, dict):
        raise ActionParseError(f"The arguments of `{name}` must be a JSON object.\n{FORMAT_HELP}")
    return ParsedAction("tool", thought_s, ToolCall(tool=name, arguments=args), None)


def nests_deeper_than(text: str, limit: int) -> bool:
    """Whether ``{`` ``[`` ``(`` nest more than ``limit`` deep anywhere in ``text`` (a stray closer counts as none).

    Linear in ``len(text)`` and stops at the first level past ``limit``. Quotes are not honoured, so a bracket
    inside a string counts too: what matters is a bound on what the JSON and literal parsers, which recurse,
    are ever given.

    Examples:
        >>> nests_deeper_than('{"a": [1, (2)]}', 2), nests_deeper_than('{"a": [1, (2)]}', 3)
        (True, False)
        >>> nests_deeper_than("))((", 1)
        True
    """
    if sum(text.count(c) for c in _OPENERS) <= limit:
        return False
    depth = 0
    for m in _BRACKET_RE.finditer(text):
        if m.group() in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


def _thought(text: str, end: int) -> str | None:
    m = _THOUGHT_RE.search(text[:end])
    if m:
        return text[m.end() : end].strip() or None
    head = text[:end].strip()
    return head or None


def action_text(action: object) -> str:
    """The action as it is recorded: the text (lone surrogates replaced), or a placeholder for a non-string.

    Examples:
        >>> action_text("Final Answer: ok"), action_text(None), action_text(b"x")
        ('Final Answer: ok', '<not a string: NoneType>', '<not a string: bytes>')
    """
    if isinstance(action, str):
        return scrub_surrogates(action)
    return f"<not a string: {type(action).__name__}>"


def parse_action(text: object) -> ParsedAction:
    """Parses one agent turn.

    Policy (README "Input policy"): an action must be a ``str`` of at most ``MAX_ACTION_CHARS`` characters,
    with brackets nested at most ``MAX_ACTION_NESTING`` deep (checked before any parsing), and a final answer
    at most ``MAX_FINAL_ANSWER_CHARS``; anything else is an ``ActionParseError``, which
    the env shows the agent as an error observation (bad actions never raise from ``step``).

    Raises:
        ActionParseError: the text is neither a tool call nor a final answer, is not a string, is too long or
            too deeply nested;
            the message teaches the format.

    Examples:
        >>> parse_action('Thought: check\\nAction: BankGetBalance\\nAction Input: {}').tool_call.tool
        'BankGetBalance'
        >>> parse_action('Final Answer: done').final_answer
        'done'
        >>> parse_action('Thought: ok\\nAction: Final Answer: "Deleted 2 emails."').final_answer
        'Deleted 2 emails.'
    """
    if not isinstance(text, str):
        raise ActionParseError(
            f"Actions are strings (the agent's text reply); got {type(text).__name__}.\n{FORMAT_HELP}"
        )
    if not text or not text.strip():
        raise ActionParseError(f"Your reply was empty.\n{FORMAT_HELP}")
    if len(text) > MAX_ACTION_CHARS:
        raise ActionParseError(
            f"Your reply is {len(text):,} characters; the limit is {MAX_ACTION_CHARS:,}. Reply more briefly."
        )
    if nests_deeper_than(text, MAX_ACTION_NESTING):
        raise ActionParseError(
            f"Your reply nests brackets more than {MAX_ACTION_NESTING} deep; the limit is {MAX_ACTION_NESTING}. "
            "Send flatter arguments."
        )
    try:
        parsed = _parse_text(scrub_surrogates(text))
    except RecursionError:  # the depth bound above should make this unreachable; never let it escape step()
        raise ActionParseError(
            f"Your reply is nested too deeply to parse (limit {MAX_ACTION_NESTING}). Send flatter arguments."
        ) from None
    if parsed.final_answer is not None and len(parsed.final_answer) > MAX_FINAL_ANSWER_CHARS:
        raise ActionParseError(
            f"Your final answer is {len(parsed.final_answer):,} characters; the limit is "
            f"{MAX_FINAL_ANSWER_CHARS:,}. Give a shorter final answer."
        )
    return parsed


def _parse_text(text: str) -> ParsedAction:
    json_form = _parse_json_form(text)
    if json_form is not None:
        return json_form
    # A model that keeps writing invents its own observations; only what precedes them is the action.
    obs = _OBSERVATION_RE.search(text)
    if obs:
        text = text[: obs.start()]
    final = _FINAL_RE.search(text)
    action = _ACTION_RE.search(text)
    if final and (action is None or final.start() < action.start()):
        return ParsedAction("final", _thought(text, final.start()), None, text[final.end() :].strip())
    if action is None:
        raise ActionParseError(f"Could not find `Action:` or `Final Answer:` in your reply.\n{FORMAT_HELP}")
    as_final = _ACTION_FINAL_RE.match(action.group("tool").strip())
    if as_final:
        answer = action.group("tool").strip()[as_final.end() :] + text[action.end() :]
        answer = _INPUT_RE.sub("", answer, count=1).strip()
        if len(answer) >= 2 and answer[0] == answer[-1] and answer[0] in "\"'":
            answer = answer[1:-1].strip()
        if answer:
            return ParsedAction("final", _thought(text, action.start()), None, answer)
        raise ActionParseError(f"`Action: Final Answer` needs the answer after it.\n{FORMAT_HELP}")
    name_match = _TOOL_NAME_RE.search(action.group("tool").strip().strip("`'\""))
    if name_match is None:
        raise ActionParseError(f"`Action:` must name a tool, got {action.group('tool')!r}.\n{FORMAT_HELP}")
    name = name_match.group(0)
    rest = text[action.end() :]
    inp = _INPUT_RE.search(rest)
    if inp is None:
        raw_args = rest.strip()
        if raw_args:
            raise ActionParseError(f"Missing `Action Input:` after `Action: {name}`.\n{FORMAT_HELP}")
        args: dict[str, JsonValue] = {}
    else:
        raw_args = rest[inp.end() :]
        if final and final.start() > action.start():
            raw_args = text[action.end() + inp.end() : final.start()]
        try:
            args = parse_json_object(raw_args, allow_empty=True)
        except ValueError as e:
            raise ActionParseError(f"Could not parse `Action Input` for `{name}`: {e}.\n{FORMAT_HELP}") from None
    return ParsedAction("tool", _thought(text, action.start()), ToolCall(tool=name, arguments=args), None)
