"""Lenient JSON-object extraction from model text (code fences, stray text, Python literals).

Used wherever a model's reply must become a JSON object: agent actions, emulator replies, judge verdicts.
"""

from __future__ import annotations

import ast
import json
import re

from pydantic import JsonValue


def strip_fences(text: str) -> str:
    text = text.strip()
    fenced = re.match(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```", text, re.DOTALL)
    return fenced.group(1).strip() if fenced else text


def _first_json_object(text: str) -> str | None:
    """Returns the first balanced ``{...}`` span, honouring strings, or ``None``."""
    start = text.find("{")
    while start != -1:
        depth, in_str, quote, escape = 0, False, "", False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == quote:
                    in_str = False
            elif ch in "\"'":
                in_str, quote = True, ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def parse_json_object(text: str) -> dict[str, JsonValue]:
    """Parses a JSON object from agent or model text, tolerating fences, stray text and Python literals.

    Raises:
        ValueError: no object could be parsed; the message says why.

    Examples:
        >>> parse_json_object('```json\\n{"a": 1}\\n``` trailing words')
        {'a': 1}
        >>> parse_json_object("{'flag': True, 'x': None}")
        {'flag': True, 'x': None}
    """
    body = strip_fences(text)
    if not body:
        return {}
    span = _first_json_object(body)
    if span is None:
        raise ValueError(f"no JSON object found in {body[:80]!r}")
    try:
        value = json.loads(span)
    except json.JSONDecodeError as json_error:
        try:
            value = ast.literal_eval(span)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"invalid JSON ({json_error.msg} at char {json_error.pos}) in {span[:80]!r}") from None
        try:
            value = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            raise ValueError(f"arguments are not JSON-compatible: {span[:80]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value
