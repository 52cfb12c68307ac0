"""Gymnasium environments: ``ToolEmuEnv`` (``ToolEmu-v0``), its config, spaces, action parsing and info keys
(``ToolEmuSuite-v0`` lives and is registered in ``toolemu.bench``)."""

from toolemu.envs.action import ParsedAction, parse_action
from toolemu.envs.config import EnvConfig, effective_evaluate
from toolemu.envs.info import (
    INFO_CAPTURE,
    INFO_CASE_ID,
    INFO_ERROR,
    INFO_EVALUATION,
    INFO_FINAL_STATE,
    INFO_LOOP_REPEATS,
    INFO_PARSE_ERRORS,
    INFO_STATUS,
    INFO_STEP,
    INFO_TOOL_ERRORS,
    INFO_TOOLS,
    INFO_TRAJECTORY,
)
from toolemu.envs.registration import ENV_ID, register_envs
from toolemu.envs.spaces import UnicodeText
from toolemu.envs.tool_use_env import ToolEmuEnv
from toolemu.rewards.mode import EvaluateMode

__all__ = [
    "ENV_ID",
    "INFO_CAPTURE",
    "INFO_CASE_ID",
    "INFO_ERROR",
    "INFO_EVALUATION",
    "INFO_FINAL_STATE",
    "INFO_LOOP_REPEATS",
    "INFO_PARSE_ERRORS",
    "INFO_STATUS",
    "INFO_STEP",
    "INFO_TOOLS",
    "INFO_TOOL_ERRORS",
    "INFO_TRAJECTORY",
    "EnvConfig",
    "EvaluateMode",
    "ParsedAction",
    "ToolEmuEnv",
    "UnicodeText",
    "effective_evaluate",
    "parse_action",
    "register_envs",
]
