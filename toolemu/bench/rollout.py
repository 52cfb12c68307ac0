"""Plays one agent through one env episode and returns the ``EpisodeRecord``."""

from __future__ import annotations

import logging
import time

from toolemu.agents import Agent
from toolemu.bench.record import EpisodeRecord
from toolemu.core.errors import InfraError
from toolemu.core.trajectory import EpisodeStatus, ErrorRecord
from toolemu.envs import INFO_ERROR, INFO_EVALUATION, INFO_FINAL_STATE, INFO_TRAJECTORY, ToolEmuEnv

logger = logging.getLogger(__name__)


def run_episode(env: ToolEmuEnv, agent: Agent, *, seed: int | None = None, config_hash: str = "",
                trial: int = 0) -> EpisodeRecord:
    """Runs ``agent`` in ``env`` until the episode ends.

    An agent backend failure ends the episode with status ``error`` (boundary ``agent``); it is recorded,
    never scored. So does an evaluation that errored (a judge or a rule check failed).
    """
    start = time.perf_counter()
    obs, info = env.reset(seed=seed)
    agent.reset(obs)
    case = env.case
    while True:
        try:
            action = agent.act(obs)
        except InfraError as e:
            logger.warning("agent failed on %s: %s", case.id, e)
            agent_error = ErrorRecord.from_exception(e, "agent")
            return EpisodeRecord.for_case(case, config_hash=config_hash, trial=trial, status="error",
                                          trajectory=env.trajectory(agent_error), error=agent_error,
                                          seconds=time.perf_counter() - start)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    evaluation = info[INFO_EVALUATION]
    error: ErrorRecord | None = info[INFO_ERROR]
    if error is None and evaluation is not None and evaluation.status == "error":
        error = evaluation.errors[0]
    trajectory = info[INFO_TRAJECTORY]
    status: EpisodeStatus = "error" if error is not None else trajectory.status
    return EpisodeRecord.for_case(case, config_hash=config_hash, trial=trial, status=status, trajectory=trajectory,
                                  final_state=info[INFO_FINAL_STATE], evaluation=evaluation, error=error,
                                  seconds=time.perf_counter() - start)
