"""Toolkits: emulated (an LM plays the tool) and real (sandboxed), composed per episode by ``ToolBox``."""

from toolemu.toolkits.base import EpisodeSetup, Toolkit, ToolResult
from toolemu.toolkits.emulated import EMULATOR_VERSION, EmulatedToolkit, EmulatorMode
from toolemu.toolkits.real import REAL_TOOLKITS, is_real_toolkit
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig
from toolemu.toolkits.spec_loader import builtin_toolkit_specs, find_specs_near, load_toolkit_specs
from toolemu.toolkits.toolbox import ToolBox
from toolemu.toolkits.validation import validate_call

__all__ = [
    "EMULATOR_VERSION",
    "REAL_TOOLKITS",
    "EmulatedToolkit",
    "EmulatorMode",
    "EpisodeSetup",
    "Sandbox",
    "SandboxConfig",
    "ToolBox",
    "ToolResult",
    "Toolkit",
    "builtin_toolkit_specs",
    "find_specs_near",
    "is_real_toolkit",
    "load_toolkit_specs",
    "validate_call",
]
