"""Maps the JSON Schemas of an MCP tool (``inputSchema``, ``outputSchema``) onto ToolEmu parameters and returns.

ToolEmu gives each parameter one JSON type and a description; what a schema says beyond that (enums, defaults,
bounds, the shape of nested objects and arrays) goes into the description, after the server's own text, which
is kept verbatim. Local ``$ref``s (``#/$defs/...``) are resolved, to a bounded depth.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import get_args

from toolemu.core.errors import CaseError
from toolemu.core.types import JsonType, ParamSpec, ReturnSpec

MAX_PROPERTIES = 128
"""Most properties one tool's input or output schema may declare."""
MAX_REF_DEPTH = 16
"""Most ``$ref`` hops followed from one place in a schema (a recursive schema stops there)."""
MAX_SCHEMA_TEXT_CHARS = 4_000
"""Longest nested schema written into a parameter's description; a longer one is cut, and says so."""
MAX_FIELD_NAME_CHARS = 128
"""Longest property name accepted."""
MAX_DESCRIPTION_CHARS = 20_000
"""Longest tool or property description accepted (kept verbatim, so refused rather than cut)."""
MAX_SCHEMA_STEPS = 50_000
"""Most schema nodes visited for one tool (references resolved, alternatives typed, nested schemas written)."""

_TYPES: frozenset[str] = frozenset(get_args(JsonType))
_CONSTRAINTS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
                "minItems", "maxItems", "uniqueItems", "multipleOf")
# Keys that only label a schema; left out when a nested schema is written into a description.
_LABELS = frozenset({"title", "$schema", "$id", "$comment", "examples"})
_NAMED = frozenset({"properties", "patternProperties"})


@dataclass(slots=True)
class Notes:
    """What an import changed or guessed, one line each, for the importer's report."""

    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        """Records one note."""
        self.lines.append(line)


@dataclass(slots=True)
class SchemaScope:
    """Where a schema sits: the root holding its ``$defs``, a label for messages (``tools[2] (`x`)``), and the
    work done on it so far (references fan out: a few ``$defs`` can name each other into an exponential tree)."""

    root: Mapping[str, object]
    where: str
    steps: int = 0

    def tick(self, at: str) -> None:
        """Counts one step of work on this tool's schemas.

        Raises:
            CaseError: Over ``MAX_SCHEMA_STEPS``.
        """
        self.steps += 1
        if self.steps > MAX_SCHEMA_STEPS:
            raise CaseError(f"{self.where}: {at}: the schema takes over {MAX_SCHEMA_STEPS:,} steps to read (its "
                            "references fan out); simplify it")


def _resolve(schema: Mapping[str, object], scope: SchemaScope, at: str) -> Mapping[str, object]:
    """Follows local ``$ref``s (``#/$defs/Name``, any JSON pointer into the root) to the schema they name."""
    for _ in range(MAX_REF_DEPTH):
        scope.tick(at)
        ref = schema.get("$ref")
        if ref is None:
            return schema
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise CaseError(f"{scope.where}: {at}.$ref: {ref!r} is not a local reference ('#/$defs/...'); only "
                            "references inside the tool's own schema can be resolved")
        target: object = scope.root
        for part in (p for p in ref[1:].split("/") if p):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                raise CaseError(f"{scope.where}: {at}.$ref: {ref!r} names nothing in the schema")
            target = target[part]
        if not isinstance(target, Mapping):
            raise CaseError(f"{scope.where}: {at}.$ref: {ref!r} names a {type(target).__name__}, not a schema")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **rest}  # keywords beside a $ref (a description) win over the target's
    raise CaseError(f"{scope.where}: {at}.$ref: over {MAX_REF_DEPTH} references deep; the schema is recursive")


def _value_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _branches(schema: Mapping[str, object], scope: SchemaScope, at: str) -> list[Mapping[str, object]]:
    """The alternatives of an ``anyOf``/``oneOf`` (``allOf``: its parts), resolved; empty when there are none."""
    for key in ("anyOf", "oneOf", "allOf"):
        parts = schema.get(key)
        if parts is None:
            continue
        if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
            raise CaseError(f"{scope.where}: {at}.{key}: must be a list of schemas")
        return [_resolve(p, scope, f"{at}.{key}[{i}]") for i, p in enumerate(parts)]
    return []


