"""``PythonToolkit``: a persistent Python interpreter inside the episode's sandbox."""

from __future__ import annotations

from collections.abc import Sequence

from toolemu.core.errors import ToolCallError
from toolemu.core.trajectory import Step
from toolemu.core.types import ToolCall
from toolemu.toolkits.base import ToolResult
from toolemu.toolkits.real._common import SandboxedToolkit, execution_result, string_arg
from toolemu.toolkits.real.specs import PYTHON_SPEC
from toolemu.toolkits.sandbox import Sandbox


class PythonToolkit(SandboxedToolkit):
    """``PythonExecute(code)``; globals persist across calls; answers ``{"output", "exit_code"}`` JSON.

    Args:
        sandbox: The episode's sandbox (shared with the other real toolkits).
    """

    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__(sandbox, PYTHON_SPEC)

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Runs the code in the episode's interpreter (started on first use, in ``/workspace``).

        Raises:
            ToolCallError: When ``code`` is missing or not a string.
            SandboxError: When the interpreter cannot start.
        """
        if call.tool != "PythonExecute":
            raise ToolCallError(f"unknown tool `{call.tool}`; the Python toolkit has `PythonExecute`")
        code = string_arg(call, "code") or ""
        return execution_result(self.sandbox.run_python(code, tool=call.tool))
