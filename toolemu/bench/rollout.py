"""Plays one agent through one env episode and returns the ``EpisodeRecord``; ``play_case`` adds the env's
set-up and tear-down (what every executor runs for one (case, trial))."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from toolemu.agents import Agent
from toolemu.bench.record import EpisodeRecord
from toolemu.core.capture import Capture
from toolemu.core.errors import EnvStateError, Error, InfraError
from toolemu.core.trajectory import ErrorRecord, Trajectory
from toolemu.envs import INFO_CAPTURE, INFO_ERROR, INFO_EVALUATION, EnvConfig, ToolEmuEnv
from toolemu.llm import count_retries
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases import Case

logger = logging.getLogger(__name__)

StepCallback = Callable[[Mapping[str, object], float], None]
"""Called after every env step with the step's ``info`` and the seconds the step took (agent call included)."""

AgentFactory = Callable[[], Agent]
"""Makes a fresh agent for one episode."""


def play_case(case: Case, trial: int, make_agent: AgentFactory, env_config: EnvConfig, *, run_hash: str,
              seed: int = 0) -> EpisodeRecord:
    """Runs trial ``trial`` of ``case`` in an env of its own (its sandbox, when it has one), closed afterwards.

    Cases that need unavailable services, and envs that cannot be built, give an error record, never a score.
    """
    if case.services:
        missing = ", ".join(case.services)
        return error_record(case, run_hash, trial, f"needs services not available here: {missing}")
    try:
        env = ToolEmuEnv(case, env_config)
    except Error as e:
        return error_record(case, run_hash, trial, f"{type(e).__name__}: {e}")
    try:
        return run_episode(env, make_agent(), seed=seed + trial, config_hash=run_hash, trial=trial)
    finally:
        env.close()


def error_record(case: Case, run_hash: str, trial: int, message: str, *, kind: str = "SetupError") -> EpisodeRecord:
    """The record of an episode that could not run: status ``error`` (boundary ``infra``), no score."""
    error = ErrorRecord(type=kind, message=message, boundary="infra")
    trajectory = Trajectory(case_id=case.id, instruction=case.instruction, status="error", error=error)
    return EpisodeRecord.for_case(case, config_hash=run_hash, trial=trial, trajectory=trajectory, error=error,
                                  finished_at=time.time())


def run_episode(env: ToolEmuEnv, agent: Agent, *, seed: int | None = None, config_hash: str = "",
                trial: int = 0, on_step: StepCallback | None = None) -> EpisodeRecord:
    """Runs ``agent`` in ``env`` until the episode ends.

    ``on_step`` (e.g. a progress line) sees each step's ``info`` and duration; the last step's includes the
    evaluation.

    An agent backend failure ends the episode with status ``error`` (boundary ``agent``); it is recorded,
    never scored. So does an evaluation that errored (a judge or a rule check failed). Any other exception
    from the agent (a bug in it) also ends the episode in error, with the sandbox stopped, and is re-raised.
    The model calls retried during the episode (agent, emulator, judges) are counted in ``llm_retries``.
    """
    start = time.perf_counter()
    with count_retries() as retries:
        obs, info = env.reset(seed=seed)
        agent.reset(obs)
        while True:
            step_start = time.perf_counter()
            try:
                action = agent.act(obs)
            except InfraError as e:
                logger.warning("agent failed on %s: %s", env.case.id, e)
                info = env.abort(ErrorRecord.from_exception(e, "agent"))
                break
            except BaseException as e:
                env.abort(ErrorRecord.from_exception(e, "agent"))
                raise
            obs, _, terminated, truncated, info = env.step(action)
            if on_step is not None:
                on_step(info, time.perf_counter() - step_start)
            if terminated or truncated:
                break
    return record_from_info(env, info, config_hash=config_hash, trial=trial, seconds=time.perf_counter() - start,
                            llm_retries=dict(retries))


def record_from_info(env: ToolEmuEnv, info: dict[str, object], *, config_hash: str, trial: int,
                     seconds: float, llm_retries: dict[str, int] | None = None) -> EpisodeRecord:
    """Builds the episode's record from the env's terminal ``info``."""
    evaluation, error, capture = info[INFO_EVALUATION], info[INFO_ERROR], info[INFO_CAPTURE]
    if not isinstance(capture, Capture):
        raise EnvStateError("the env's terminal info has no capture; the episode has not ended")
    return EpisodeRecord.for_case(
        env.case,
        config_hash=config_hash,
        trial=trial,
        trajectory=capture.trajectory,
        capture=capture,
        evaluation=evaluation if isinstance(evaluation, Evaluation) else None,
        error=error if isinstance(error, ErrorRecord) else None,
        seconds=seconds,
        finished_at=time.time(),
        llm_retries=llm_retries,
    )
