"""Asks a live MCP server for its tools: starts it by a command over stdio with the ``mcp`` SDK's client,
initialises a session, pages through ``tools/list`` and stops it, all within a time limit.

The command runs on the host as the caller (it is the caller's own server), with the SDK's minimal environment
(``HOME``, ``PATH`` and the like: no API keys); its stderr is kept apart and quoted, in part, when it fails.
"""

from __future__ import annotations

import shlex
import tempfile
from typing import NamedTuple, TextIO

from toolemu.core.errors import CaseError, ConfigError
from toolemu.toolkits.mcp_import.tools_list import MAX_TOOLS

MAX_PAGES = 50
"""Most ``tools/list`` pages followed (``nextCursor``)."""
_STDERR_TAIL_CHARS = 300


class ServerTools(NamedTuple):
    """What a live server answered."""

    result: dict[str, object]
    """The ``tools/list`` result, every page's tools in one ``{"tools": [...]}``, as the server sent them."""
    server_name: str
    """``serverInfo.name`` from the server's ``initialize`` answer (may be empty)."""
    instructions: str
    """The server's ``instructions`` (may be empty)."""


def _leaf(error: BaseException) -> BaseException:
    """The first real error inside the SDK's task-group wrappers."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _stderr_tail(errlog: TextIO) -> str:
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    return f"; its stderr ends: {lines[-1][-_STDERR_TAIL_CHARS:]!r}" if lines else ""


async def _list_tools(command: list[str], timeout_s: float, errlog: TextIO) -> ServerTools:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import PaginatedRequestParams

    params = StdioServerParameters(command=command[0], args=command[1:])
    tools: list[object] = []
    with anyio.fail_after(timeout_s):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
                cursor = page.next_cursor
                if not cursor or len(tools) > MAX_TOOLS:  # over the limit: the spec builder refuses it by name
                    break
            else:
                raise CaseError(f"tools/list: still paging after {MAX_PAGES} pages; refusing an endless listing")
    return ServerTools(
        result={"tools": tools},
        server_name=init.server_info.name or "",
        instructions=init.instructions or "",
    )


def fetch_tools_list(command: str, *, timeout_s: float = 30.0) -> ServerTools:
    """Starts the MCP server ``command`` over stdio and returns its ``tools/list`` result.

    Args:
        command: The server's command line, split as a shell would (no shell runs it).
        timeout_s: Limit for starting, initialising and listing, together; the server is stopped after.

    Returns:
        Its tools, its name and its instructions.

    Raises:
        ConfigError: The ``mcp`` package is missing, the command is empty or cannot start, the server exits,
            answers with an error, or does not answer within ``timeout_s``.
        CaseError: The server pages without end.
    """
    try:
        from mcp import MCPError
    except ImportError:
        raise ConfigError("--command needs the `mcp` package: pip install 'toolemu[interop]'") from None
    argv = shlex.split(command)
    if not argv:
        raise ConfigError("--command: empty; give the MCP server's command line")
    import anyio

    where = f"--command {command!r}"
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            return anyio.run(_list_tools, argv, timeout_s, errlog)
        except BaseException as wrapped:  # the SDK raises task-group wrappers; judge the error inside
            error = _leaf(wrapped)
            if isinstance(error, CaseError):
                raise CaseError(f"{where}: {error}") from None
            if isinstance(error, TimeoutError):
                tail = _stderr_tail(errlog)
                raise ConfigError(f"{where}: no tools/list answer within {timeout_s:g} s{tail}") from None
            if isinstance(error, FileNotFoundError | PermissionError):
                raise ConfigError(f"{where}: cannot start `{argv[0]}`: {error.strerror or error}") from None
            if isinstance(error, MCPError | OSError):
                raise ConfigError(f"{where}: {type(error).__name__}: {error}{_stderr_tail(errlog)}") from None
            if isinstance(error, ValueError):  # the SDK's models refused what the server sent
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise CaseError(f"{where}: the server's answer is malformed: {first}") from None
            raise
