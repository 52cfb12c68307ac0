"""The capture phase of an episode (docs/architecture.md §2, step 6): the snapshot, then the checks.

Order, so that nothing the agent left running can change, read or forge what is graded:

1. the agent is done (final answer, step budget);
2. every agent process is frozen (SIGSTOP of each session's pid namespace, ``Sandbox.freeze``);
3. while frozen, the episode root is copied into a folder only the grader's own host uid can enter (mode 0700;
   links copied as links, special files not opened, bounded; ``Sandbox.grader_world``), and the final state
   is snapshotted from that copy;
4. OAS evaluators run over the copy, read-only, each with a bounded time, as the grader's uid, with our
   ``/etc`` and interpreters. Each gets what OAS's got, one string: the episode's OpenHands event log as JSON
   text (a replayed run's own log, else the log written from the trajectory,
   ``toolemu.testcases.openhands.writer``); an evaluator whose code cannot fire on it (``oas_lint``) is noted
   on its result. Seven OAS evaluators query a server the agent left running, so for them (as
   root, where the episode's network can be joined) the agent's processes are thawed and the evaluators run
   inside the episode's network namespace, their users, pids and mounts still their own: the thawed
   processes can answer on loopback but cannot reach the copy (other uid, 0700), the checks' ``/etc``, or the
   checks' processes (other uid and pid namespace, non-dumpable). Without that network (not root) the agent's
   processes are killed before the evaluators instead (the checks would share the agent's uid there);
5. the agent's processes are killed;
6. native Python checks (given the snapshot) and regexes over files the snapshot holds no text for run over
   the same copy, read-only; the copy is removed.

With emulated web services (``Sandbox.services``) the agent's processes are killed before step 4 instead, and
the evaluators join the services' network namespace (``envs.service_capture``); the gaps the services met go
into the ``Capture``, and what the services hold then (their records, ``FinalState.services``) into the final
state, read before any evaluator runs.

A check that fails because of what the agent left (a file made unreadable, a FIFO or a ``/dev/zero`` link
where the check reads, a timeout while such a trap is in the copy) carries ``CapturedCheck.tampering``.
The result is a ``Capture``: complete without the sandbox, so ``rewards`` scores it now or from a saved file.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from toolemu.core import safefs
from toolemu.core.capture import Capture, CapturedCheck, ServiceGap
from toolemu.core.errors import CaseError
from toolemu.core.trajectory import FinalState, NpcMessage, Trajectory
from toolemu.envs.service_capture import agent_gaps, run_against_services
from toolemu.rewards.rules import check_id
from toolemu.services.pool import EpisodeServices
from toolemu.testcases.oas_lint import MAX_EVALUATOR_BYTES, evaluator_cannot_fire
from toolemu.testcases.openhands import bounded_log, episode_log
from toolemu.testcases.schema import Case, FileContainsCheck, PythonCheck
from toolemu.toolkits import ToolBox
from toolemu.toolkits.sandbox import CheckJob, run_check, scratch_root

logger = logging.getLogger(__name__)


def oas_function(check: PythonCheck) -> str:
    """The evaluator entry point: ``check.function``, with the schema default ``check`` meaning
    ``grade_checkpoints`` for ``api="oas"``."""
    return "grade_checkpoints" if check.function == "check" else check.function


def python_jobs(case: Case) -> list[CheckJob]:
    """One job per Python check of ``case`` (native and OAS), in case order."""
    jobs: list[CheckJob] = []
    for index, check in enumerate(case.checks):
        if not isinstance(check, PythonCheck):
            continue
        source = str(Path(case.source_dir) / check.path) if case.source_dir else None
        function = oas_function(check) if check.api == "oas" else check.function
        jobs.append(CheckJob(check=check_id(check, index), runner=check.api, source=source, function=function,
                             source_root=case.source_dir))
    return jobs


def file_text_jobs(case: Case, state: FinalState) -> list[CheckJob]:
    """Jobs for ``file_contains`` checks whose file is in the snapshot without its text (binary or large)."""
    jobs: list[CheckJob] = []
    for index, check in enumerate(case.checks):
        if isinstance(check, FileContainsCheck) and check.pattern is not None:
            record = state.file(check.path)
            if record is not None and record.content is None:
                jobs.append(CheckJob(check=check_id(check, index), runner="file_text", path=check.path,
                                     pattern=check.pattern))
    return jobs


def cannot_fire(job: CheckJob) -> tuple[str, ...]:
    """Why an OAS evaluator cannot fire as upstream ran it (``oas_lint``, its code parsed, never run); empty
    when it can, or when its file cannot be read or parsed (running it reports that)."""
    if job.source is None:
        return ()
    source = Path(job.source)
    root = Path(job.source_root) if job.source_root else source.parent
    try:
        data = safefs.read_bytes(root, str(source.relative_to(root)), what="evaluator", limit=MAX_EVALUATOR_BYTES)
        return tuple(evaluator_cannot_fire(data, source.name))
    except (CaseError, OSError, ValueError, SyntaxError, RecursionError, MemoryError):
        return ()


def _noted(job: CheckJob, result: CapturedCheck) -> CapturedCheck:
    reasons = cannot_fire(job)
    return result.model_copy(update={"cannot_fire": reasons}) if reasons else result


def with_services(state: FinalState, services: EpisodeServices) -> FinalState:
    """``state`` with what the episode's services hold now (the agent and its browser already stopped)."""
    held = services.records()
    return state.model_copy(update={"services": held.records, "services_read": held.read,
                                    "services_overflow": held.overflow})


