"""One served episode env: ``ToolEmu-v0`` or ``ToolEmuSuite-v0`` behind OpenEnv's ``Environment`` interface."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from toolemu.bench.suite_env import OPTION_CASE, ToolEmuSuiteEnv
from toolemu.core.errors import ConfigError, EnvStateError
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.envs.info import INFO_CASE_ID, INFO_STATUS, INFO_STEP
from toolemu.serving.models import ToolEmuAction, ToolEmuObservation, ToolEmuState, json_info, wire_reward
from toolemu.testcases import Case


@dataclass(frozen=True, slots=True)
class ServedCases:
    """What a server serves: one case (``ToolEmu-v0``) or a suite (``ToolEmuSuite-v0``), under one env config."""

    cases: tuple[Case, ...]
    config: EnvConfig
    suite: bool
    """``True``: each session holds a ``ToolEmuSuiteEnv`` over ``cases``; ``False``: a ``ToolEmuEnv`` of the
    one case."""

    @property
    def env_id(self) -> str:
        """The Gymnasium id each session's env has."""
        return "ToolEmuSuite-v0" if self.suite else "ToolEmu-v0"

    def make(self) -> gym.Env[str, str]:
        """A fresh env of a new session."""
        if self.suite:
            return ToolEmuSuiteEnv(list(self.cases), self.config)
        return ToolEmuEnv(self.cases[0], self.config)


def served_cases(cases: Sequence[Case], config: EnvConfig, *, suite: bool) -> ServedCases:
    """Checks what a server is asked to serve.

    Raises:
        ConfigError: no case, or several without ``suite``.
    """
    if not cases:
        raise ConfigError("toolemu serve needs a case (--case ID) or a suite (--suite NAME)")
    if not suite and len(cases) != 1:
        raise ConfigError(f"ToolEmu-v0 serves one case, got {len(cases)}; serve them as a suite (--suite)")
    return ServedCases(tuple(cases), config, suite)


class ServedEnv(Environment[ToolEmuAction, ToolEmuObservation, ToolEmuState]):
    """A session's env: ``reset(seed=..., case=...)``, ``step(action)``, ``state``, ``close()``.

    The gym env is built on the first ``reset`` (in the session's own thread, as every later call), so opening a
    session costs nothing until it is used.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: ServedCases, session_id: str) -> None:
        super().__init__()
        self._served = served
        self._session_id = session_id
        self._env: gym.Env[str, str] | None = None
        self._episode_id: str | None = None
        self._step_count = 0
        self._case_id: str | None = None
        self._status: str | None = None
        self._closed = False

    @property
    def env(self) -> gym.Env[str, str] | None:
        """The gym env (``None`` until the first reset, and after ``close``)."""
        return self._env

    def reset(self, seed: int | None = None, episode_id: str | None = None, case: str | None = None,
              **kwargs: Any) -> ToolEmuObservation:
        """Starts an episode: of ``case`` (a suite's case id; a single case's own id or nothing), with ``seed``.

        Raises:
            ConfigError: an unknown reset parameter, or a case the server does not serve.
            EnvStateError: the session is closed.
            InfraError: the toolkits or the sandbox could not be set up.
        """
        if kwargs:
            raise ConfigError(f"reset: unknown parameter `{sorted(kwargs)[0]}`; the parameters are `seed`, "
                              f"`episode_id` and `case`")
        env = self._live_env()
        if isinstance(env, ToolEmuSuiteEnv):
            obs, info = env.reset(seed=seed, options={OPTION_CASE: case} if case is not None else None)
        else:
            served_id = self._served.cases[0].id
            if case is not None and case != served_id:
                raise ConfigError(f"reset: case `{case}` is not served here; this server serves `{served_id}`")
            obs, info = env.reset(seed=seed)
        self._episode_id = episode_id or str(uuid.uuid4())
        self._step_count = 0
        self._note(info)
        return ToolEmuObservation(text=obs, info=json_info(info), reward=None, session_id=self._session_id)

    def step(self, action: ToolEmuAction, timeout_s: float | None = None, **kwargs: Any) -> ToolEmuObservation:
        """Runs one action in the episode (``ToolEmuEnv.step``).

        Raises:
            EnvStateError: no episode was started, it has ended, or the session is closed.
        """
        env = self._live_env()
        obs, reward, terminated, truncated, info = env.step(action.env_text())
        self._step_count += 1
        self._note(info)
        return ToolEmuObservation(text=obs, terminated=terminated, truncated=truncated, done=terminated or truncated,
                                  reward=wire_reward(float(reward)), info=json_info(info),
                                  session_id=self._session_id)

    @property
    def state(self) -> ToolEmuState:
        """The session's episode id, step count, case and status."""
        return ToolEmuState(episode_id=self._episode_id, step_count=self._step_count, case_id=self._case_id,
                            status=self._status, session_id=self._session_id)

    def get_metadata(self) -> EnvironmentMetadata:
        """The served env's id and cases."""
        return metadata_of(self._served)

    def close(self) -> None:
        """Closes the gym env (its sandboxes, services and processes); later calls are refused."""
        self._closed = True
        env, self._env = self._env, None
        if env is not None:
            env.close()

    def _live_env(self) -> gym.Env[str, str]:
        if self._closed:
            raise EnvStateError(f"session {self._session_id} is closed; open a new one")
        if self._env is None:
            self._env = self._served.make()
        return self._env

    def _note(self, info: dict[str, Any]) -> None:
        self._case_id = str(info.get(INFO_CASE_ID, self._case_id))
        self._status = str(info.get(INFO_STATUS, self._status))
        step = info.get(INFO_STEP)
        if isinstance(step, int):
            self._step_count = step


def metadata_of(served: ServedCases) -> EnvironmentMetadata:
    """OpenEnv's metadata of a server: its env id and the cases it serves."""
    shown = ", ".join(c.id for c in served.cases[:10]) + (", ..." if len(served.cases) > 10 else "")
    from importlib.metadata import version

    return EnvironmentMetadata(
        name=served.env_id,
        description=f"toolemu {served.env_id}: {len(served.cases)} case(s): {shown}",
        version=version("toolemu"),
    )
