"""Reading untrusted input: data files (cases, toolkit specs, OAS task files), paths a case names, model text.

One policy for every reader: a bounded size, strict UTF-8, no NUL characters, no duplicate keys, bounded YAML
alias expansion and nesting, and paths that stay inside the folder they belong to after resolving symlinks.
Every violation is a ``CaseError`` of one line naming the file, the field or line, and the problem.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.core.limits import MAX_DATA_FILE_BYTES, MAX_EXPANDED_CHARS, MAX_NESTING, MAX_YAML_NODES

_MERGE_TAG = "tag:yaml.org,2002:merge"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# The tags whose values are JSON values; any other (`!!set`, `!!binary`, `!!timestamp`, `!!python/...`, a custom
# `!tag`) is refused: a set has no stable order, so a case holding one would hash differently in each process.
_JSON_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map", "merge")
)


class _JsonTypesLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser when PyYAML has it (a 10 MB scalar composes in 0.1 s instead of 30 s), resolving a plain
    date (``2024-01-01``) as a string, as YAML 1.2 and JSON do, instead of a ``datetime``."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_LOADER: type[yaml.SafeLoader] = _JsonTypesLoader
_MAX_INT_BITS = 1024
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def read_text(path: str | Path, *, what: str = "file", limit: int = MAX_DATA_FILE_BYTES) -> str:
    """Reads a UTF-8 text file under the input policy (a leading byte-order mark is dropped).

    Args:
        path: The file.
        what: What the file is, for messages (``case file``, ``toolkit spec``).
        limit: Largest size accepted, in bytes.

    Raises:
        CaseError: The file is missing, not a regular file, over ``limit``, not UTF-8, or holds a NUL byte.
    """
    path = Path(path)
    try:
        st = path.stat()
    except OSError as e:
        raise CaseError(f"{path}: cannot read {what}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CaseError(f"{path}: not a regular file; a {what} must be a plain file")
    if st.st_size > limit:
        raise CaseError(f"{path}: {st.st_size:,} bytes, over the {limit:,}-byte limit for a {what}")
    try:
        with path.open("rb") as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise CaseError(f"{path}: cannot read {what}: {e.strerror or e}") from None
    if len(raw) > limit:
        raise CaseError(f"{path}: over the {limit:,}-byte limit for a {what}")
    return _decode(raw, path)


def read_text_beneath(root: str | Path, relpath: str, *, what: str = "file", limit: int = MAX_DATA_FILE_BYTES) -> str:
    """``read_text`` for a file inside an untrusted folder (an OAS task folder), opened through
    ``safefs.read_bytes``: only in-tree links are followed, and a hard link or special file is refused, at the
    moment of reading (the folder may have changed since it was walked).

    Raises:
        CaseError: See ``read_text`` and ``safefs.open_file``.
    """
    raw = safefs.read_bytes(root, relpath, what=what, limit=limit)
    return _decode(raw, Path(root) / relpath)


def _decode(raw: bytes, path: Path) -> str:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise CaseError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start}); "
            "save the file as UTF-8"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise CaseError(f"{path}:{line}: contains a NUL character; text files cannot hold NUL bytes")
    return text


def parse_json(text: str, source: str) -> Any:
    """Parses JSON text, rejecting duplicate keys, deep nesting and NUL characters in strings.

    Raises:
        CaseError: One line naming ``source``, the line or field, and the problem.

    Examples:
        >>> parse_json('{"a": [1, "x"]}', "f.json")
        {'a': [1, 'x']}
        >>> parse_json('{"a": 1, "a": 2}', "f.json")
        Traceback (most recent call last):
        toolemu.core.errors.CaseError: f.json: duplicate key 'a' in one JSON object; keep one
    """

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise CaseError(f"{source}: duplicate key {key!r} in one JSON object; keep one")
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise CaseError(f"{source}:{e.lineno}: invalid JSON: {e.msg} (column {e.colno})") from None
    except ValueError as e:  # an integer over Python's digit limit (`sys.get_int_max_str_digits`)
        raise CaseError(f"{source}: invalid JSON: {_number_problem(e)}") from None
    except RecursionError:
        raise CaseError(f"{source}: nested too deeply (limit {MAX_NESTING} levels)") from None
    check_tree(data, source)
    return data


def parse_yaml(text: str, source: str) -> Any:
    """Parses one YAML document safely, within the alias-expansion, size and nesting bounds.

    Duplicate keys in one mapping are errors (YAML merge keys ``<<`` are allowed and may be overridden). Only
    JSON types are produced: a plain date stays a string, and a tag for any other type (``!!set``,
    ``!!binary``, ``!!timestamp``, ``!!python/...``, custom tags) is an error naming its line.

    Raises:
        CaseError: One line naming ``source``, the line, and the problem.

    Examples:
        >>> parse_yaml("a: &x [1, 2]\\nb: *x", "f.yaml")
        {'a': [1, 2], 'b': [1, 2]}
        >>> parse_yaml("a: 1\\na: 2", "f.yaml")
        Traceback (most recent call last):
        toolemu.core.errors.CaseError: f.yaml:2: duplicate key 'a' (first at line 1); keep one
    """
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node, source)
        data = loader.construct_document(node)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise CaseError(f"{source}{line}: invalid YAML: {problem}") from None
    except (ValueError, OverflowError) as e:  # an integer over Python's digit limit, met while constructing it
        raise CaseError(f"{source}: invalid YAML: {_number_problem(e)}") from None
    except RecursionError:
        raise CaseError(f"{source}: nested too deeply (limit {MAX_NESTING} levels)") from None
    finally:
        loader.dispose()
    check_tree(data, source)
    return data


def _number_problem(error: ValueError | OverflowError) -> str:
    if "integer string conversion" in str(error):
        return f"a number over {sys.get_int_max_str_digits():,} digits; no field takes one, write it as text"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _measure(root: Node, source: str) -> None:
    """Bounds the expanded size of a composed YAML graph (aliases are shared nodes) and finds duplicate keys."""
    memo: dict[int, tuple[int, int]] = {}
    active: set[int] = set()

    def visit(node: Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in memo:
            return memo[key]
        line = node.start_mark.line + 1
        if node.tag not in _JSON_TAGS:
            shown = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise CaseError(
                f"{source}:{line}: invalid YAML: tag {shown} makes a value JSON cannot hold; remove the tag "
                "(write a list for a set, quote text)"
            )
        if key in active:
            raise CaseError(f"{source}:{line}: recursive YAML alias; an anchor cannot contain itself")
        if depth > MAX_NESTING:
            raise CaseError(f"{source}:{line}: nested too deeply (limit {MAX_NESTING} levels)")
        if isinstance(node, ScalarNode):
            size = (1, len(node.value))
        else:
            active.add(key)
            children: list[Node] = []
            if isinstance(node, SequenceNode):
                children = list(node.value)
            elif isinstance(node, MappingNode):
                _no_duplicate_keys(node, source)
                children = [n for pair in node.value for n in pair]
            nodes, chars = 1, 0
            for child in children:
                n, c = visit(child, depth + 1)
                nodes, chars = nodes + n, chars + c
                if nodes > MAX_YAML_NODES or chars > MAX_EXPANDED_CHARS:
                    raise CaseError(
                        f"{source}:{line}: YAML expands to over {MAX_YAML_NODES:,} nodes or "
                        f"{MAX_EXPANDED_CHARS:,} characters (alias bomb?); write the data out without aliases"
                    )
            active.discard(key)
            size = (nodes, chars)
        memo[key] = size
        return size

    visit(root, 0)


def _no_duplicate_keys(node: MappingNode, source: str) -> None:
    seen: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        ident = (key_node.tag, key_node.value)
        line = key_node.start_mark.line + 1
        if ident in seen:
            raise CaseError(
                f"{source}:{line}: duplicate key {key_node.value!r} (first at line {seen[ident]}); keep one"
            )
        seen[ident] = line


def check_tree(data: Any, source: str) -> None:
    """Checks parsed data: no NUL character in any string or key, nesting within ``MAX_NESTING``, no integer
    over 1,024 bits.

    Raises:
        CaseError: Naming ``source`` and the field path (``[2].instruction``).
    """
    for where, text in _strings(data, "", 0, source):
        if "\x00" in text:
            raise CaseError(f"{source}: {where or '(top level)'}: contains a NUL character; remove it")


def _strings(data: Any, where: str, depth: int, source: str) -> Iterator[tuple[str, str]]:
    if depth > MAX_NESTING:
        raise CaseError(f"{source}: {where}: nested too deeply (limit {MAX_NESTING} levels)")
    if isinstance(data, str):
        yield where, data
    elif isinstance(data, int) and data.bit_length() > _MAX_INT_BITS:
        # A YAML hex literal of 5,000 digits constructs fine but cannot be printed back in decimal: any message
        # quoting it would crash.
        raise CaseError(
            f"{source}: {where or '(top level)'}: a number of over {_MAX_INT_BITS} bits; no field takes one, "
            "write it as text"
        )
    elif isinstance(data, Mapping):
        for key, value in data.items():
            if not isinstance(key, str):
                yield from _strings(key, f"{where}.[key]" if where else "[key]", depth + 1, source)
            sub = f"{where}.{key}" if where else str(key)
            if isinstance(key, str):
                yield sub, key
            yield from _strings(value, sub, depth + 1, source)
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            yield from _strings(value, f"{where}[{i}]", depth + 1, source)


def load_data(path: str | Path, *, what: str = "file") -> Any:
    """Reads and parses a data file under the input policy: ``.json`` as JSON, anything else as YAML.

    Raises:
        CaseError: See ``read_text``, ``parse_json`` and ``parse_yaml``.
    """
    path = Path(path)
    text = read_text(path, what=what)
    if path.suffix == ".json":
        return parse_json(text, str(path))
    return parse_yaml(text, str(path))


def resolve_inside(root: str | Path, relative: str) -> Path:
    """Resolves ``relative`` under ``root``, following symlinks, and requires the result to stay inside.

    Args:
        root: The folder the path belongs to (a case folder).
        relative: The path as written in the case.

    Returns:
        The resolved absolute path (it may not exist).

    Raises:
        CaseError: ``relative`` is empty or absolute, or resolves outside ``root``; the message says so
            without the field name (the caller prefixes it).
    """
    if not relative or not relative.strip():
        raise CaseError("empty path")
    if os.path.isabs(relative) or relative.startswith("~"):
        raise CaseError(f"{relative!r} is absolute; a case may only name files inside its own folder")
    try:
        base = Path(root).resolve()
        target = (base / relative).resolve()
    except (RuntimeError, OSError) as e:  # a link loop (RuntimeError on Python < 3.13), a too-long path
        raise CaseError(f"{relative!r} cannot be resolved ({e}); remove the link loop") from None
    if not target.is_relative_to(base):
        raise CaseError(
            f"{relative!r} resolves to {target}, outside the case folder {base}; "
            "a case may only name files inside its own folder"
        )
    return target


def scrub_value(value: Any) -> Any:
    """``scrub_surrogates`` over every string (keys too) of parsed JSON-like data.

    Examples:
        >>> scrub_value({"a": ["\\ud800", 1]}) == {"a": ["\\ufffd", 1]}
        True
    """
    if isinstance(value, str):
        return scrub_surrogates(value)
    if isinstance(value, dict):
        return {scrub_value(k): scrub_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(v) for v in value]
    return value


def scrub_surrogates(text: str) -> str:
    """Replaces lone UTF-16 surrogates (invalid in UTF-8, so unwritable) with U+FFFD; joins split pairs.

    Models emit them (a JSON ``\\ud83d`` cut in half); they would crash every later write of the text.

    Examples:
        >>> scrub_surrogates("ok \\ud83d!")
        'ok \\ufffd!'
        >>> scrub_surrogates("fine")
        'fine'
    """
    if text.isascii() or not _SURROGATE_RE.search(text):
        return text
    # Through UTF-16: an adjacent high/low pair becomes the character it encodes, a lone half U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
"""Embeddings, overrides and isolates (``U+202A``-``U+202E``, ``U+2066``-``U+2069``) and the direction marks:
they reorder what the operator reads (Trojan Source)."""
_TERMINAL_ESCAPES: dict[int, str] = {
    **{c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7F)},
    **{c: f"\\x{c:02x}" for c in range(0x80, 0xA0)},  # C1 controls: 0x9b is a one-byte CSI on some terminals
    **{c: f"\\u{c:04x}" for c in _BIDI_CONTROLS},
    **{c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)},  # lone surrogates cannot be written to a terminal
}
_MULTILINE_ESCAPES = {c: v for c, v in _TERMINAL_ESCAPES.items() if c not in (0x0A, 0x09)}


def terminal_safe(text: str, *, multiline: bool = True) -> str:
    """``text`` with every control character shown escaped, for printing on an operator's terminal.

    Agent, model, case and tool text reaches the CLI's output; raw, an ``ESC`` sequence could retitle the
    window, rewrite earlier lines or hide text, a ``CR`` overwrite a line, ``BEL`` ring. Escaped: C0 controls
    and ``DEL``, C1 controls, bidi overrides and isolates, lone surrogates. With ``multiline`` (the default)
    ``\\n`` and ``\\t`` are kept; without, they are escaped too, so the text stays on one line.

    Examples:
        >>> terminal_safe("ok\\x1b]0;pwned\\x07\\rdone\\n")
        'ok\\\\x1b]0;pwned\\\\x07\\\\x0ddone\\n'
        >>> terminal_safe("a\\nb\\u202e", multiline=False)
        'a\\\\x0ab\\\\u202e'
    """
    if text.isascii() and text.isprintable():
        return text
    return text.translate(_MULTILINE_ESCAPES if multiline else _TERMINAL_ESCAPES)
