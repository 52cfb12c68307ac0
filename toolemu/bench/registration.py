"""Registers ``ToolEmuSuite-v0`` with Gymnasium (idempotent; runs on ``import toolemu``).

The suite env lives in this layer because it selects cases as the bench does; ``ToolEmu-v0`` is registered
by ``toolemu.envs`` below it.
"""

from __future__ import annotations

from typing import cast

import gymnasium as gym
from gymnasium.envs.registration import EnvCreator

from toolemu.bench.suite_env import ToolEmuSuiteEnv

SUITE_ENV_ID = "ToolEmuSuite-v0"


def register_suite_env() -> None:
    """Registers ``ToolEmuSuite-v0`` if it is not registered yet."""
    if SUITE_ENV_ID not in gym.registry:
        # The class itself, so that gym.make reads its metadata (render modes); ``gym.make`` passes every
        # argument by keyword, which its constructor takes, though its signature is not EnvCreator's.
        gym.register(id=SUITE_ENV_ID, entry_point=cast(EnvCreator, ToolEmuSuiteEnv), nondeterministic=True)
