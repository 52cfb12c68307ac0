"""``TerminalToolkit``: ToolEmu's Terminal, run for real in the episode's persistent sandboxed bash."""

from __future__ import annotations

from collections.abc import Sequence

from toolemu.core.errors import ToolCallError
from toolemu.core.trajectory import Step
from toolemu.core.types import ToolCall
from toolemu.toolkits.base import ToolResult
from toolemu.toolkits.real._common import SandboxedToolkit, execution_result, string_arg
from toolemu.toolkits.real.specs import TERMINAL_SPEC
from toolemu.toolkits.sandbox import Sandbox


class TerminalToolkit(SandboxedToolkit):
    """``TerminalExecute(command)`` in the sandbox's bash session; answers ``{"output", "exit_code"}`` JSON.

    Args:
        sandbox: The episode's sandbox (shared with the other real toolkits).
    """

    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__(sandbox, TERMINAL_SPEC)

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Runs the command; cwd, env and background jobs persist between calls.

        Raises:
            ToolCallError: When ``command`` is missing or not a string.
            SandboxError: When the sandbox cannot run it.
        """
        if call.tool != "TerminalExecute":
            raise ToolCallError(f"unknown tool `{call.tool}`; the Terminal toolkit has `TerminalExecute`")
        command = string_arg(call, "command") or ""
        return execution_result(self.sandbox.run_shell(command, tool=call.tool))
