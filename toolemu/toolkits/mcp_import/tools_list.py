"""Turns an MCP server's ``tools/list`` result into an emulated ToolEmu toolkit spec.

The result is untrusted (a server's author writes every description an agent will read): it is read as data,
bounded in size and counts, and each tool's description is kept verbatim, since what a description tells the
agent is exactly what a case on an imported toolkit tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from toolemu.core.errors import CaseError, ConfigError
from toolemu.core.toolkit_check import check_toolkit
from toolemu.core.types import ExceptionSpec, ToolkitSpec, ToolSpec
from toolemu.core.untrusted import parse_json, read_text
from toolemu.toolkits.mcp_import.schema import (
    MAX_DESCRIPTION_CHARS,
    Notes,
    SchemaScope,
    input_parameters,
    output_returns,
)

MAX_TOOLS_LIST_BYTES = 8 * 1024 * 1024
"""Largest ``tools/list`` file read."""
MAX_TOOLS = 256
"""Most tools one toolkit takes."""
MAX_TOOL_NAME_CHARS = 128
"""Longest MCP tool name (the MCP specification's bound)."""

TOOL_ERROR = ExceptionSpec(
    name="ToolError",
    description="The server reports that the call failed (an MCP result with isError set): bad arguments, "
    "something missing, or not allowed.",
)
"""The one exception every imported tool declares: an MCP tool reports failure in its result, not by type."""

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


class McpImport(NamedTuple):
    """What ``toolkit_from_tools_list`` made."""

    spec: ToolkitSpec
    """The emulated toolkit, already passing ``check_toolkit``."""
    notes: tuple[str, ...]
    """What the import renamed, guessed or left out, one line each."""


def read_tools_list(path: str | Path) -> object:
    """Reads a saved ``tools/list`` answer (JSON) under the input policy.

    Raises:
        CaseError: The file is missing, too large, not UTF-8, or not valid JSON; naming the file.
    """
    text = read_text(path, what="MCP tools/list result", limit=MAX_TOOLS_LIST_BYTES)
    return parse_json(text, str(path))


def check_toolkit_name(name: str) -> None:
    """Checks a toolkit name for an import (it prefixes every model-facing tool name).

    Raises:
        ConfigError: ``name`` is not letters, digits or ``_`` starting with a letter.
    """
    if not _NAME_RE.match(name):
        raise ConfigError(f"--name {name!r}: must be letters, digits or _ and start with a letter (e.g. McpFiles)")


def _tools_of(data: object, source: str, notes: Notes) -> list[object]:
    """The ``tools`` list of a bare result (``{"tools": [...]}``) or of a JSON-RPC response carrying one."""
    if isinstance(data, Mapping) and "jsonrpc" in data:
        if "error" in data:
            error = data["error"]
            message = error.get("message") if isinstance(error, Mapping) else error
            raise CaseError(f"{source}: a JSON-RPC error response ({str(message)[:200]!r}), not a tools/list result")
        if "result" not in data:
            raise CaseError(f"{source}: a JSON-RPC message without `result`; expected the response to tools/list")
        data = data["result"]
    if not isinstance(data, Mapping) or "tools" not in data:
        raise CaseError(f"{source}: expected a tools/list result ({{\"tools\": [...]}}) or a JSON-RPC response "
                        "holding one in `result`")
    if data.get("nextCursor"):
        notes.add(f"{source}: the result has a nextCursor: only this page of tools was imported")
    tools = data["tools"]
    if not isinstance(tools, list):
        raise CaseError(f"{source}: tools: must be a list, got {type(tools).__name__}")
    if not tools:
        raise CaseError(f"{source}: tools: empty; the server lists no tools to emulate")
    if len(tools) > MAX_TOOLS:
        raise CaseError(f"{source}: tools: {len(tools)} tools, over the limit of {MAX_TOOLS} for one toolkit")
    return tools


def tool_name(mcp_name: str) -> str:
    """The ToolEmu tool name for an MCP tool name: its words capitalised and joined (``read_file`` ->
    ``ReadFile``), starting with a letter.

    Examples:
        >>> tool_name("read_file"), tool_name("create-ticket"), tool_name("notes.search"), tool_name("2fa_reset")
        ('ReadFile', 'CreateTicket', 'NotesSearch', 'Tool2faReset')
    """
    words = [w for w in re.split(r"[^A-Za-z0-9]+", mcp_name) if w]
    name = "".join(w[0].upper() + w[1:] for w in words)
    return name if name[:1].isalpha() else "Tool" + name


def _text(value: object, where: str, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CaseError(f"{where}: {field}: must be a string, got {type(value).__name__}")
    if len(value) > MAX_DESCRIPTION_CHARS:
        raise CaseError(f"{where}: {field}: {len(value):,} characters, over the limit of {MAX_DESCRIPTION_CHARS:,}")
    return value


def _hints(annotations: object, where: str) -> str:
    """The tool's behaviour hints as one sentence (``MCP annotations: readOnlyHint=true.``), or ``""``."""
    if annotations is None:
        return ""
    if not isinstance(annotations, Mapping):
        raise CaseError(f"{where}: annotations: must be an object")
    given = []
    for hint in _HINTS:
        value = annotations.get(hint)
        if value is not None:
            if not isinstance(value, bool):
                raise CaseError(f"{where}: annotations.{hint}: must be true or false, got {value!r:.40}")
            given.append(f"{hint}={'true' if value else 'false'}")
    return f"MCP annotations: {', '.join(given)}." if given else ""


def _summary(tool: Mapping[str, object], mcp_name: str, where: str) -> str:
    """The server's description verbatim, then the MCP name and hints (our text, after it)."""
    description = _text(tool.get("description"), where, "description")
    annotations = tool.get("annotations")
    title = _text(tool.get("title") or (annotations.get("title") if isinstance(annotations, Mapping) else None),
                  where, "title")
    ours = f"(MCP tool `{mcp_name}`{f', titled {title!r}' if title else ''}.)"
    return " ".join(part for part in (description, ours, _hints(annotations, where)) if part)


def _tool(raw: object, index: int, source: str, notes: Notes) -> tuple[str, ToolSpec]:
    where = f"{source}: tools[{index}]"
    if not isinstance(raw, Mapping):
        raise CaseError(f"{where}: must be an object with `name` and `inputSchema`, got {type(raw).__name__}")
    mcp_name = raw.get("name")
    if not isinstance(mcp_name, str) or not mcp_name.strip():
        raise CaseError(f"{where}.name: missing or not a non-empty string")
    if len(mcp_name) > MAX_TOOL_NAME_CHARS:
        raise CaseError(f"{where}.name: {len(mcp_name)} characters, over the MCP limit of {MAX_TOOL_NAME_CHARS}")
    where = f"{where} (`{mcp_name}`)"
    if "inputSchema" not in raw:
        raise CaseError(f"{where}: inputSchema: missing; an MCP tool declares its arguments as an object schema")
    scope = SchemaScope(root=raw["inputSchema"] if isinstance(raw["inputSchema"], Mapping) else {}, where=where)
    parameters = input_parameters(raw["inputSchema"], scope, notes)
    output = raw.get("outputSchema")
    out_scope = SchemaScope(root=output if isinstance(output, Mapping) else {}, where=where)
    return mcp_name, ToolSpec(
        name=tool_name(mcp_name),
        summary=_summary(raw, mcp_name, where),
        parameters=parameters,
        returns=output_returns(output, out_scope, notes),
        exceptions=(TOOL_ERROR,),
    )


def _unique(named: list[tuple[str, ToolSpec]], source: str, notes: Notes) -> list[ToolSpec]:
    """Gives tools whose names collide after conversion (``get-item``, ``get_item``) a numbered name."""
    seen_mcp: set[str] = set()
    taken: set[str] = set()
    out = []
    for mcp_name, tool in named:
        if mcp_name in seen_mcp:
            raise CaseError(f"{source}: tools: `{mcp_name}` is listed twice; MCP tool names are unique")
        seen_mcp.add(mcp_name)
        name, n = tool.name, 2
        while name in taken:
            name, n = f"{tool.name}{n}", n + 1
        if name != tool.name:
            notes.add(f"{source}: `{mcp_name}` would be `{tool.name}` like an earlier tool; named `{name}`")
            tool = tool.model_copy(update={"name": name})
        taken.add(name)
        out.append(tool)
    return out


def toolkit_from_tools_list(
    data: object, *, name: str, source: str, description: str = "", human_name: str = ""
) -> McpImport:
    """Builds an emulated toolkit spec from a ``tools/list`` result.

    Each tool becomes a ToolEmu tool: its name converted (``read_file`` -> ``ReadFile``, model-facing
    ``<name>ReadFile``), its description kept verbatim with its MCP name and annotations after it, its
    ``inputSchema`` properties as parameters, its ``outputSchema`` properties as returns (else one ``result``
    text), and one ``ToolError`` exception.

    Args:
        data: The parsed answer: ``{"tools": [...]}`` or a JSON-RPC response holding it in ``result``.
        name: The toolkit's name, also the prefix of its model-facing tool names (letters, digits, ``_``).
        source: What the data came from, for messages (a file, a server command).
        description: The toolkit's description for models (default: one naming the MCP server).
        human_name: Display name (default: ``name``).

    Returns:
        The spec and the import's notes.

    Raises:
        ConfigError: ``name`` is not a valid toolkit name.
        CaseError: One line naming the source, the tool and the field that is malformed or over a limit.
    """
    check_toolkit_name(name)
    notes = Notes()
    tools = _tools_of(data, source, notes)
    named = [_tool(raw, i, source, notes) for i, raw in enumerate(tools)]
    spec = ToolkitSpec(
        toolkit=name,
        name_for_model=name,
        name_for_human=human_name or name,
        description_for_model=_text(description, source, "description")
        or f"The tools of the MCP server `{human_name or name}`, emulated.",
        category="MCP server",
        tools=tuple(_unique(named, source, notes)),
    )
    try:
        check_toolkit(spec)
    except CaseError as e:
        raise CaseError(f"{source}: {e}") from None
    return McpImport(spec=spec, notes=tuple(notes.lines))
