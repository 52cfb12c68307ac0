"""Lenient JSON-object extraction from model text (code fences, stray text, Python literals).

The one extractor wherever a model's reply must become a JSON object: agent actions, emulator replies, judge
verdicts.
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
"""``_json_spans`` reads at most this many times the text's length in all: each ``{`` that does not start a
readable object restarts the scan, so a crafted reply (100 unclosed braces in 1 MB) would otherwise cost 50
million steps."""


def _balanced_end(text: str, start: int) -> int | None:
    """The index just past the ``}`` closing the ``{`` at ``start`` (strings honoured), or ``None``."""
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
                return i + 1
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
    except RecursionError:
        raise ValueError(f"the object nests too deeply to read: {span[:80]!r}") from None
    try:
        return json.loads(normalize_object_literal(span))  # type: ignore[no-any-return]
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        value = ast.literal_eval(normalize_object_literal(span, python=True))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"invalid JSON ({first_error.msg} at char {first_error.pos}) in {span[:80]!r}") from None
    try:
        return json.loads(json.dumps(value))  # type: ignore[no-any-return]
    except (TypeError, ValueError, RecursionError):
        raise ValueError(f"not JSON-compatible: {span[:80]!r}") from None


def parse_json_object(text: str, *, allow_empty: bool = False) -> dict[str, JsonValue]:
    """The first JSON object in model text: the one extractor for agent actions, emulator replies and judge
    verdicts.

    A reply that is one code fence is read inside it; otherwise the first ``{...}`` span (strings honoured)
    that reads as an object wins, wherever it stands (words or a fence around it, a brace in the prose before
    it). Each span is read as JSON, else with bare keys quoted (``{query: 'x'}``), else as a Python literal
    (single quotes, ``True``/``None``).

    Args:
        text: The model's text.
        allow_empty: Return ``{}`` for empty text (an ``Action Input`` with no arguments).

    Raises:
        ValueError: no object could be read; the message says whether there was none or it was cut off or
            malformed (and why).

    Examples:
        >>> parse_json_object('```json\\n{"a": 1}\\n``` trailing words')
        {'a': 1}
        >>> parse_json_object("{'flag': True, 'x': None}")
        {'flag': True, 'x': None}
        >>> parse_json_object('Thinking {not json} then {"label": "Good"}')
        {'label': 'Good'}
        >>> parse_json_object("no json here")
        Traceback (most recent call last):
        ...
        ValueError: no JSON object found in 'no json here'
    """
    body = strip_fences(text)
    if not body:
        if allow_empty:
            return {}
        raise ValueError("no JSON object found: the text is empty")
    budget = _SCAN_BUDGET_FACTOR * len(body) + 10_000
    problem = ""
    start = body.find("{")
    while start != -1:
        if budget < 0:
            raise ValueError(f"no readable JSON object: too many unreadable braces in {len(body):,} characters")
        end = _balanced_end(body, start)
        if end is None:
            problem = problem or f"no closing brace for the object at char {start}"
            budget -= len(body) - start
        else:
            try:
                value = _loads_lenient(body[start:end])
            except ValueError as e:
                problem = problem or str(e)
                budget -= end - start
            else:
                if isinstance(value, dict):
                    # A `\\ud83d` escape cut in half decodes to a lone surrogate, which no file encoding can hold.
                    return scrub_value(value)  # type: ignore[no-any-return]
                problem = problem or f"expected a JSON object, got {type(value).__name__}"
        start = body.find("{", start + 1)
    if problem:
        raise ValueError(f"the JSON object is cut off or malformed: {problem}")
    raise ValueError(f"no JSON object found in {body[:80]!r}")
