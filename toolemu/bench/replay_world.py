"""The world a replayed OpenHands log runs in, as close to OAS's as the log tells: its time, its time limits, its
network.

- **Clock**: the sandbox starts at the log's first timestamp and, before each action, moves forward to that
  action's timestamp (``SandboxClock.advance_to``); before the last step it moves to the log's last timestamp, so
  the evaluators run at the time OAS's did (right after the run). Files written carry those times.
- **Command time limit**: the longest command or cell of the log (its observation's timestamp minus its own)
  times ``TIMEOUT_FACTOR`` plus ``TIMEOUT_SLACK_S``, never below the configured limit nor above
  ``MAX_COMMAND_TIMEOUT_S``; the CPU limit per process is raised to match.
- **Network**: OAS's service ports answer with the placeholder's 503, and port 3000 is held as OAS's RocketChat
  held it (``toolemu.toolkits.sandbox.placeholder``; needs root, else noted).
"""

from __future__ import annotations

import math
import os
from datetime import datetime

from toolemu.testcases.openhands import LogAction, OpenHandsLog
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig

MAX_COMMAND_TIMEOUT_S = 300.0
"""Longest command time limit a replay gets, whatever its log says."""
TIMEOUT_FACTOR = 1.5
"""A replayed command may run this many times as long as the log's longest one did..."""
TIMEOUT_SLACK_S = 5.0
"""...plus this (a slower machine, a cold cache)."""
_TIMED_KINDS = ("command", "python")


def longest_command(log: OpenHandsLog) -> LogAction | None:
    """The log's command or cell that ran longest (by its timestamps), or ``None`` when none is timed."""
    timed = [a for a in log.actions if a.kind in _TIMED_KINDS and a.duration_s is not None]
    return max(timed, key=lambda a: a.duration_s or 0.0, default=None)


def command_timeout(log: OpenHandsLog, default_s: float) -> tuple[float, str | None]:
    """The command time limit the log needs, and a note when it is not ``default_s``.

    Examples:
        >>> from toolemu.testcases.openhands import LogAction, OpenHandsLog
        >>> slow = LogAction(event_id="7", kind="command", text="python bench.py", duration_s=14.2)
        >>> command_timeout(OpenHandsLog(path="run.json", text="[]", actions=(slow,)), 10.0)[0]
        27.0
    """
    longest = longest_command(log)
    if longest is None or longest.duration_s is None:
        return default_s, None
    needed = float(math.ceil(longest.duration_s * TIMEOUT_FACTOR + TIMEOUT_SLACK_S))
    if needed <= default_s:
        return default_s, None
    limit = min(needed, MAX_COMMAND_TIMEOUT_S)
    capped = f" (capped at {MAX_COMMAND_TIMEOUT_S:g} s)" if limit < needed else ""
    return limit, (f"command time limit {limit:g} s{capped}: event {longest.event_id} ran "
                   f"{longest.duration_s:.1f} s in the original run")


def replay_sandbox(log: OpenHandsLog, base: SandboxConfig, *, clock: bool) -> tuple[SandboxConfig, list[str]]:
    """The sandbox configuration for replaying ``log`` (see the module docstring), and notes on what it changed.

    ``clock=False`` keeps the real clock; a log without timestamps does too (noted).
    """
    notes: list[str] = []
    timeout, note = command_timeout(log, base.command_timeout_s)
    if note:
        notes.append(note)
    update: dict[str, object] = {
        "command_timeout_s": timeout,
        "cpu_seconds": max(base.cpu_seconds, math.ceil(timeout)),
        "service_placeholders": os.geteuid() == 0 and not base.allow_unsandboxed,
        "oas_chat_port": True,
    }
    if clock and log.started_at is not None:
        update["clock_start"] = log.started_at
        notes.append(f"ran at the log's times from {_iso(log.started_at)} to {_iso(log.ended_at)} "
                     "(libfaketime; files carry those times)")
    elif clock:
        notes.append("the log has no timestamps: replayed at the real time")
    return SandboxConfig.model_validate({**base.model_dump(), **update}), notes


def follow_clock(sandbox: Sandbox | None, at: datetime | None) -> None:
    """Moves the episode clock forward to ``at`` (an action's timestamp), when the replay runs on the log's clock."""
    clock = sandbox.clock if sandbox is not None else None
    if clock is not None and at is not None:
        clock.advance_to(at)


def network_notes(sandbox: Sandbox | None) -> list[str]:
    """What the episode's network met: requests to services that are not emulated, or why it had none."""
    if sandbox is None:
        return []
    network = sandbox.network
    if network is None:
        return ["OAS's service ports were not answered: the placeholder listener needs root and the sandbox"] if (
            sandbox.profile == "oas") else []
    met = network.requests()
    if not met:
        return []
    total = len(met) + network.unrecorded
    shown = ", ".join(f"{g.service} {g.method} {g.path[:80]}" for g in met[:5])
    more = f" (+{total - 5} more)" if total > 5 else ""
    return [f"{total} request(s) to OAS services not emulated here were answered 503: {shown}{more}"]


def _iso(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else "?"
