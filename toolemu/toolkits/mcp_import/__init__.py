"""MCP tools, emulated: an MCP server's ``tools/list`` result (a saved file, or a live server) as a ToolEmu
toolkit spec the emulator plays."""

from toolemu.toolkits.mcp_import.live import ServerTools, fetch_tools_list
from toolemu.toolkits.mcp_import.tools_list import (
    McpImport,
    check_toolkit_name,
    read_tools_list,
    tool_name,
    toolkit_from_tools_list,
)

__all__ = [
    "McpImport",
    "ServerTools",
    "check_toolkit_name",
    "fetch_tools_list",
    "read_tools_list",
    "tool_name",
    "toolkit_from_tools_list",
]
