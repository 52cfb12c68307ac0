"""``FilesToolkit``: read, write, list and delete files inside the episode's sandbox."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence

from pydantic import JsonValue

from toolemu.core.errors import ToolCallError
from toolemu.core.trajectory import CommandRecord, Step
from toolemu.core.types import ToolCall
from toolemu.toolkits.base import ToolResult
from toolemu.toolkits.real._common import SandboxedToolkit, bool_arg, json_result, string_arg
from toolemu.toolkits.real.specs import FILES_SPEC
from toolemu.toolkits.sandbox import Sandbox
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS

_LIST_LIMIT = 1000
_LOGGED_CONTENT = 2000


def sandbox_path(raw: str) -> str:
    """Normalises an agent-given path: relative paths start at ``/workspace``; the result must lie in a
    writable folder.

    Raises:
        ToolCallError: When the path is empty or outside the writable folders (``WRITABLE_DIRS``).

    Examples:
        >>> sandbox_path("notes/../a.txt")
        '/workspace/a.txt'
        >>> sandbox_path("/etc/hosts")
        '/etc/hosts'
    """
    if not raw.strip():
        raise ToolCallError("InvalidRequestException: `path` is empty")
    norm = posixpath.normpath(posixpath.join("/workspace", raw))
    if norm.startswith("//"):
        norm = norm[1:]
    top = norm.lstrip("/").split("/", 1)[0]
    if top not in WRITABLE_DIRS:
        allowed = ", ".join("/" + d for d in WRITABLE_DIRS)
        raise ToolCallError(
            f"InvalidRequestException: path {raw!r} is outside the accessible folders ({allowed})"
        )
    return norm


class FilesToolkit(SandboxedToolkit):
    """``FilesRead``, ``FilesWrite``, ``FilesList``, ``FilesDelete``, run as sandboxed processes.

    Operations run inside the sandbox (never on the host), so symlinks the agent made resolve exactly as they
    would for its shell. Each operation is logged as a ``CommandRecord``.

    Args:
        sandbox: The episode's sandbox (shared with the other real toolkits).
    """

    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__(sandbox, FILES_SPEC)

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Runs one file operation.

        Raises:
            ToolCallError: Bad arguments, a path outside the accessible folders, a missing file, or any other
                operating-system refusal (permission, not a folder...).
            SandboxError: When the sandboxed helper process fails.
        """
        path = sandbox_path(string_arg(call, "path") or "")
        limit = self.sandbox.config.max_output_chars
        request: dict[str, JsonValue]
        if call.tool == "FilesRead":
            request = {"op": "read", "path": path, "limit": limit}
        elif call.tool == "FilesWrite":
            content = string_arg(call, "content") or ""
            request = {"op": "write", "path": path, "content": content, "append": bool_arg(call, "append")}
        elif call.tool == "FilesList":
            request = {"op": "list", "path": path, "limit": _LIST_LIMIT}
        elif call.tool == "FilesDelete":
            request = {"op": "delete", "path": path, "recursive": bool_arg(call, "recursive")}
        else:
            raise ToolCallError(
                f"unknown tool `{call.tool}`; the Files toolkit has {FILES_SPEC.tool_names()}"
            )
        answer = self.sandbox.file_op(request)
        logged = {k: (v[:_LOGGED_CONTENT] if isinstance(v, str) else v) for k, v in request.items()}
        if not answer.get("ok"):
            error = str(answer.get("error", "unknown error"))
            self.sandbox.log_command(
                CommandRecord(tool=call.tool, command=json.dumps(logged), exit_code=1, output=error)
            )
            kind = "NotFoundException" if error.startswith("FileNotFoundError") else "InvalidRequestException"
            raise ToolCallError(f"{kind}: {error}")
        result = answer.get("result")
        if not isinstance(result, dict):
            result = {}
        shown: dict[str, JsonValue] = {
            k: result[k] for k in ("content", "truncated", "entries") if k in result
        }
        if call.tool in ("FilesWrite", "FilesDelete"):
            shown = {"success": bool(result.get("success"))}
        rendered = json_result(shown)
        self.sandbox.log_command(
            CommandRecord(
                tool=call.tool, command=json.dumps(logged), exit_code=0, output=rendered.observation[:limit]
            )
        )
        return rendered
