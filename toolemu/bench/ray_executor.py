"""Plays episodes as Ray tasks: one task per (case, trial), each in its own env and sandbox on a worker that
resolves its models from the run's ``SuiteSetup``; results come back to the driver, which alone writes them.

Imported only when a run asks for Ray (``bench --executor ray``), so Ray stays an optional extra.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from toolemu.bench.ray_options import FORWARDED_ENV, RayOptions, SuiteSetup
from toolemu.bench.record import EpisodeRecord
from toolemu.bench.rollout import AgentFactory, error_record, play_case
from toolemu.core.errors import ConfigError
from toolemu.envs import EnvConfig
from toolemu.testcases import Case

logger = logging.getLogger(__name__)

_BUILT: dict[SuiteSetup, tuple[AgentFactory, EnvConfig]] = {}
_BUILT_LOCK = threading.Lock()


def _built(setup: SuiteSetup) -> tuple[AgentFactory, EnvConfig]:
    """The worker's models and env config for ``setup``, built on its first episode and kept for the next."""
    with _BUILT_LOCK:
        if setup not in _BUILT:
            _BUILT[setup] = setup()
        return _BUILT[setup]


def play_remote(setup: SuiteSetup, case: Case, trial: int, run_hash: str, seed: int) -> EpisodeRecord:
    """The body of one Ray task: trial ``trial`` of ``case``, models resolved on this worker."""
    make_agent, env_config = _built(setup)
    return play_case(case, trial, make_agent, env_config, run_hash=run_hash, seed=seed)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ConfigError(
            f"--executor ray needs Ray, which is not installed ({err}); install it with `pip install 'toolemu[ray]'`"
        ) from err
    return ray


def _connect(ray: Any, options: RayOptions) -> bool:
    """Connects to the cluster (or starts a local instance); returns whether this call started Ray."""
    if ray.is_initialized():
        return False
    env_vars = {name: os.environ[name] for name in FORWARDED_ENV if os.environ.get(name)}
    kwargs: dict[str, object] = {"runtime_env": {"env_vars": env_vars}} if env_vars else {}
    address = options.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise ConfigError(f"--ray-address {address!r}: cannot connect to a Ray cluster there ({err})") from err
    return True


def run_on_ray(todo: Sequence[tuple[Case, int]], options: RayOptions, *, run_hash: str, seed: int,
               concurrency: int) -> Iterator[EpisodeRecord]:
    """Plays ``todo`` as Ray tasks, at most ``concurrency`` in flight, yielding each record as its task ends.

    A task whose worker died is run again by Ray (``max_task_retries`` times); one that still has no result is
    an error record naming the failure, never a score. An exception raised by the episode itself (a bug in an
    agent) is that episode's error record (``play_case``), as it is on threads.
    """
    if not todo:
        return
    ray = _import_ray()
    started = _connect(ray, options)
    try:
        task = ray.remote(num_cpus=options.cpus_per_episode, max_retries=options.max_task_retries,
                          retry_exceptions=False)(play_remote)
        setup_ref = ray.put(options.setup)
        queue = list(reversed(todo))
        pending: dict[Any, tuple[Case, int]] = {}

        def submit() -> None:
            case, trial = queue.pop()
            pending[task.remote(setup_ref, case, trial, run_hash, seed)] = (case, trial)

        while queue and len(pending) < concurrency:
            submit()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                case, trial = pending.pop(ref)
                yield _result(ray, ref, case, trial, run_hash, options)
                if queue:
                    submit()
    finally:
        if started:
            ray.shutdown()


def _result(ray: Any, ref: Any, case: Case, trial: int, run_hash: str, options: RayOptions) -> EpisodeRecord:
    try:
        record = ray.get(ref)
    except ray.exceptions.RayTaskError as err:  # the episode raised: re-raise what it raised
        raise err.as_instanceof_cause() from None
    except ray.exceptions.RayError as err:  # the worker or its node was lost on every attempt
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        logger.warning("Ray task for %s trial %d failed: %s", case.id, trial, first)
        attempts = options.max_task_retries + 1
        return error_record(case, run_hash, trial, f"Ray task failed after {attempts} attempt(s): {first}",
                            kind=type(err).__name__)
    if not isinstance(record, EpisodeRecord):
        raise TypeError(f"a Ray task for {case.id} returned {type(record).__name__}, not an EpisodeRecord")
    return record
