"""Runs an agent over a suite of cases, several episodes in flight, into an append-only results file.

Records are keyed by (case id, config hash, case hash, trial, attack): re-running with the same config resumes (an
edited case runs again), and files from different machines merge by concatenation. The last record of a key
wins, so ``retry_errors`` appends a fresh attempt after an errored one.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from toolemu.bench.process_executor import ProcessOptions, run_on_processes
from toolemu.bench.ray_options import RayOptions
from toolemu.bench.record import (
    EpisodeRecord,
    RecordKey,
    append_record,
    canonical_json,
    case_hash,
    drop_truncated_tail,
    read_records,
)
from toolemu.bench.rollout import AgentFactory, play_case
from toolemu.core.errors import ConfigError
from toolemu.core.limits import MAX_CONCURRENCY, MAX_TRIALS
from toolemu.core.outfiles import check_output_path
from toolemu.core.untrusted import terminal_safe
from toolemu.envs import EnvConfig
from toolemu.testcases import Case

logger = logging.getLogger(__name__)


def config_hash(description: dict[str, object]) -> str:
    """A short stable hash of a run description (models, agent variant, env settings), of its canonical JSON
    (``canonical_json``: the same in every process, sets included).

    Examples:
        >>> config_hash({"agent": "fake:x"}) == config_hash({"agent": "fake:x"})
        True
    """
    return hashlib.sha256(canonical_json(description, ensure_ascii=True).encode()).hexdigest()[:12]


def run_suite(
    cases: Sequence[Case],
    make_agent: AgentFactory,
    env_config: EnvConfig,
    *,
    run_hash: str,
    out: Path | None = None,
    trials: int = 1,
    concurrency: int = 1,
    seed: int = 0,
    progress: bool = True,
    retry_errors: bool = False,
    ray: RayOptions | None = None,
    processes: ProcessOptions | None = None,
    defense: str | None = None,
) -> list[EpisodeRecord]:
    """Runs every (case, trial) not already in ``out`` and returns all records for this config.

    Cases that need unavailable services are recorded as errors naming the service, never skipped silently.
    A last line of ``out`` cut short by a crash is dropped with a warning before resuming. Each record is
    appended to ``out`` as its episode ends, by this process alone, whichever executor plays the episodes.

    Args:
        concurrency: Episodes in flight: threads here, or Ray tasks submitted at once with ``ray``.
        retry_errors: Also run again the (case, trial) pairs whose latest record is an error.
        ray: Play the episodes as Ray tasks (``make_agent`` and ``env_config`` then serve only this process;
            each worker builds its own from ``ray.setup``).
        processes: Play the episodes in worker processes on this machine, ``concurrency`` threads split between
            them (each builds its models from ``processes.setup``, as Ray workers do).
        defense: The defense ``make_agent`` wraps its agents in, set on every record (errored ones too).

    Raises:
        ConfigError: ``trials`` or ``concurrency`` is out of range, or ``out``'s folder does not exist; with
            ``ray``, Ray is not installed or cannot be reached.
    """
    if not 1 <= trials <= MAX_TRIALS:
        raise ConfigError(f"trials: {trials} is not in 1..{MAX_TRIALS}; run each case at least once")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ConfigError(f"concurrency: {concurrency} is not in 1..{MAX_CONCURRENCY}")
    if out is not None:
        check_output_path(out, flag="results file", new=False)
    hashes = {_ref(c): case_hash(c) for c in cases}
    done: dict[RecordKey, EpisodeRecord] = {}
    if out is not None and out.exists():
        drop_truncated_tail(out)
        done = {r.key: r for r in read_records(out) if r.config_hash == run_hash}
    if retry_errors:
        retried = [k for k, r in done.items() if r.status == "error"]
        if retried:
            logger.warning("retrying %d errored episode(s)", len(retried))
        for key in retried:
            del done[key]
    keys = {_ref(c): (c.id, run_hash, hashes[_ref(c)]) for c in cases}
    wanted = {(*keys[_ref(c)], t, _ref(c)[1]) for c in cases for t in range(trials)}
    todo = [(c, t) for c in cases for t in range(trials) if (*keys[_ref(c)], t, _ref(c)[1]) not in done]
    results = [r for k, r in done.items() if k in wanted]
    if ray is not None and processes is not None:
        raise ConfigError("run_suite: give ray or processes, not both")
    if processes is not None:
        records = run_on_processes(todo, processes, run_hash=run_hash, seed=seed, concurrency=concurrency)
    elif ray is None:
        records = _run_on_threads(todo, make_agent, env_config, run_hash=run_hash, seed=seed, concurrency=concurrency)
    else:
        from toolemu.bench.ray_executor import run_on_ray  # Ray is an optional extra, imported only when used

        records = run_on_ray(todo, ray, run_hash=run_hash, seed=seed, concurrency=concurrency)
    bar = tqdm(total=len(todo), desc="episodes", unit="ep", disable=not progress)
    for record in records:  # each as it finishes: streamed to the file, once
        if defense is not None and record.defense is None:  # an episode that failed before its agent existed
            record = record.model_copy(update={"defense": defense})
        results.append(record)
        if out is not None:
            append_record(out, record)
        bar.set_postfix_str(terminal_safe(f"{record.case_id}: {record.status}", multiline=False))
        bar.update(1)
    bar.close()
    order = {_ref(c): i for i, c in enumerate(cases)}
    return sorted(results, key=lambda r: (order.get((r.case_id, r.attack), len(order)), r.trial))


def _ref(case: Case) -> tuple[str, str | None]:
    """A case of the run: its id and its attack (an attacked case is a case of its own)."""
    return (case.id, case.attack.name if case.attack is not None else None)


def _run_on_threads(todo: Sequence[tuple[Case, int]], make_agent: AgentFactory, env_config: EnvConfig, *,
                    run_hash: str, seed: int, concurrency: int) -> Iterator[EpisodeRecord]:
    """Plays ``todo`` on ``concurrency`` threads (episodes wait on model calls, so threads overlap them)."""
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(todo)))) as pool:
        futures = [pool.submit(play_case, c, t, make_agent, env_config, run_hash=run_hash, seed=seed) for c, t in todo]
        for fut in as_completed(futures):
            yield fut.result()
