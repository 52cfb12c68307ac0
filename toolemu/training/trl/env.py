"""ToolEmu envs for TRL's ``GRPOTrainer`` through its multi-turn environment interface (``environment_factory``).

TRL builds one ``ToolEmuTRLEnv`` per rollout, calls ``reset(**row)`` with the dataset row (its ``case`` column
names the case) and appends the returned observation to the prompt; the model then calls ``use_tool`` through
its chat template's native tool calling (TRL parses the calls and masks the tool results out of the loss). The
completion's last reply is the final answer: ``toolemu_reward`` ends each episode with it and returns the env's
terminal reward; an errored episode returns ``None``, which TRL leaves out of the group baseline and the loss.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from toolemu.core.errors import ConfigError
from toolemu.envs import INFO_STATUS, EnvConfig, ToolEmuEnv
from toolemu.testcases import Case

logger = logging.getLogger(__name__)

ENDED = "The episode has ended (no steps left); reply with your final answer, without a function call."


@cache
def tool_instructions() -> str:
    """The note put before each case's first observation: how to call its tools through ``use_tool``."""
    return resources.files("toolemu.training.trl").joinpath("prompts", "tools.md").read_text(encoding="utf-8").strip()


class ToolEmuTRLEnv:
    """One rollout's env for TRL. Public methods other than ``reset`` are the model's tools.

    Args:
        cases: The cases rows may name, by id.
        env_config: How each case's ``ToolEmuEnv`` is built (emulator, judges, ``evaluate="rules"``...).
    """

    def __init__(self, cases: Mapping[str, Case], env_config: EnvConfig | None = None) -> None:
        self._cases = cases
        self._config = env_config or EnvConfig()
        self._envs: dict[str, ToolEmuEnv] = {}
        self._env: ToolEmuEnv | None = None
        self._reward: float | None = None
        self._done = False

    def reset(self, case: str, seed: int | None = None, **row: Any) -> str:
        """Starts an episode of ``case`` and returns its first observation (instruction and tools).

        Raises:
            ConfigError: the row names a case that was not given.
        """
        if case not in self._cases:
            raise ConfigError(f"dataset row names case `{case}`, which is not among the {len(self._cases)} cases "
                              "given to trl_environment_factory")
        if case not in self._envs:
            self._envs[case] = ToolEmuEnv(self._cases[case], self._config)
        self._env = self._envs[case]
        observation, _ = self._env.reset(seed=seed)
        self._reward, self._done = None, False
        return f"\n\n{tool_instructions()}\n\n{observation}"

    def use_tool(self, tool: str, arguments: dict[str, Any]) -> str:
        """Calls one of the task's tools and returns its output.

        Args:
            tool: The tool's name, exactly as listed in the task.
            arguments: The tool's arguments, as a JSON object.
        """
        if self._done:
            return ENDED
        action = json.dumps({"tool": tool, "arguments": arguments}, ensure_ascii=False, default=str)
        observation, reward, terminated, truncated, _ = self._env_or_raise().step(action)
        if terminated or truncated:
            self._end(float(reward))
            return f"{observation}\n{ENDED}".strip()
        return str(observation)

    def _env_or_raise(self) -> ToolEmuEnv:
        if self._env is None:
            raise ConfigError("ToolEmuTRLEnv used before reset(case=...); TRL resets each env before a rollout")
        return self._env

    def _end(self, reward: float) -> None:
        env = self._env_or_raise()
        failed = env.trajectory().status == "error" or math.isnan(reward)
        self._reward, self._done = (None if failed else reward), True

    def _finish(self, final_answer: str) -> float | None:
        """Ends the episode with ``final_answer`` (unless it already ended); returns its reward, ``None`` if errored."""
        if not self._done:
            text = final_answer.strip() or "(no answer)"
            _, reward, _, _, info = self._env_or_raise().step(json.dumps({"final_answer": text}, ensure_ascii=False))
            self._end(float(reward) if info.get(INFO_STATUS) != "error" else math.nan)
        return self._reward

    def _close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()


def trl_environment_factory(cases: Sequence[Case], env_config: EnvConfig | None = None) -> Callable[[], ToolEmuTRLEnv]:
    """Returns the zero-argument factory ``GRPOTrainer(environment_factory=...)`` takes."""
    by_id = {c.id: c for c in cases}
    return lambda: ToolEmuTRLEnv(by_id, env_config)


def trl_dataset(cases: Sequence[Case], *, repeats: int = 1) -> Any:
    """A ``datasets.Dataset`` with one row per case (``repeats`` times): an empty user prompt (the env's first
    observation is appended to it) and the ``case`` column ``reset`` reads.

    Raises:
        ConfigError: ``datasets`` is not installed.
    """
    try:
        import datasets
    except ImportError as e:
        raise ConfigError("TRL training needs datasets: pip install 'toolemu[training]'") from e
    rows = [{"prompt": [{"role": "user", "content": "Task:"}], "case": c.id} for _ in range(repeats) for c in cases]
    return datasets.Dataset.from_list(rows)


def _final_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    replies = [m.get("content") or "" for m in completion if m.get("role") == "assistant"]
    last = replies[-1] if replies else ""
    return last if isinstance(last, str) else " ".join(str(p.get("text", "")) for p in last if isinstance(p, dict))


def toolemu_reward(completions: Sequence[Any], environments: Sequence[ToolEmuTRLEnv] | None = None,
                   **kwargs: Any) -> list[float | None]:
    """TRL reward function: ends each rollout's episode with the completion's last reply as the final answer.

    Returns:
        The env's terminal reward per completion; ``None`` for an errored episode (counted in the
        ``toolemu/errors`` metric, never scored).

    Raises:
        ConfigError: called without TRL's ``environments`` (the trainer was built without
            ``environment_factory``).
    """
    if environments is None:
        raise ConfigError("toolemu_reward needs GRPOTrainer(environment_factory=trl_environment_factory(...))")
    rewards = [env._finish(_final_text(c)) for c, env in zip(completions, environments, strict=True)]
    log_metric = kwargs.get("log_metric")
    if callable(log_metric):
        log_metric("toolemu/errors", float(sum(r is None for r in rewards)))
    return rewards
