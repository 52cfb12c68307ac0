"""The capture of an episode that had emulated web services (``toolemu.services``): their gaps, and the OAS
evaluators run against them.

The agent's processes are killed before any evaluator runs (nothing of the agent's can then race, squat or feed
what the grader reads), and the evaluators join the services' network namespace with the grader's own
``/etc/hosts``. Requests the services could not answer are counted per phase: the agent's, and each evaluator's;
an evaluator that met a gap could not read what it needed, so its check is an error, never a verdict.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence

from toolemu.core.capture import CapturedCheck, GapPhase, ServiceGap
from toolemu.core.errors import ServiceError
from toolemu.services.base import Gap
from toolemu.services.pool import EpisodeServices, GapReport
from toolemu.toolkits.sandbox import CheckJob

GapCounts = Counter[Gap]


def counts_of(report: GapReport) -> GapCounts:
    """The report's gaps as a counter."""
    return Counter({g.gap: g.times for g in report.gaps})


def service_gaps(counts: GapCounts, phase: GapPhase) -> tuple[ServiceGap, ...]:
    """The gaps of one phase, most frequent first, as the capture records them."""
    return tuple(ServiceGap(service=g.service, method=g.method, path=g.path, reason=g.reason, count=n, phase=phase)
                 for g, n in counts.most_common())


def run_against_services(
    services: EpisodeServices, jobs: Sequence[CheckJob], run: Callable[[CheckJob, int], CapturedCheck],
) -> tuple[dict[str, CapturedCheck], tuple[ServiceGap, ...]]:
    """Runs each OAS evaluator ``job`` in the services' network (``run(job, netns_fd)``); returns the checks and
    the gaps of both phases (the agent's first).

    Raises:
        ServiceError: The services are gone (they died during the episode or the grading): what they hold
            cannot be read, so the episode is an infrastructure error.
    """
    before = counts_of(services.gaps())
    agent = before.copy()
    captured: dict[str, CapturedCheck] = {}
    for job in jobs:
        fd = services.network_fd()
        if fd is None:
            raise ServiceError("the episode's emulated services died before the evaluators could read them")
        try:
            result = run(job, fd)
        finally:
            os.close(fd)
        after = counts_of(services.gaps())
        met = after - before
        before = after
        if met and result.error is None:
            shown = "; ".join(f"{g.method} {g.path} ({g.reason})" for g in list(met)[:3])
            result = result.model_copy(update={"error": f"the evaluator asked the emulated services for what they "
                                                        f"do not emulate: {shown}"})
        captured[job.check] = result
    if not services.alive():
        raise ServiceError("the episode's emulated services died while the evaluators read them")
    return captured, service_gaps(agent, "agent") + service_gaps(before - agent, "grader")


def agent_gaps(services: EpisodeServices) -> tuple[ServiceGap, ...]:
    """The gaps the agent met, when no evaluator reads the services.

    Raises:
        ServiceError: The services are gone.
    """
    return service_gaps(counts_of(services.gaps()), "agent")
