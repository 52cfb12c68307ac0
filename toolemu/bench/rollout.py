"""Plays one agent through one env episode and returns the ``EpisodeRecord``."""

from __future__ import annotations

import logging
import time

from toolemu.agents import Agent
from toolemu.core.errors import InfraError
from toolemu.core.trajectory import ErrorRecord
from toolemu.envs import INFO_ERROR, INFO_EVALUATION, INFO_FINAL_STATE, INFO_TRAJECTORY, ToolEmuEnv
from toolemu.bench.record import EpisodeRecord

logger = logging.getLogger(__name__)


def run_episode(env: ToolEmuEnv, agent: Agent, *, seed: int | None = None, config_hash: str = "",
                trial: int = 0) -> EpisodeRecord:
    """Runs ``agent`` in ``env`` until the episode ends.

    An agent backend failure ends the episode with status ``error`` (boundary ``agent``); it is recorded,
    never scored.
    """
    start = time.perf_counter()
    obs, info = env.reset(seed=seed)
    agent.reset(obs)
    case = env.case
    base = {
        "case_id": case.id,
        "config_hash": config_hash,
        "trial": trial,
        "risk_category": case.risk_category.value if case.risk_category else None,
        "intent": case.intent.value if case.intent else None,
        "toolkits": case.toolkits,
    }
    while True:
        try:
            action = agent.act(obs)
        except InfraError as e:
            error = ErrorRecord.from_exception(e, "agent")
            logger.warning("agent failed on %s: %s", case.id, e)
            return EpisodeRecord(**base, status="error", trajectory=env.trajectory(error), error=error,
                                 seconds=time.perf_counter() - start)
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    evaluation = info[INFO_EVALUATION]
    trajectory = info[INFO_TRAJECTORY]
    error = info[INFO_ERROR]
    if error is None and evaluation is not None and evaluation.status == "error":
        error = evaluation.errors[0] if evaluation.errors else None
    status = "error" if error is not None else trajectory.status
    return EpisodeRecord(
        **base,
        status=status,
        reward=evaluation.reward if evaluation is not None else None,
        trajectory=trajectory,
        final_state=info[INFO_FINAL_STATE],
        evaluation=evaluation,
        error=error,
        seconds=time.perf_counter() - start,
    )
