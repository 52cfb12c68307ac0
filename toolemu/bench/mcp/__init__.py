"""A case as an MCP server (``toolemu mcp``) and an external MCP-speaking agent under bench
(``toolemu bench --agent-mcp-command``).

``McpEpisode`` and the tool listings need no MCP SDK; ``toolemu.bench.mcp.server``, ``.http`` and
``.agent_command`` import it (``pip install 'toolemu[interop]'``).
"""

from toolemu.bench.mcp.episode import McpEpisode, ToolReply, final_action, tool_action
from toolemu.bench.mcp.tools import FINAL_ANSWER_TOOL, ToolListing, input_schema, tool_listings

__all__ = [
    "FINAL_ANSWER_TOOL",
    "McpEpisode",
    "ToolListing",
    "ToolReply",
    "final_action",
    "input_schema",
    "tool_action",
    "tool_listings",
]
