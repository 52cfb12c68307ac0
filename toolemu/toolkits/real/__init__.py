"""Real toolkits that run inside the episode's bubblewrap sandbox: Terminal, Python, Files, and the Browser
(a sandboxed Chromium of its own, in the episode's network)."""

from __future__ import annotations

from toolemu.core.registry import Registry
from toolemu.core.types import ToolkitSpec
from toolemu.toolkits.base import Toolkit
from toolemu.toolkits.browser.spec import BROWSER_SPEC
from toolemu.toolkits.real.files import FilesToolkit, sandbox_path
from toolemu.toolkits.real.python import PythonToolkit
from toolemu.toolkits.real.specs import FILES_SPEC, PYTHON_SPEC, TERMINAL_SPEC
from toolemu.toolkits.real.terminal import TerminalToolkit

REAL_TOOLKITS: Registry[Toolkit] = Registry("real toolkit")
"""Real toolkit ids; ``REAL_TOOLKITS.make(name, sandbox=sandbox)`` builds one over a shared ``Sandbox``."""
REAL_TOOLKITS.register("Terminal", TerminalToolkit)
REAL_TOOLKITS.register("Python", PythonToolkit)
REAL_TOOLKITS.register("Files", FilesToolkit)
REAL_TOOLKITS.register("Browser", "toolemu.toolkits.browser.toolkit:BrowserToolkit")

REAL_SPECS: dict[str, ToolkitSpec] = {s.toolkit: s for s in (TERMINAL_SPEC, PYTHON_SPEC, FILES_SPEC, BROWSER_SPEC)}
"""The spec of each real toolkit, by id (what an agent is shown, without starting a sandbox)."""


def is_real_toolkit(name: str) -> bool:
    """Returns whether ``name`` is a real (sandboxed) toolkit id.

    Examples:
        >>> is_real_toolkit("Terminal"), is_real_toolkit("Gmail")
        (True, False)
    """
    return name in REAL_TOOLKITS


__all__ = [
    "FILES_SPEC",
    "PYTHON_SPEC",
    "REAL_SPECS",
    "REAL_TOOLKITS",
    "TERMINAL_SPEC",
    "FilesToolkit",
    "PythonToolkit",
    "TerminalToolkit",
    "is_real_toolkit",
    "sandbox_path",
]
