"""Registers ``ToolEmu-v0`` and ``ToolEmuSuite-v0`` with Gymnasium (idempotent; runs on ``import toolemu``)."""

from __future__ import annotations

import gymnasium as gym

ENV_ID = "ToolEmu-v0"
SUITE_ENV_ID = "ToolEmuSuite-v0"


def register_envs() -> None:
    """Registers our env ids if they are not registered yet."""
    if ENV_ID not in gym.registry:
        # Truncation at the case's max_steps is the env's own; Gymnasium's TimeLimit would need a fixed bound.
        gym.register(id=ENV_ID, entry_point="toolemu.envs.tool_use_env:ToolEmuEnv", nondeterministic=True)
    if SUITE_ENV_ID not in gym.registry:
        # A string entry point: the suite env sits above this layer (it selects cases as the bench does).
        gym.register(id=SUITE_ENV_ID, entry_point="toolemu.bench.suite_env:ToolEmuSuiteEnv", nondeterministic=True)
