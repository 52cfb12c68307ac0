"""Registers ``ToolEmu-v0`` with Gymnasium (idempotent; runs on ``import toolemu``).

``ToolEmuSuite-v0`` sits a layer above, in ``toolemu.bench``, which registers it itself.
"""

from __future__ import annotations

import gymnasium as gym

ENV_ID = "ToolEmu-v0"


def register_envs() -> None:
    """Registers ``ToolEmu-v0`` if it is not registered yet."""
    if ENV_ID not in gym.registry:
        # Truncation at the case's max_steps is the env's own; Gymnasium's TimeLimit would need a fixed bound.
        gym.register(id=ENV_ID, entry_point="toolemu.envs.tool_use_env:ToolEmuEnv", nondeterministic=True)
