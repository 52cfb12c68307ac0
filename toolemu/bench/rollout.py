"""Plays one agent through one env episode and returns the ``EpisodeRecord``; ``play_case`` adds the env's
set-up and tear-down (what every executor runs for one (case, trial))."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from toolemu.agents import Agent
from toolemu.agents.defenses import DefendedAgent
from toolemu.bench.record import EpisodeRecord
from toolemu.core.capture import Capture
from toolemu.core.errors import ANY_EXPECTED_FAULT, HOSTILE_INPUT_FAULTS, CaseError, EnvStateError, InfraError
from toolemu.core.trajectory import ErrorRecord, Trajectory
from toolemu.envs import INFO_CAPTURE, INFO_ERROR, INFO_EVALUATION, EnvConfig, ToolEmuEnv
from toolemu.llm import count_retries
from toolemu.rewards.evaluation import Evaluation
from toolemu.services.pool import services_unavailable
from toolemu.testcases import Case

logger = logging.getLogger(__name__)

StepCallback = Callable[[Mapping[str, object], float], None]
"""Called after every env step with the step's ``info`` and the seconds the step took (agent call included)."""



@runtime_checkable
class EpisodeDriver(Protocol):
    """An agent that plays a whole episode itself rather than one action per call: an agent process outside
    this one that reaches the env through a server (``toolemu.bench.mcp.agent_command``)."""

    def play(self, env: ToolEmuEnv, *, seed: int, config_hash: str, trial: int) -> EpisodeRecord:
        """Plays one episode of ``env`` (built, not reset) and returns its record; the caller closes ``env``."""
        ...


AgentFactory = Callable[[], Agent | EpisodeDriver]
"""Makes a fresh agent (or episode driver) for one episode."""


def play_case(case: Case, trial: int, make_agent: AgentFactory, env_config: EnvConfig, *, run_hash: str,
              seed: int = 0) -> EpisodeRecord:
    """Runs trial ``trial`` of ``case`` in an env of its own (its sandbox, when it has one), closed afterwards.

    Cases that need unavailable services, envs that cannot be built, and episodes that raise (a bug in an
    agent) give an error record with the traceback, never a score: this is the bench worker's boundary, so one
    episode never ends a run (threads, worker processes and Ray tasks all play episodes through here).
    """
    why = services_unavailable(case.services) if case.services else None
    if why is not None:
        return error_record(case, run_hash, trial, f"needs services not available here: {why}")
    try:
        env = ToolEmuEnv(case, env_config)
    except ANY_EXPECTED_FAULT as e:
        return error_record(case, run_hash, trial, f"{type(e).__name__}: {e}", traceback=_traceback_of(e))
    try:
        agent = make_agent()
        if isinstance(agent, EpisodeDriver):
            return agent.play(env, seed=seed + trial, config_hash=run_hash, trial=trial)
        return run_episode(env, agent, seed=seed + trial, config_hash=run_hash, trial=trial)
    except Exception as e:  # the bench worker boundary: one episode's bug never ends the run
        logger.exception("episode %s trial %d raised; recorded as an error", case.id, trial)
        # An agent that raised has already aborted the episode with a record naming it (boundary ``agent``).
        error = env.trajectory().error or ErrorRecord.from_exception(e, "infra", "episode")
        return EpisodeRecord.for_case(case, config_hash=run_hash, trial=trial, trajectory=env.trajectory(error),
                                      error=error, finished_at=time.time())
    finally:
        try:
            env.close()
        except ANY_EXPECTED_FAULT as e:  # the record is already made; losing it to a close is worse
            logger.warning("episode %s trial %d: closing the env failed: %s: %s", case.id, trial,
                           type(e).__name__, e)


def _traceback_of(exc: BaseException) -> str:
    return ErrorRecord.from_exception(exc, "infra").traceback


