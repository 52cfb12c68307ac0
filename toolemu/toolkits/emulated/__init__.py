"""Emulated toolkits: a chat model plays the tools."""

from toolemu.toolkits.emulated.emulator import (
    EMULATOR_VERSION,
    EmulatedToolkit,
    EmulatorMode,
    check_reply,
    reply_schema,
)

__all__ = ["EMULATOR_VERSION", "EmulatedToolkit", "EmulatorMode", "check_reply", "reply_schema"]