@contextlib.contextmanager
def _episode_network(toolbox: ToolBox) -> Iterator[int | None]:
    """The live episode's network namespace for the OAS evaluators (as OAS checks while the task container
    is up, a server the agent started answers them on loopback); ``None`` without a running shell.

    Joining it needs root; elsewhere the evaluators get their own empty network, and a warning says so.
    """
    if toolbox.sandbox is None:
        yield None
        return
    if os.geteuid() != 0:
        logger.warning("not root: OAS evaluators cannot join the episode's network; servers the agent started "
                       "are unreachable to them")
        yield None
        return
    fd = toolbox.sandbox.network_fd()
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def capture_episode(
    case: Case, toolbox: ToolBox, trajectory: Trajectory, *, run_checks: bool, timeout_s: float,
    messages: Sequence[NpcMessage] = (), openhands_log: str | None = None,
) -> Capture:
    """Runs the capture phase (see the module docstring) and returns the episode's ``Capture``.

    Args:
        case: The case that was run.
        toolbox: The episode's toolkits; its sandbox, if any, still holds the episode.
        trajectory: The finished trajectory.
        run_checks: Run the checks that need the sandbox (off when the env does not evaluate).
        timeout_s: Wall-clock limit of each check.
        messages: The episode's NPC conversation, when it happened outside the env's tools (a replayed log's
            recorded chat); it goes into the final state and to the OAS evaluators' chat helpers.
        openhands_log: A replayed run's own OpenHands log: the OAS evaluators read it (bounded) instead of the
            log written from the trajectory, and the capture keeps it.

    Raises:
        SandboxError: the sandbox cannot run a check or take the snapshot.
    """
    jobs = python_jobs(case) if run_checks else []
    sandbox = toolbox.sandbox
    bwrap = sandbox.config.bwrap_path if sandbox is not None else None
    # NPC chat is not a tool yet (cases with NPCs are refused when the env is made); a replayed log brings its
    # recorded conversation instead.
    chat = [m.model_dump() for m in messages]
    oas_jobs = [j for j in jobs if j.runner == "oas"]
    original = bounded_log(openhands_log) if openhands_log is not None else None
    log = episode_log(trajectory, original) if oas_jobs else ""
    captured: dict[str, CapturedCheck] = {}
    services = sandbox.services if sandbox is not None else None
    gaps: tuple[ServiceGap, ...] = ()
    if sandbox is None or not run_checks:
        final_state = toolbox.final_state(messages)  # stops the agent's processes first
        if services is not None:
            gaps = agent_gaps(services)
            final_state = with_services(final_state, services)
        if jobs:
            with scratch_root() as root:
                for job in oas_jobs:
                    captured[job.check] = _noted(job, run_check(root, job, trajectory=log, chat=chat,
                                                                timeout_s=timeout_s, bwrap=bwrap))
                for job in (j for j in jobs if j.runner == "native"):
                    captured[job.check] = run_check(root, job, state=final_state, timeout_s=timeout_s,
                                                    bwrap=bwrap)
    else:
        sandbox.freeze()
        try:
            with sandbox.grader_world() as world:
                final_state = sandbox.final_state(world).model_copy(update={"messages": tuple(messages)})
                if services is not None:
                    sandbox.stop()  # the agent is gone before any evaluator reads the services
                    final_state = with_services(final_state, services)
                    graded, gaps = run_against_services(
                        services, oas_jobs, lambda job, netns: _noted(job, run_check(
                            world.root, job, trajectory=log, chat=chat, timeout_s=timeout_s, bwrap=bwrap,
                            netns_fd=netns, world=world, services=services.addresses(), clock=sandbox.clock)))
                    captured.update(graded)
                elif oas_jobs:
                    with _episode_network(toolbox) as netns:
                        if netns is not None:
                            sandbox.thaw()  # only so that servers the agent left answer on loopback
                        else:
                            sandbox.stop()  # no network to share: nothing of the agent's needs to run
                        for job in oas_jobs:
                            captured[job.check] = _noted(job, run_check(
                                world.root, job, trajectory=log, chat=chat, timeout_s=timeout_s, bwrap=bwrap,
                                netns_fd=netns, world=world, clock=sandbox.clock))
                sandbox.stop()
                later = [j for j in jobs if j.runner == "native"] + file_text_jobs(case, final_state)
                for job in later:
                    captured[job.check] = run_check(world.root, job, state=final_state, timeout_s=timeout_s,
                                                    bwrap=bwrap, world=world, clock=sandbox.clock)
        finally:
            sandbox.stop()
    order = {check_id(c, i): i for i, c in enumerate(case.checks)}
    checks = tuple(sorted(captured.values(), key=lambda c: order.get(c.check, len(order))))
    return Capture(trajectory=trajectory, final_state=final_state, checks=checks, toolkit_specs=toolbox.specs,
                   openhands_log=original, service_gaps=gaps)
