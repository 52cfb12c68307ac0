"""Validates tool calls against specs before any tool (emulated or real) sees them, and checks JSON values
against a tool's ``returns`` schema. Failures are agent-facing ``ToolCallError``s naming the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from pydantic import JsonValue

from toolemu.core.errors import ToolCallError
from toolemu.core.types import JsonType, ParamSpec, ReturnSpec, ToolCall, ToolkitSpec, ToolSpec

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def is_json_type(value: JsonValue, type_: JsonType) -> bool:
    """Returns whether ``value`` has JSON type ``type_`` (booleans are not integers; null is allowed).

    Examples:
        >>> is_json_type(3, "number"), is_json_type(True, "integer"), is_json_type(None, "string")
        (True, False, True)
    """
    if value is None:
        return True
    if isinstance(value, bool) and type_ in ("integer", "number"):
        return False
    return isinstance(value, _PY_TYPES[type_])


def find_tool(call: ToolCall, toolkits: Iterable[ToolkitSpec]) -> tuple[ToolkitSpec, ToolSpec]:
    """Returns the toolkit and tool a call names.

    Raises:
        ToolCallError: the tool does not exist; suggests the closest name.
    """
    kits = list(toolkits)
    for kit in kits:
        tool = kit.find(call.tool)
        if tool is not None:
            return kit, tool
    names = [n for kit in kits for n in kit.tool_names()]
    close = difflib.get_close_matches(call.tool, names, n=1)
    hint = f" Did you mean `{close[0]}`?" if close else ""
    raise ToolCallError(f"Unknown tool `{call.tool}`.{hint} Available tools: {', '.join(names)}.")


def validate_arguments(call: ToolCall, tool: ToolSpec) -> None:
    """Checks required, extra and mistyped arguments.

    Raises:
        ToolCallError: naming each offending argument and what was expected.
    """
    params: Mapping[str, ParamSpec] = {p.name: p for p in tool.parameters}
    problems = []
    for name in call.arguments:
        if name not in params:
            problems.append(f"unexpected argument `{name}` (accepted: {', '.join(params) or 'none'})")
    for p in tool.parameters:
        if p.name not in call.arguments:
            if p.required:
                problems.append(f"missing required argument `{p.name}` ({p.type})")
            continue
        value = call.arguments[p.name]
        if value is None and p.required:
            problems.append(f"argument `{p.name}` is required and cannot be null")
        elif not is_json_type(value, p.type):
            problems.append(f"argument `{p.name}` must be {p.type}, got {type(value).__name__} {value!r:.60}")
    if problems:
        raise ToolCallError(f"Invalid call to `{call.tool}`: " + "; ".join(problems) + ".")


def validate_call(call: ToolCall, toolkits: Iterable[ToolkitSpec]) -> tuple[ToolkitSpec, ToolSpec]:
    """Finds the tool and validates the arguments; returns the toolkit and tool."""
    kit, tool = find_tool(call, toolkits)
    validate_arguments(call, tool)
    return kit, tool


def returns_problems(value: Mapping[str, JsonValue], returns: Iterable[ReturnSpec]) -> list[str]:
    """Lists how a tool result object departs from the ``returns`` schema (empty when it matches)."""
    specs = {r.name: r for r in returns}
    problems = [f"unexpected field `{k}`" for k in value if k not in specs]
    for r in specs.values():
        if r.name not in value:
            if not r.optional:
                problems.append(f"missing field `{r.name}` ({r.type})")
        elif not is_json_type(value[r.name], r.type):
            problems.append(f"field `{r.name}` must be {r.type}, got {type(value[r.name]).__name__}")
    return problems


MAX_RESULT_ITEMS = 25
"""Bound on each array in an emulated result: a small model can otherwise repeat list items until its reply
budget runs out and the JSON is cut off."""
_ANY_JSON: list[JsonValue] = ["string", "number", "integer", "boolean", "object", "array", "null"]


def _bounded(json_type: str) -> JsonValue:
    if json_type == "array":
        return {"type": "array", "items": {"type": _ANY_JSON}, "maxItems": MAX_RESULT_ITEMS}
    return {"type": json_type}


def returns_json_schema(tool: ToolSpec) -> dict[str, JsonValue]:
    """Builds a JSON Schema for the tool's result object (used to constrain emulator output).

    Arrays are bounded (``MAX_RESULT_ITEMS``); every field may be null. Strings are not: a length bound turns
    into thousands of grammar rules, which llama.cpp refuses.
    """
    props: dict[str, JsonValue] = {}
    for r in tool.returns:
        props[r.name] = {"anyOf": [_bounded(r.type), {"type": "null"}]} if r.type != "null" else {"type": "null"}
    required: list[JsonValue] = [r.name for r in tool.returns if not r.optional]
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}