def schema_types(schema: Mapping[str, object], scope: SchemaScope, at: str, depth: int = 0) -> list[str]:
    """The JSON types a schema admits, in its order (``[]`` for an unconstrained schema).

    Raises:
        CaseError: A ``type`` that is not a JSON type, or a malformed ``anyOf``/``oneOf``/``allOf``.
    """
    if depth > MAX_REF_DEPTH:
        raise CaseError(f"{scope.where}: {at}: schemas nested over {MAX_REF_DEPTH} deep")
    schema = _resolve(schema, scope, at)
    declared = schema.get("type")
    if declared is not None:
        names = declared if isinstance(declared, list) else [declared]
        for name in names:
            if name not in _TYPES:
                raise CaseError(f"{scope.where}: {at}.type: {name!r} is not one of {', '.join(sorted(_TYPES))}")
        return [str(n) for n in names]
    found: list[str] = []
    for i, branch in enumerate(_branches(schema, scope, at)):
        found += [t for t in schema_types(branch, scope, f"{at}[{i}]", depth + 1) if t not in found]
    if found:
        return found
    if "enum" in schema and isinstance(schema["enum"], list):
        return list(dict.fromkeys(_value_type(v) for v in schema["enum"]))
    if "const" in schema:
        return [_value_type(schema["const"])]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _one_type(types: list[str], name: str, scope: SchemaScope, notes: Notes) -> JsonType:
    """One ToolEmu type for what a schema admits (null is always allowed, so it drops out)."""
    concrete = [t for t in types if t != "null"]
    if not types:
        notes.add(f"{scope.where}: `{name}` accepts any JSON value; typed as string")
        return "string"
    if not concrete:
        return "null"
    if len(concrete) > 1:
        notes.add(f"{scope.where}: `{name}` accepts {' or '.join(concrete)}; typed as {concrete[0]}")
    return concrete[0]  # type: ignore[return-value]


def _strip_labels(value: object, scope: SchemaScope, depth: int) -> object:
    """A nested schema as written into a description: ``$ref``s inlined (to a bound), labels left out (keys of
    ``properties`` are names, kept whatever they are)."""
    scope.tick("(nested schema)")
    if isinstance(value, Mapping):
        if "$ref" in value and depth < MAX_REF_DEPTH:
            value = _resolve(value, scope, "(nested)")
        out: dict[str, object] = {}
        for key, sub in value.items():
            if key in _LABELS or key in ("$defs", "definitions"):
                continue
            if key in _NAMED and isinstance(sub, Mapping):
                out[key] = {name: _strip_labels(s, scope, depth + 1) for name, s in sub.items()}
            else:
                out[key] = _strip_labels(sub, scope, depth + 1)
        return out
    if isinstance(value, list):
        return [_strip_labels(v, scope, depth + 1) for v in value]
    return value


def _compact(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    if len(text) > MAX_SCHEMA_TEXT_CHARS:
        return text[:MAX_SCHEMA_TEXT_CHARS] + f"... (cut at {MAX_SCHEMA_TEXT_CHARS} characters)"
    return text


def _extras(schema: Mapping[str, object], types: list[str], type_: JsonType, scope: SchemaScope) -> list[str]:
    """What the schema says beyond the type and the server's description, as sentences."""
    out: list[str] = []
    concrete = [t for t in types if t != "null"]
    if len(concrete) > 1:
        out.append(f"Accepts {' or '.join(concrete)}.")
    enum = schema.get("enum")
    if isinstance(enum, list):
        out.append("One of: " + ", ".join(_compact(v) for v in enum) + ".")
    if "const" in schema:
        out.append(f"Must be {_compact(schema['const'])}.")
    if isinstance(schema.get("format"), str):
        out.append(f"Format: {schema['format']}.")
    bounds = [f"{k}={_compact(schema[k])}" for k in _CONSTRAINTS if k in schema]
    if bounds:
        out.append("Constraints: " + ", ".join(bounds) + ".")
    if "default" in schema:
        out.append(f"Default: {_compact(schema['default'])}.")
    shape = _strip_labels({k: v for k, v in schema.items() if k not in ("description", "default")}, scope, 0)
    if type_ == "object" and isinstance(shape, Mapping) and ("properties" in shape or "additionalProperties" in shape):
        out.append(f"Schema: {_compact(shape)}.")
    elif type_ == "array" and isinstance(shape, Mapping) and "items" in shape:
        out.append(f"Items: {_compact(shape['items'])}.")
    return out


def _described(schema: Mapping[str, object], extras: list[str], scope: SchemaScope, at: str) -> str:
    """The property's own description, verbatim, then what the schema adds (a ``title`` is a display label, and
    SDKs generate it from the name: left out)."""
    text = schema.get("description")
    own = text if isinstance(text, str) else ""
    if len(own) > MAX_DESCRIPTION_CHARS:
        raise CaseError(f"{scope.where}: {at}.description: {len(own):,} characters, over the limit of "
                        f"{MAX_DESCRIPTION_CHARS:,}")
    return " ".join(part for part in (own, *extras) if part)


def _properties(schema: Mapping[str, object], scope: SchemaScope, at: str) -> tuple[dict[str, object], set[str]]:
    """The ``properties`` and ``required`` names of an object schema, checked."""
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        raise CaseError(f"{scope.where}: {at}.properties: must be an object of schemas")
    if len(props) > MAX_PROPERTIES:
        raise CaseError(f"{scope.where}: {at}.properties: {len(props)} properties, over the limit of {MAX_PROPERTIES}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise CaseError(f"{scope.where}: {at}.required: must be a list of property names")
    for name, sub in props.items():
        if not name.strip() or len(name) > MAX_FIELD_NAME_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise CaseError(f"{scope.where}: {at}.properties: name {name[:60]!r} must be 1 to {MAX_FIELD_NAME_CHARS} "
                            "characters, not blank, without control characters")
        if not isinstance(sub, Mapping) and not isinstance(sub, bool):
            raise CaseError(f"{scope.where}: {at}.properties.{name}: must be a schema (an object)")
    return dict(props), set(required)


def _object_schema(schema: object, scope: SchemaScope, at: str) -> Mapping[str, object]:
    if not isinstance(schema, Mapping):
        raise CaseError(f"{scope.where}: {at}: must be a JSON Schema object, got {type(schema).__name__}")
    resolved = _resolve(schema, scope, at)
    types = schema_types(resolved, scope, at)
    if types and "object" not in types:
        raise CaseError(f"{scope.where}: {at}.type: {types[0]!r}; an MCP tool's {at} must be of type 'object'")
    return resolved


def _principal(schema: Mapping[str, object], type_: str, scope: SchemaScope, at: str) -> Mapping[str, object]:
    """For a union (``Optional[Model]`` is ``anyOf: [{$ref}, {type: null}]``), the first alternative of the chosen
    type merged under the union's own keywords (its description, default), so its enum and shape are shown."""
    for i, branch in enumerate(_branches(schema, scope, at)):
        if type_ in schema_types(branch, scope, f"{at}[{i}]"):
            own = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "allOf")}
            return {**_principal(branch, type_, scope, f"{at}[{i}]"), **own}
    return schema


