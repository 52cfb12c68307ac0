"""Plays episodes in worker processes on this machine (``bench --executor processes``): one interpreter lock each.

On threads, every episode's client work (building requests, reading answers, the env, the judges' prompts)
shares one interpreter lock: against a fast endpoint a few hundred episodes in flight keep one core busy and
no more. Here ``workers`` processes each run their share of the ``concurrency`` threads, build their models
from the run's ``SuiteSetup`` (as Ray workers do), and send each record back to this process, which alone writes
the results file, so resume and the file format are unchanged.

A worker that dies mid-episode (killed, out of memory, a crash in native code) is replaced and its unfinished
episodes are played again on the new one; an episode whose worker dies on every attempt is an error record
naming the failure, never a score. Nothing is recorded twice: only this process writes, once per episode.
"""

from __future__ import annotations

import collections
import logging
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnProcess
from typing import Any

from toolemu.bench.ray_options import SuiteSetup
from toolemu.bench.record import EpisodeRecord
from toolemu.bench.rollout import error_record, play_case
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import dump_json
from toolemu.testcases import Case

logger = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class ProcessOptions:
    """How ``run_suite`` plays episodes in worker processes."""

    setup: SuiteSetup
    """What each worker builds its models and env config from."""
    workers: int
    """Worker processes (each runs its share of the run's concurrency as threads)."""
    max_task_retries: int = 1
    """Times an episode is played again when its worker process dies before it ends."""


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class EpisodeRaised(RuntimeError):
    """An episode raised in a worker and the exception could not be sent back as itself."""


def _portable(err: BaseException) -> BaseException:
    """``err`` if it survives pickling, else an ``EpisodeRaised`` carrying its traceback text."""
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:
        text = "".join(traceback.format_exception(err))
        return EpisodeRaised(f"{type(err).__name__}: {err}\n(in a worker process)\n{text}")