def error_record(case: Case, run_hash: str, trial: int, message: str, *, kind: str = "SetupError",
                 traceback: str = "") -> EpisodeRecord:
    """The record of an episode that could not run: status ``error`` (boundary ``infra``), no score."""
    error = ErrorRecord(type=kind, message=message, boundary="infra", traceback=traceback)
    trajectory = Trajectory(case_id=case.id, instruction=case.instruction, status="error", error=error)
    return EpisodeRecord.for_case(case, config_hash=run_hash, trial=trial, trajectory=trajectory, error=error,
                                  finished_at=time.time())


def run_episode(env: ToolEmuEnv, agent: Agent, *, seed: int | None = None, config_hash: str = "",
                trial: int = 0, on_step: StepCallback | None = None) -> EpisodeRecord:
    """Runs ``agent`` in ``env`` until the episode ends.

    ``on_step`` (e.g. a progress line) sees each step's ``info`` and duration; the last step's includes the
    evaluation.

    An agent backend failure ends the episode with status ``error`` (boundary ``agent``); it is recorded,
    never scored. So does an evaluation that errored (a judge or a rule check failed), a ``reset`` that could
    not set the world up, and an agent that raised ``OSError``, ``ValueError``, ``RecursionError`` or
    ``OverflowError`` (``HOSTILE_INPUT_FAULTS``: what it was shown broke it). Any other exception from the
    agent (a bug in it) also ends the episode in error, with the sandbox stopped, and is re-raised.
    The model calls retried during the episode (agent, emulator, judges) are counted in ``llm_retries``.
    """
    start = time.perf_counter()
    with count_retries() as retries:
        try:
            obs, info = env.reset(seed=seed)
        except (InfraError, CaseError) as e:  # the world could not be set up (or the case folder changed since
            # the env was built): an error record, no step taken
            return reset_error_record(env, e, config_hash=config_hash, trial=trial,
                                      seconds=time.perf_counter() - start, llm_retries=dict(retries))
        agent.reset(obs)
        while True:
            step_start = time.perf_counter()
            try:
                action = agent.act(obs)
            except InfraError as e:
                logger.warning("agent failed on %s: %s", env.case.id, e)
                info = env.abort(ErrorRecord.from_exception(e, "agent"))
                break
            except HOSTILE_INPUT_FAULTS as e:  # the agent choked on what it was shown (an observation, a file)
                logger.warning("agent raised on %s: %s: %s", env.case.id, type(e).__name__, e)
                info = env.abort(ErrorRecord.from_exception(e, "agent", "agent turn"))
                break
            except BaseException as e:
                env.abort(ErrorRecord.from_exception(e, "agent"))
                raise
            obs, _, terminated, truncated, info = env.step(action)
            if on_step is not None:
                on_step(info, time.perf_counter() - step_start)
            if terminated or truncated:
                break
    record = record_from_info(env, info, config_hash=config_hash, trial=trial, seconds=time.perf_counter() - start,
                              llm_retries=dict(retries))
    if isinstance(agent, DefendedAgent):
        record = record.model_copy(update={"defense": agent.defense_name, "defense_events": agent.defense_events})
    return record


def reset_error_record(env: ToolEmuEnv, error: InfraError | CaseError, *, config_hash: str, trial: int,
                       seconds: float, llm_retries: dict[str, int] | None = None) -> EpisodeRecord:
    """The record of an episode whose ``reset`` raised: status ``error``, the boundary that failed, no step."""
    logger.warning("reset failed on %s: %s", env.case.id, error)
    failed = error.boundary if isinstance(error, InfraError) else "sandbox"  # a case error: seeding the world
    boundary = "sandbox" if failed in ("sandbox", "infra") else failed
    record = ErrorRecord.from_exception(error, boundary, "reset")  # type: ignore[arg-type]
    return EpisodeRecord.for_case(env.case, config_hash=config_hash, trial=trial, trajectory=env.trajectory(record),
                                  error=record, seconds=seconds, finished_at=time.time(), llm_retries=llm_retries)


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
