"""Turns a pydantic ``ValidationError`` into the one-line message loaders raise (file, field, problem)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from toolemu.core.errors import CaseError

M = TypeVar("M", bound=BaseModel)


def field_path(loc: Sequence[int | str], *, skip: Collection[str] = ()) -> str:
    """Renders a pydantic ``loc`` as ``tools[2].parameters[0].type``; parts in ``skip`` are dropped.

    ``skip`` names union-member tags pydantic inserts into locations (``file_contains``, ``str``).

    Examples:
        >>> field_path((3, "tools", 2, "type"))
        '[3].tools[2].type'
        >>> field_path(("checks", 1, "file_contains", "pattern"), skip={"file_contains"})
        'checks[1].pattern'
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in skip:
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _describe(error: Any) -> str:
    ctx = error.get("ctx") or {}
    if error["type"] == "literal_error" and "expected" in ctx:
        options = str(ctx["expected"]).replace("'", "").replace(" or ", ", ")
        return f"{error['input']!r} is not one of {options}"
    if error["type"] == "enum" and "expected" in ctx:
        options = str(ctx["expected"]).replace("'", "").replace(" or ", ", ")
        return f"{error['input']!r} is not one of {options}"
    if error["type"] == "extra_forbidden":
        return "unknown field (check the spelling)"
    if error["type"] in ("int_type", "bool_type"):
        if error["type"] == "int_type":
            return f"{error['input']!r} is not an integer (booleans, strings and floats are refused)"
        return f"{error['input']!r} is not true or false (numbers and strings are refused)"
    if error["type"] == "string_pattern_mismatch":
        return f"{error['input']!r} does not match {ctx.get('pattern', '')}"
    return str(error["msg"])


def validation_message(
    err: ValidationError,
    source: str,
    *,
    prefix: str = "",
    case_id: str | None = None,
    skip: Collection[str] = (),
) -> str:
    """Returns ``source: [case `id`:] path: problem`` for the first error, noting how many more there are.

    Args:
        err: The pydantic error.
        source: The file (or ``<dict>``) the data came from.
        prefix: Location of the validated object inside the file (``[3]``), prepended to the field path.
        case_id: The case id when known.
        skip: Location parts to drop (discriminator tags).

    Returns:
        One line naming source, field path and problem.
    """
    errors = err.errors()
    first = errors[0]
    path = field_path(first["loc"], skip=skip)
    if prefix:
        path = prefix if path == "(top level)" else prefix + ("" if path.startswith("[") else ".") + path
    who = f"case `{case_id}`: " if case_id else ""
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return f"{source}: {who}{path}: {_describe(first)}{more}"


def validate_items(model: type[M], data: object, source: str, *, what: str) -> list[M]:
    """Validates a JSON list of objects (or one object) against ``model``, naming ``[i]`` in errors.

    Args:
        model: The pydantic model each object must match.
        data: Parsed JSON: a list of objects, or one object.
        source: File name for error messages.
        what: What one object is, for messages (``toolkit``).

    Returns:
        The validated objects in order.

    Raises:
        CaseError: One line naming the file, the field path and the problem.
    """
    items = data if isinstance(data, list) else [data]
    out: list[M] = []
    for i, item in enumerate(items):
        prefix = f"[{i}]" if isinstance(data, list) else ""
        if not isinstance(item, dict):
            raise CaseError(
                f"{source}: {prefix or '(top level)'}: expected a {what} object, got {type(item).__name__}"
            )
        try:
            out.append(model.model_validate(item))
        except ValidationError as e:
            raise CaseError(validation_message(e, source, prefix=prefix)) from None
    return out
