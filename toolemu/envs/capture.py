"""The capture phase of an episode (DESIGN.md §2): checks that need the sandbox, then the snapshot.

Order, so that OpenAgentSafety evaluators see the world as the agent left it, services and background jobs
included, while the snapshot cannot move under the other checks:

1. the agent is done (final answer, step budget);
2. OAS evaluators run over the live episode root, read-only, each with a bounded time, inside the
   episode's network namespace (a server the agent left running answers them on loopback) but in their own
   users, pids and mounts;
3. the agent's processes are stopped;
4. the final state is snapshotted;
5. native Python checks (given the snapshot) and regexes over files the snapshot holds no text for run over
   the stopped root, read-only.

The result is a ``Capture``: complete without the sandbox, so ``rewards`` scores it now or from a saved file.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from toolemu.core.capture import Capture, CapturedCheck
from toolemu.core.trajectory import FinalState, NpcMessage, Trajectory
from toolemu.rewards.oas_trajectory import render_oas_blocks
from toolemu.rewards.rules import check_id
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
        jobs.append(CheckJob(check=check_id(check, index), runner=check.api, source=source, function=function))
    return jobs


def file_text_jobs(case: Case, state: FinalState) -> list[CheckJob]:
    """Jobs for ``file_contains`` checks whose file is in the snapshot without its text (binary or large)."""
    jobs: list[CheckJob] = []
    for index, check in enumerate(case.checks):
        if isinstance(check, FileContainsCheck):
            record = state.file(check.path)
            if record is not None and record.content is None:
                jobs.append(CheckJob(check=check_id(check, index), runner="file_text", path=check.path,
                                     pattern=check.pattern))
    return jobs


@contextlib.contextmanager
def _check_root(toolbox: ToolBox, needed: bool) -> Iterator[Path | None]:
    if toolbox.sandbox is not None:
        yield toolbox.sandbox.root
    elif needed:
        with scratch_root() as root:
            yield root
    else:
        yield None


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
    messages: Sequence[NpcMessage] = (),
) -> Capture:
    """Runs the capture phase (see the module docstring) and returns the episode's ``Capture``.

    Args:
        case: The case that was run.
        toolbox: The episode's toolkits; its sandbox, if any, still holds the episode.
        trajectory: The finished trajectory.
        run_checks: Run the checks that need the sandbox (off when the env does not evaluate).
        timeout_s: Wall-clock limit of each check.
        messages: The episode's NPC conversation, when it happened outside the env's tools (a replayed log's
            recorded chat); it goes into the final state and to the OAS evaluators.

    Raises:
        SandboxError: the sandbox cannot run a check or take the snapshot.
    """
    jobs = python_jobs(case) if run_checks else []
    bwrap = toolbox.sandbox.config.bwrap_path if toolbox.sandbox is not None else None
    captured: dict[str, CapturedCheck] = {}
    with _check_root(toolbox, needed=bool(jobs) or (run_checks and toolbox.sandbox is not None)) as root:
        # NPC chat is not a tool yet (cases with NPCs are refused when the env is made); a replayed log brings
        # its recorded conversation instead.
        chat = [m.model_dump() for m in messages]
        oas_jobs = [j for j in jobs if j.runner == "oas"]
        if root is not None and oas_jobs:
            blocks = render_oas_blocks(trajectory, messages)
            with _episode_network(toolbox) as netns:
                for job in oas_jobs:
                    captured[job.check] = run_check(root, job, trajectory=blocks, chat=chat, timeout_s=timeout_s,
                                                    bwrap=bwrap, netns_fd=netns)
        final_state = toolbox.final_state(messages)
        if root is not None and run_checks:
            later = [j for j in jobs if j.runner == "native"] + file_text_jobs(case, final_state)
            for job in later:
                captured[job.check] = run_check(root, job, state=final_state, timeout_s=timeout_s, bwrap=bwrap)
    order = {check_id(c, i): i for i, c in enumerate(case.checks)}
    checks = tuple(sorted(captured.values(), key=lambda c: order.get(c.check, len(order))))
    return Capture(trajectory=trajectory, final_state=final_state, checks=checks, toolkit_specs=toolbox.specs)
