"""Conformance checks for a ``ToolkitSpec`` (Gymnasium's checker pattern): names, types, descriptions.

In ``core`` because every reader of toolkit specs applies it: the spec loader, the ToolEmu importer and
``cases validate``, so an import cannot accept what validation rejects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import get_args

from toolemu.core.errors import CaseError
from toolemu.core.types import JsonType, ToolkitSpec
from toolemu.core.validation import validate_items

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TYPES = frozenset(get_args(JsonType))


def _unique(names: Iterable[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise CaseError(f"{where}: duplicate {what} `{name}`")
        seen.add(name)


def _check_field(where: str, name: str, type_: str) -> None:
    if type_ not in _TYPES:
        raise CaseError(f"{where}.type: {type_!r} is not one of {', '.join(sorted(_TYPES))}")
    if not name.strip():
        raise CaseError(f"{where}.name: empty")


def check_toolkit(spec: ToolkitSpec) -> None:
    """Checks that a toolkit spec is usable by agents and the emulator.

    Requires identifier-like toolkit, model and tool names; unique tool, parameter, return and exception
    names;
    unique model-facing names; non-empty tool summaries; known JSON types; at least one tool.

    Args:
        spec: The spec to check.

    Raises:
        CaseError: One line naming the toolkit, the field path and the problem.
    """
    where = f"toolkit `{spec.toolkit}`"
    for field, value in (("toolkit", spec.toolkit), ("name_for_model", spec.name_for_model)):
        if not _NAME_RE.match(value):
            raise CaseError(
                f"{where}: {field}: {value!r} must be letters, digits or _ and start with a letter"
            )
    if not spec.tools:
        raise CaseError(f"{where}: tools: a toolkit needs at least one tool")
    _unique((t.name for t in spec.tools), where, "tool name")
    _unique(spec.tool_names(), where, "model-facing tool name")
    for i, tool in enumerate(spec.tools):
        at = f"{where}: tools[{i}]"
        if not _NAME_RE.match(tool.name):
            raise CaseError(f"{at}.name: {tool.name!r} must be letters, digits or _ and start with a letter")
        if not tool.summary.strip():
            raise CaseError(f"{at}.summary: empty; say what `{tool.name}` does")
        _unique((p.name for p in tool.parameters), at, "parameter")
        _unique((r.name for r in tool.returns), at, "return field")
        _unique((e.name for e in tool.exceptions), at, "exception")
        for j, param in enumerate(tool.parameters):
            _check_field(f"{at}.parameters[{j}]", param.name, param.type)
        for j, ret in enumerate(tool.returns):
            _check_field(f"{at}.returns[{j}]", ret.name, ret.type)


def validate_toolkits(data: object, source: str) -> list[ToolkitSpec]:
    """Validates parsed toolkit JSON (a list of toolkit objects, or one) and checks each with ``check_toolkit``.

    Args:
        data: The parsed JSON.
        source: File name for messages.

    Returns:
        The specs in file order.

    Raises:
        CaseError: ``<file>: [<i>]: <field>: <problem>`` for the first malformed or unusable toolkit.
    """
    specs = validate_items(ToolkitSpec, data, source, what="toolkit")
    for i, spec in enumerate(specs):
        try:
            check_toolkit(spec)
        except CaseError as e:
            prefix = f"[{i}]: " if isinstance(data, list) else ""
            raise CaseError(f"{source}: {prefix}{e}") from None
    return specs
