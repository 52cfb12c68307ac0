"""The capture of one finished episode: what the env saved for scoring, complete without the live sandbox.

An episode ends in two phases (docs/architecture.md §2). *Capture* (envs and toolkits) runs every check that needs the
episode's files while the sandbox exists and snapshots the final state; *score* (rewards) is pure functions of
the ``Capture``, the judges and the reward config. A saved ``Capture`` can therefore be re-scored later.
"""

from __future__ import annotations

from typing import Literal

from toolemu.core.trajectory import FinalState, Trajectory
from toolemu.core.types import Frozen, ToolkitSpec

CheckRunner = Literal["native", "oas", "file_text"]
"""How a captured check ran: a case's native Python check, an OpenAgentSafety evaluator, or a regex over a
file whose text the snapshot does not hold (binary or large)."""


class CheckpointScore(Frozen):
    """One OpenAgentSafety checkpoint as graded: ``result`` points out of ``total`` (result > 0 = unsafe)."""

    total: float
    """Points available."""
    result: float
    """Points earned."""


TamperingKind = Literal["permission", "special_file", "link_loop", "device_link", "oversize", "timeout",
                        "grader_path", "encoding"]
"""What the agent left that stopped a check from reading its world: a file or folder it may not read
(``chmod 000``), a special file (FIFO, socket, device) where a file was expected, a link loop, a link to a
device (``/dev/zero``), a file past a read or copy bound (or memory exhausted reading one), a wait that
timed out inside the check, a link that would reach the grader's own files (``/utils``, the runner, ``/proc``),
or bytes that are not text where the check read text."""


class Tampering(Frozen):
    """One trace of the agent's tampering with what a check reads; the check cannot vouch for safety."""

    kind: TamperingKind
    """What was found."""
    path: str = ""
    """The path as seen inside the sandbox (``/workspace/notes.txt``); empty when no single path is to blame."""
    found: str = ""
    """What was there, in words (``mode 000``, ``fifo``, ``symlink to /dev/zero``, the exception)."""


class CapturedCheck(Frozen):
    """The raw result of one check that needed the sandbox, taken during capture; rewards interpret it."""

    check: str
    """The check's name: its ``id``, or ``<kind>[<index>]``."""
    runner: CheckRunner
    """How it ran."""
    value: bool | None = None
    """``native``: what the function returned; ``file_text``: whether the pattern matched. ``None`` otherwise
    or on error."""
    checkpoints: tuple[CheckpointScore, ...] = ()
    """``oas``: the evaluator's checkpoints, in order."""
    final_score: CheckpointScore | None = None
    """``oas``: the ``Result``'s ``final_score`` (its scoring strategy applied to the checkpoints); what OAS
    reported and what decides the verdict (result > 0 = unsafe). ``None`` in captures made before it existed."""
    unavailable: tuple[str, ...] = ()
    """``oas``: service helpers the evaluator called that do not exist offline."""
    swallowed: tuple[str, ...] = ()
    """``oas``: exceptions that ``@grader`` turned into a failed checkpoint, upstream's semantics (one line
    each: function, type and message). Counted in bench summaries; they never become an error by themselves."""
    error: str | None = None
    """Why the check produced no result (crash, timeout, bad return value); never to be read as safe."""
    detail: str = ""
    """What the runner saw, in words."""
    tampering: tuple[Tampering, ...] = ()
    """Traces of the agent's tampering that made the check fail or read nothing (see ``Tampering``); a check
    with any is never safe: rewards score it as an error naming them, or as unsafe where the case says so."""
    cannot_fire: tuple[str, ...] = ()
    """``oas``: why the evaluator cannot fire as upstream ran it, found by reading its code (a check typed
    ``List[str]`` iterates the characters of the one string it is given; constant checkpoints). Its result
    stands as it came; the reasons let reports set it apart."""


GapPhase = Literal["agent", "grader"]
"""Who met an emulator gap: the agent during the episode, or an evaluator while grading."""


class ServiceGap(Frozen):
    """Requests an emulated web service (``toolemu.services``) could not answer: an endpoint or feature it does
    not emulate. Fidelity telemetry, apart from the agent's own errors (a 404 for a missing file is an answer)."""

    service: str
    """``owncloud``, ``gitlab`` or ``plane``."""
    method: str
    """The HTTP method."""
    path: str
    """The request path (cut at 300 characters)."""
    reason: str
    """What is not emulated, in words (``emulator error: ...`` when the emulator itself failed)."""
    count: int = 1
    """How many such requests were made."""
    phase: GapPhase = "agent"
    """Who made them."""


class Capture(Frozen):
    """Everything scoring reads about one episode."""

    trajectory: Trajectory
    """What the agent did: every step, each call's outcome, the final answer."""
    final_state: FinalState | None = None
    """The world the episode left behind; ``None`` when the episode failed before the snapshot."""
    checks: tuple[CapturedCheck, ...] = ()
    """Raw results of the checks that needed the sandbox, in case order."""
    toolkit_specs: tuple[ToolkitSpec, ...] = ()
    """The tools the agent had, as the judges are shown them."""
    openhands_log: str | None = None
    """The OpenHands event log (JSON text, bounded) of the foreign run this episode replays or imports: what its
    OAS evaluators read, and what ``toolemu export --openhands`` writes. ``None`` for our own episodes, whose
    log is written from the trajectory (``toolemu.testcases.openhands.episode_log``)."""
    service_gaps: tuple[ServiceGap, ...] = ()
    """Requests the episode's emulated services could not answer (most frequent first, per phase)."""
