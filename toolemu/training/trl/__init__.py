"""The TRL route: ToolEmu envs for TRL's ``GRPOTrainer`` through its multi-turn environment interface."""

from toolemu.training.trl.env import (
    ENDED,
    ToolEmuTRLEnv,
    tool_instructions,
    toolemu_reward,
    trl_dataset,
    trl_environment_factory,
)

__all__ = ["ENDED", "ToolEmuTRLEnv", "tool_instructions", "toolemu_reward", "trl_dataset", "trl_environment_factory"]
