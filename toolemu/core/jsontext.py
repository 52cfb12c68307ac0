"""Lenient JSON-object extraction from model text (code fences, stray text, Python literals).

Used wherever a model's reply must become a JSON object: agent actions, emulator replies, judge verdicts.
"""

from __future__ import annotations

import ast
import json
import re

from pydantic import JsonValue

from toolemu.core.untrusted import scrub_value


def strip_fences(text: str) -> str:
    text = text.strip()
    fenced = re.match(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```", text, re.DOTALL)
    return fenced.group(1).strip() if fenced else text


_SCAN_BUDGET_FACTOR = 4
"""``_first_json_object`` reads at most this many times the text's length in all: each unclosed ``{`` restarts
the scan, so a crafted reply (100 unclosed braces in 1 MB) would otherwise cost 50 million steps."""


def _first_json_object(text: str) -> str | None:
    """Returns the first balanced ``{...}`` span, honouring strings, or ``None``.

    Raises:
        ValueError: the scan used up its budget (``_SCAN_BUDGET_FACTOR`` times the text's length).
    """
    budget = _SCAN_BUDGET_FACTOR * len(text) + 10_000
    start = text.find("{")
    while start != -1:
        if budget < 0:
            raise ValueError(f"no balanced JSON object found: too many unclosed braces in {len(text):,} characters")
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
        budget -= len(text) - start  # this scan read to the end without closing
        start = text.find("{", start + 1)
    return None


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PY_WORDS = {"true": "True", "false": "False", "null": "None"}


def normalize_object_literal(span: str, *, python: bool = False) -> str:
    """Quotes identifier keys written without quotes (``{query: 'x'}``); with ``python``, also turns bare
    ``true``/``false``/``null`` into Python's. String contents are never touched.

    Small models often write JavaScript-style object literals.

    Examples:
        >>> print(normalize_object_literal('{query: "a: true", n: 3, nested: {ok: true}}'))
        {"query": "a: true", "n": 3, "nested": {"ok": true}}
        >>> normalize_object_literal("{ok: true, x: null}", python=True)
        '{"ok": True, "x": None}'
    """
    out: list[str] = []
    i, in_str, quote, last = 0, False, "", ""
    while i < len(span):
        ch = span[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < len(span):
                out.append(span[i + 1])
                i += 1
            elif ch == quote:
                in_str = False
            i += 1
            continue
        if ch in "\"'":
            in_str, quote, last = True, ch, ch
            out.append(ch)
            i += 1
            continue
        word = _WORD.match(span, i)
        if word:
            text = word.group(0)
            if last in ("{", ",") and span[word.end() :].lstrip().startswith(":"):
                text = f'"{text}"'
            elif python:
                text = _PY_WORDS.get(text, text)
            out.append(text)
            last = word.group(0)[-1]
            i = word.end()
            continue
        out.append(ch)
        if not ch.isspace():
            last = ch
        i += 1
    return "".join(out)


def _loads_lenient(span: str) -> JsonValue:
    """JSON; else JSON with bare keys quoted; else a Python literal (single quotes, True/None) likewise."""
    try:
        return json.loads(span)  # type: ignore[no-any-return]
    except json.JSONDecodeError as json_error:
        first_error = json_error
    try:
        return json.loads(normalize_object_literal(span))  # type: ignore[no-any-return]
    except json.JSONDecodeError:
        pass
    try:
        value = ast.literal_eval(normalize_object_literal(span, python=True))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"invalid JSON ({first_error.msg} at char {first_error.pos}) in {span[:80]!r}") from None
    try:
        return json.loads(json.dumps(value))  # type: ignore[no-any-return]
    except (TypeError, ValueError):
        raise ValueError(f"arguments are not JSON-compatible: {span[:80]!r}") from None


def parse_json_object(text: str) -> dict[str, JsonValue]:
    """Parses a JSON object from agent or model text, tolerating fences, stray text, Python literals and
    unquoted keys.

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
    value = _loads_lenient(span)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    # A `\\ud83d` escape cut in half decodes to a lone surrogate, which no file encoding can hold.
    return scrub_value(value)  # type: ignore[no-any-return]
