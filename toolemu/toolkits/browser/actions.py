"""BrowserGym's action vocabulary: each action's arguments, and ``ast`` parsing of action code strings.

OpenHands' browser tool sends BrowserGym action code such as ``click('12')`` or ``fill('15', 'bob')``; it is
parsed here as data (``ast``; only literal arguments, never evaluated), one call or several, one a line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from pydantic import JsonValue

from toolemu.core.errors import ToolCallError

MAX_ACTIONS = 20
"""Most actions one ``BrowserRun`` code string may hold."""
MAX_CODE_CHARS = 20_000
"""Longest ``BrowserRun`` code string."""

_STR, _NUM, _INT, _STRS = "string", "number", "integer", "string or list of strings"
_Param = tuple[str, str, JsonValue]  # name, kind, default (``...`` for required: see _REQUIRED)
_REQUIRED = "\x00required"

SIGNATURES: dict[str, tuple[_Param, ...]] = {
    "goto": (("url", _STR, _REQUIRED),),
    "click": (("bid", _STR, _REQUIRED), ("button", _STR, "left"), ("modifiers", _STRS, [])),
    "dblclick": (("bid", _STR, _REQUIRED), ("button", _STR, "left"), ("modifiers", _STRS, [])),
    "hover": (("bid", _STR, _REQUIRED),),
    "fill": (("bid", _STR, _REQUIRED), ("value", _STR, _REQUIRED)),
    "clear": (("bid", _STR, _REQUIRED),),
    "focus": (("bid", _STR, _REQUIRED),),
    "select_option": (("bid", _STR, _REQUIRED), ("options", _STRS, _REQUIRED)),
    "upload_file": (("bid", _STR, _REQUIRED), ("file", _STRS, _REQUIRED)),
    "press": (("bid", _STR, _REQUIRED), ("key_comb", _STR, _REQUIRED)),
    "scroll": (("delta_x", _NUM, _REQUIRED), ("delta_y", _NUM, _REQUIRED)),
    "go_back": (),
    "go_forward": (),
    "noop": (("wait_ms", _NUM, 1000),),
    "new_tab": (),
    "tab_close": (),
    "tab_focus": (("index", _INT, _REQUIRED),),
}
"""BrowserGym's actions that drive the page, with their argument names (in order), kinds and defaults."""


@dataclass(frozen=True, slots=True)
class BrowserAction:
    """One parsed action: its name and its arguments by name (defaults filled in)."""

    name: str
    args: dict[str, JsonValue]

    def text(self) -> str:
        """The action as BrowserGym code (``click('12')``)."""
        return f"{self.name}({', '.join(repr(v) for v in self.args.values())})"


def _kind_ok(kind: str, value: object) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _NUM:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def make_action(name: str, positional: list[JsonValue], named: dict[str, JsonValue]) -> BrowserAction:
    """Checks ``name(*positional, **named)`` against ``SIGNATURES`` and fills in defaults.

    Raises:
        ToolCallError: Unknown action, missing, extra or mistyped arguments; the message names the action's
            signature.
    """
    params = SIGNATURES.get(name)
    if params is None:
        raise ToolCallError(f"InvalidRequestException: `{name}` is not a browser action; use one of "
                            f"{', '.join(SIGNATURES)}")
    shown = f"{name}({', '.join(p for p, _, _ in params)})"
    if len(positional) > len(params):
        raise ToolCallError(f"InvalidRequestException: {shown} takes {len(params)} arguments, got {len(positional)}")
    args: dict[str, JsonValue] = {}
    for (param, _, _), value in zip(params, positional, strict=False):
        args[param] = value
    for key, value in named.items():
        if key not in {p for p, _, _ in params}:
            raise ToolCallError(f"InvalidRequestException: {shown} has no argument `{key}`")
        if key in args:
            raise ToolCallError(f"InvalidRequestException: {shown} got `{key}` twice")
        args[key] = value
    for param, kind, default in params:
        if param not in args:
            if default == _REQUIRED:
                raise ToolCallError(f"InvalidRequestException: {shown} needs `{param}`")
            args[param] = default
        if not _kind_ok(kind, args[param]):
            raise ToolCallError(f"InvalidRequestException: `{param}` of {shown} must be a {kind}, got "
                                f"{args[param]!r}")
        if isinstance(args[param], str) and "\x00" in str(args[param]):
            raise ToolCallError(f"InvalidRequestException: `{param}` of {shown} contains a NUL character")
    return BrowserAction(name, {p: args[p] for p, _, _ in params})


def parse_actions(code: str) -> list[BrowserAction]:
    """Parses BrowserGym action code: one or several calls such as ``click('12')``, literals only.

    Examples:
        >>> [a.text() for a in parse_actions("fill('15', 'bob')\\nclick('12')")]
        ["fill('15', 'bob')", "click('12', 'left', [])"]

    Raises:
        ToolCallError: Not Python, not a plain call of a browser action, a non-literal argument, or too many.
    """
    if len(code) > MAX_CODE_CHARS:
        raise ToolCallError(f"InvalidRequestException: the action code is over {MAX_CODE_CHARS} characters")
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as e:
        raise ToolCallError(f"InvalidRequestException: the action code does not parse: {e.msg} (line {e.lineno})"
                            ) from e
    if not tree.body:
        raise ToolCallError("InvalidRequestException: the action code holds no action, e.g. click('12')")
    if len(tree.body) > MAX_ACTIONS:
        raise ToolCallError(f"InvalidRequestException: at most {MAX_ACTIONS} actions per call")
    actions = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            raise ToolCallError(f"InvalidRequestException: line {statement.lineno} is not a browser action call "
                                "such as click('12'); only calls with literal arguments are run")
        try:
            positional = [ast.literal_eval(a) for a in call.args]
            named = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
        except ValueError as e:
            raise ToolCallError(f"InvalidRequestException: the arguments of {call.func.id}() on line "
                                f"{statement.lineno} must be literals (strings, numbers, lists)") from e
        if any(k.arg is None for k in call.keywords):
            raise ToolCallError(f"InvalidRequestException: {call.func.id}() on line {statement.lineno} uses **; "
                                "name each argument")
        actions.append(make_action(call.func.id, positional, named))
    return actions
