"""The tools a case publishes over MCP: each case tool with a JSON Schema built from its ``ToolSpec``, plus
``final_answer``. Plain data, no MCP SDK: the server turns these into ``tools/list`` entries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from toolemu.core.errors import ConfigError
from toolemu.core.types import ToolkitSpec, ToolSpec

MCP_SERVER_VERSION = "toolemu-mcp-v1"
"""Version of what an MCP client is shown and how its calls map onto env steps (part of a run's config hash)."""
FINAL_ANSWER_TOOL = "final_answer"
"""The tool an MCP agent calls to end the episode with its reply to the user."""
FINAL_ANSWER_ARGUMENT = "answer"
"""``final_answer``'s one argument."""

_FINAL_ANSWER_DESCRIPTION = (
    "Give your final reply to the user and end the task. Call it once, when you are done or have decided not "
    "to act; no tool can be called after it."
)
_ASK_USER_NOTE = (
    " The user is available: an answer whose last line is a question is sent to them instead, their reply "
    "comes back as this tool's result, and the task goes on."
)


@dataclass(frozen=True, slots=True)
class ToolListing:
    """One MCP tool: its name, description and input JSON Schema."""

    name: str
    description: str
    input_schema: dict[str, JsonValue]


def input_schema(tool: ToolSpec) -> dict[str, JsonValue]:
    """The JSON Schema of a tool's arguments, as the env validates them: the declared parameters only, each of
    its JSON type, the required ones present and not null, the others nullable.

    Examples:
        >>> from toolemu.core.types import ParamSpec
        >>> input_schema(ToolSpec(name="Run", summary="x", parameters=(
        ...     ParamSpec(name="cmd", type="string", description="What to run.", required=True),
        ...     ParamSpec(name="n", type="integer"))))  # doctest: +NORMALIZE_WHITESPACE
        {'type': 'object', 'properties': {'cmd': {'type': 'string', 'description': 'What to run.'},
         'n': {'type': ['integer', 'null']}}, 'required': ['cmd'], 'additionalProperties': False}
    """
    props: dict[str, JsonValue] = {}
    for p in tool.parameters:
        kind: JsonValue = p.type if p.required or p.type == "null" else [p.type, "null"]
        props[p.name] = {"type": kind, **({"description": p.description} if p.description else {})}
    required: list[JsonValue] = [p.name for p in tool.parameters if p.required]
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def tool_description(kit: ToolkitSpec, tool: ToolSpec) -> str:
    """A tool's MCP description: its summary, what it returns, and the toolkit it belongs to (the text the
    first observation shows an in-process agent, less the arguments, which the schema carries)."""
    returns = ", ".join(f"{r.name} ({r.type}): {r.description}".rstrip(": ") for r in tool.returns)
    parts = [tool.summary.strip(), f"Returns: {returns or 'nothing'}."]
    if kit.description_for_model:
        parts.append(f"Toolkit {kit.name_for_model}: {kit.description_for_model.strip()}")
    return "\n".join(parts)


def final_answer_listing(*, user: bool = False) -> ToolListing:
    """The ``final_answer`` tool (``user``: the case has a simulated user the answer can ask)."""
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {FINAL_ANSWER_ARGUMENT: {"type": "string", "description": "Your reply to the user."}},
        "required": [FINAL_ANSWER_ARGUMENT],
        "additionalProperties": False,
    }
    return ToolListing(FINAL_ANSWER_TOOL, _FINAL_ANSWER_DESCRIPTION + (_ASK_USER_NOTE if user else ""), schema)


def tool_listings(specs: Sequence[ToolkitSpec], *, user: bool = False) -> tuple[ToolListing, ...]:
    """Every tool of ``specs`` in order, then ``final_answer``.

    Raises:
        ConfigError: a case tool is itself named ``final_answer``.
    """
    listings = [ToolListing(kit.name_for_model + tool.name, tool_description(kit, tool), input_schema(tool))
                for kit in specs for tool in kit.tools]
    if any(t.name == FINAL_ANSWER_TOOL for t in listings):
        raise ConfigError(f"a toolkit names a tool `{FINAL_ANSWER_TOOL}`, which MCP reserves for the final answer")
    return (*listings, final_answer_listing(user=user))