def _worker(setup: SuiteSetup, cases: Sequence[Case], threads: int, conn: Connection) -> None:
    """A worker process: builds the models once, then ``threads`` threads play the tasks the driver sends.

    Tasks name cases by position in ``cases`` (sent once, when the worker starts). Each message back is written
    to the pipe before the next step (nothing waits in a buffer a crash would lose); records go as JSON lines,
    which cost a third of what pickled models do to send and read.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle; it stops the workers
    send_lock = threading.Lock()

    def send(message: tuple[str, int | None, object]) -> None:
        with send_lock:
            conn.send(message)

    try:
        make_agent, env_config = setup()
    except BaseException as err:
        send(("setup-failed", None, _portable(err)))
        return
    inbox: queue.SimpleQueue[tuple[int, int, int, str, int] | None] = queue.SimpleQueue()

    def loop() -> None:
        while (item := inbox.get()) is not None:
            index, case_no, trial, run_hash, seed = item
            try:
                record = play_case(cases[case_no], trial, make_agent, env_config, run_hash=run_hash, seed=seed)
            except BaseException as err:
                send(("raised", index, _portable(err)))
                return
            send(("done", index, dump_json(record)))

    pool = [threading.Thread(target=loop, name=f"episode-{i}", daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    try:
        while (item := conn.recv()) is not None:
            inbox.put(item)
    except EOFError:  # the driver is gone
        pass
    for _ in pool:
        inbox.put(None)
    for t in pool:
        t.join()


def _shares(concurrency: int, workers: int) -> list[int]:
    """Splits ``concurrency`` threads over ``workers`` processes as evenly as possible.

    Examples:
        >>> _shares(5, 2)
        [3, 2]
    """
    return [concurrency // workers + (i < concurrency % workers) for i in range(workers)]


@dataclass(eq=False)
class _Worker:
    proc: SpawnProcess
    conn: Connection
    threads: int
    held: set[int] = field(default_factory=set)
    """Tasks sent to this worker whose record has not come back."""


def run_on_processes(todo: Sequence[tuple[Case, int]], options: ProcessOptions, *, run_hash: str, seed: int,
                     concurrency: int) -> Iterator[EpisodeRecord]:
    """Plays ``todo`` in ``options.workers`` processes, ``concurrency`` episodes in flight in all, yielding each
    record as its episode ends.

    The driver hands each worker at most as many tasks as it has threads, so it always knows which episodes a
    worker holds: when one dies, exactly those are played again (or recorded as errors), never one twice.

    Raises:
        ConfigError: a worker could not build the models.
        BaseException: what escaped an episode past its error record (``KeyboardInterrupt``, ``SystemExit``);
            an exception an episode raised is its error record, as on threads.
    """
    if not todo:
        return
    ctx = multiprocessing.get_context("spawn")  # never fork a process that runs threads
    cases = list({id(case): case for case, _ in todo}.values())
    case_no = {id(case): i for i, case in enumerate(cases)}
    items = [(index, case_no[id(case)], trial, run_hash, seed) for index, (case, trial) in enumerate(todo)]
    pending = collections.deque(range(len(items)))
    attempts = [0] * len(items)
    finished: set[int] = set()
    workers: list[_Worker] = []

    def feed(worker: _Worker) -> None:
        while pending and len(worker.held) < worker.threads:
            index = pending.popleft()
            try:
                worker.conn.send(items[index])
            except OSError:  # it has just died: the task goes back, and its sentinel reports the death
                pending.appendleft(index)
                return
            attempts[index] += 1
            worker.held.add(index)

    def spawn(threads: int) -> _Worker:
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(options.setup, cases, threads, theirs), daemon=True,
                           name="toolemu-episodes")
        proc.start()
        theirs.close()
        worker = _Worker(proc, ours, threads)
        workers.append(worker)
        feed(worker)
        return worker

    for threads in _shares(concurrency, max(1, min(options.workers, concurrency, len(todo)))):
        spawn(threads)
    try:
        while len(finished) < len(items):
            by_handle: dict[Any, _Worker] = {}
            for w in workers:
                by_handle[w.conn] = by_handle[w.proc.sentinel] = w
            for handle in wait(list(by_handle)):
                worker = by_handle[handle]
                if worker not in workers:
                    continue  # already handled as dead in this round
                if handle is worker.conn:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        continue  # it died; its sentinel says so
                    yield from _handle(message, worker, finished)
                    feed(worker)
                else:
                    yield from _bury(worker, workers, items, todo, attempts, finished, pending, options)
                    spawn(worker.threads)
    finally:
        for w in workers:
            try:
                w.conn.send(None)
            except OSError:
                pass
        for w in workers:
            w.proc.join(timeout=5)
            if w.proc.is_alive():
                w.proc.terminate()
                w.proc.join(timeout=5)
            w.conn.close()


def _handle(message: tuple[str, int | None, Any], worker: _Worker, finished: set[int]) -> Iterator[EpisodeRecord]:
    kind, index, payload = message
    if kind == "done" and index is not None:
        worker.held.discard(index)
        if index not in finished:
            finished.add(index)
            yield EpisodeRecord.model_validate_json(payload)
    elif kind == "raised":
        raise payload
    else:  # "setup-failed"
        raise ConfigError(f"a worker process could not build the run's models: {payload}") from payload


def _bury(worker: _Worker, workers: list[_Worker], items: list[tuple[int, int, int, str, int]],
          todo: Sequence[tuple[Case, int]], attempts: list[int], finished: set[int],
          pending: collections.deque[int], options: ProcessOptions) -> Iterator[EpisodeRecord]:
    """Takes a dead worker's last messages, then queues its unfinished episodes again at the front, or records
    them as errors once they have used up their attempts."""
    workers.remove(worker)
    while True:
        try:
            if not worker.conn.poll():
                break
            message = worker.conn.recv()
        except (EOFError, OSError):
            break
        yield from _handle(message, worker, finished)
    worker.conn.close()
    worker.proc.join(timeout=5)  # its sentinel can fire a moment before the exit status can be read
    code = worker.proc.exitcode
    how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
    lost = sorted(worker.held - finished)
    if not lost and not finished:
        raise ConfigError(f"a worker process died ({how}) before it played any episode; see its output above")
    logger.warning("worker process %d died (%s) with %d episode(s) in flight; starting another",
                   worker.proc.pid, how, len(lost))
    for index in reversed(lost):
        case, trial = todo[index]
        if attempts[index] > options.max_task_retries:
            finished.add(index)
            yield error_record(case, items[index][3], trial,
                               f"the worker process died ({how}) on each of {attempts[index]} attempt(s)",
                               kind="WorkerLost")
        else:
            pending.appendleft(index)
