"""Runs one OAS ``evaluator.py`` inside the rule-check sandbox and writes its ``Result`` as JSON.

Protocol: a JSON request on stdin (``evaluator``, ``function``, ``trajectory``: the one string the evaluator is
called with, whatever its signature says, as OAS called it; ``chat``; ``services``: where each service
``host:port`` is reached, pinned by the host); one JSON reply on the original stdout
(``{"ok": true, "checkpoints": [...], "final_score": {...}}`` or ``{"ok": false, "stage", "error"}``, both with
``unavailable`` service calls, the exceptions ``grader`` ``swallowed`` and ``tampering``: exceptions that the
agent's leftovers provoke, ``common.tampering_records``).
The evaluator's prints go to stderr. Before any evaluator code runs, the process makes itself non-dumpable
(``PR_SET_DUMPABLE`` 0): nothing the evaluator starts (an agent's script, a planted start-up file) can read its
memory (the nonce), open its reply pipe through ``/proc`` or ptrace it. Standard library only; run as a script,
never imported by toolemu.
"""

from __future__ import annotations

import ctypes
import importlib.util
import inspect
import json
import logging
import resource
import sys
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import TextIO

_PR_SET_DUMPABLE = 4


def _undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: ``/proc/<pid>/mem``, ``fd`` and ptrace closed to same-uid processes."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _reply(out: TextIO, nonce: str, payload: dict[str, object]) -> None:
    out.write(json.dumps({**payload, "nonce": nonce}))
    out.flush()


def _takes_argument(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` takes a positional argument (the trajectory); a ``List[str]`` annotation changes nothing:
    upstream passed the string anyway, so such an evaluator iterates characters (the host notes it)."""
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        for p in inspect.signature(fn).parameters.values()
    )


def main() -> int:
    """Reads the request, runs the evaluator, replies; returns the process exit code."""
    _undumpable()
    out = sys.stdout
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    request = json.load(sys.stdin)
    sys.path[:0] = [str(p) for p in request.get("path", [])]
    # The host checks this nonce in the reply, so output printed by other code (a forged verdict) is rejected.
    nonce = str(request.pop("nonce", ""))
    # Limits before any evaluator code runs: a runaway evaluator fails (an error), it cannot starve the host.
    memory = int(request.get("memory_mb", 2048)) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(request.get("cpu_seconds", 60))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    import common
    import file_watch
    import scoring

    common.set_chat_history(request.get("chat", []))
    common.set_service_addresses(request.get("services") or {})
    file_watch.watch_file_access(request.get("agent_etc"), request.get("etc_denylist") or (),
                                 request.get("truncated") or ())
    trajectory = str(request.get("trajectory", ""))
    try:
        spec = importlib.util.spec_from_file_location("evaluator", request["evaluator"])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {request['evaluator']}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["evaluator"] = module
        spec.loader.exec_module(module)
        fn = getattr(module, request["function"])
    except BaseException as e:
        common.note_exception("import", e)
        _reply(out, nonce, {"ok": False, "stage": "import", "error": traceback.format_exc(limit=8),
                            "tampering": common.tampering_records()})
        return 0
    try:
        value = fn(trajectory) if _takes_argument(fn) else fn()
    except BaseException as e:
        common.note_exception(request["function"], e)
        _reply(out, nonce, {"ok": False, "stage": "call", "error": traceback.format_exc(limit=8),
                            "tampering": common.tampering_records()})
        return 0
    extra = {"unavailable": common.unavailable_calls(), "swallowed": common.swallowed_exceptions(),
             "tampering": common.tampering_records()}
    problem = _bad_result(value, scoring, request["function"], int(request.get("max_checkpoints", 1000)))
    if problem is not None:
        _reply(out, nonce, {"ok": False, "stage": "result", "error": problem, **extra})
        return 0
    try:
        checkpoints = [c.to_dict() for c in value.checkpoints]
        score = value.final_score
        if not (isinstance(score, dict) and all(isinstance(score.get(k), int) for k in ("total", "result"))):
            raise TypeError(f"the scoring strategy returned {score!r:.200}, expected {{'total': int, 'result': int}}")
        score = {"total": int(score["total"]), "result": int(score["result"])}
        bound = int(request.get("max_points", 10**9))
        numbers = [score["total"], score["result"], *(v for c in checkpoints for v in (c["total"], c["result"]))]
        if any(isinstance(v, bool) or not isinstance(v, int | float) or not abs(v) <= bound for v in numbers):
            raise ValueError(f"a checkpoint or the final score is not a number within +-{bound:,}")
    except BaseException:
        _reply(out, nonce, {"ok": False, "stage": "result", "error": traceback.format_exc(limit=8), **extra})
        return 0
    _reply(out, nonce, {"ok": True, "checkpoints": checkpoints, "final_score": score, **extra})
    return 0


def _bad_result(value: object, scoring: ModuleType, function: str, limit: int) -> str | None:
    """Why ``value`` is not a usable ``scoring.Result``, or ``None`` when it is."""
    if not isinstance(value, scoring.Result):
        return f"{function} returned {type(value).__name__}, expected scoring.Result"
    items = value.checkpoints
    if not isinstance(items, list | tuple):
        return f"{function} returned a Result whose checkpoints are {type(items).__name__}, expected a list"
    if len(items) > limit:
        return f"{function} returned {len(items):,} checkpoints; at most {limit:,} are read"
    for item in items:
        if not isinstance(item, scoring.Checkpoint):
            return f"{function} returned a Result holding {type(item).__name__} {item!r:.80}, expected Checkpoint"
    return None


if __name__ == "__main__":
    sys.exit(main())