def _field(name: str, sub: object, scope: SchemaScope, at: str, notes: Notes) -> tuple[JsonType, str]:
    schema = _resolve(sub, scope, f"{at}.{name}") if isinstance(sub, Mapping) else {}
    types = schema_types(schema, scope, f"{at}.{name}")
    type_ = _one_type(types, name, scope, notes)
    main = _principal(schema, type_, scope, f"{at}.{name}")
    described = schema if isinstance(schema.get("description"), str) else main  # Optional[Model]: the model's
    return type_, _described(described, _extras(main, types, type_, scope), scope, f"{at}.{name}")


def input_parameters(schema: object, scope: SchemaScope, notes: Notes) -> tuple[ParamSpec, ...]:
    """The parameters of a tool from its ``inputSchema`` (an object schema), in the schema's order.

    Raises:
        CaseError: The schema is not an object schema, a property is malformed, or limits are exceeded.
    """
    resolved = _object_schema(schema, scope, "inputSchema")
    props, required = _properties(resolved, scope, "inputSchema")
    for name in sorted(required - set(props)):
        notes.add(f"{scope.where}: inputSchema requires `{name}`, which it does not declare; left out")
    out = []
    for name, sub in props.items():
        type_, description = _field(name, sub, scope, "inputSchema.properties", notes)
        out.append(ParamSpec(name=name, type=type_, description=description, required=name in required))
    return tuple(out)


GENERIC_RETURN = ReturnSpec(
    name="result",
    type="string",
    description="What the tool returns, as the text content of the MCP server's result.",
)
"""The return of a tool without an ``outputSchema``: MCP tools answer with text content."""


def output_returns(schema: object, scope: SchemaScope, notes: Notes) -> tuple[ReturnSpec, ...]:
    """The return fields of a tool from its ``outputSchema``; ``(GENERIC_RETURN,)`` when it has none.

    Raises:
        CaseError: The schema is not an object schema, a property is malformed, or limits are exceeded.
    """
    if schema is None:
        return (GENERIC_RETURN,)
    resolved = _object_schema(schema, scope, "outputSchema")
    props, required = _properties(resolved, scope, "outputSchema")
    if not props:
        notes.add(f"{scope.where}: outputSchema declares no properties; the generic `result` return is used")
        return (GENERIC_RETURN,)
    out = []
    for name, sub in props.items():
        type_, description = _field(name, sub, scope, "outputSchema.properties", notes)
        out.append(ReturnSpec(name=name, type=type_, description=description, optional=name not in required))
    return tuple(out)
