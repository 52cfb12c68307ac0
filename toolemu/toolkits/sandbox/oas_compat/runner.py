"""Runs one OAS ``evaluator.py`` inside the check sandbox and writes its ``Result`` as JSON.

Protocol: a JSON request on stdin (``evaluator``, ``function``, ``trajectory`` blocks, ``chat``); one JSON
reply on the original stdout (``{"ok": true, "checkpoints": [...]}`` or ``{"ok": false, "stage", "error"}``).
The evaluator's prints go to stderr. Standard library only; run as a script, never imported by toolemu.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import logging
import resource
import sys
import traceback
from collections.abc import Callable
from typing import TextIO


def _reply(out: TextIO, nonce: str, payload: dict[str, object]) -> None:
    out.write(json.dumps({**payload, "nonce": nonce}))
    out.flush()


def _wants_list(fn: Callable[..., object]) -> bool | None:
    """Whether ``fn`` takes the trajectory as a list of strings; ``None`` when it takes no argument."""
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if not params:
        return None
    first = params[0]
    annotation = first.annotation if isinstance(first.annotation, str) else repr(first.annotation)
    if any(token in annotation for token in ("list", "List", "Sequence", "Iterable")):
        return True
    return isinstance(first.default, list | tuple)


def main() -> int:
    """Reads the request, runs the evaluator, replies; returns the process exit code."""
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
    import scoring

    common.set_chat_history(request.get("chat", []))
    blocks: list[str] = request["trajectory"]
    try:
        spec = importlib.util.spec_from_file_location("evaluator", request["evaluator"])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {request['evaluator']}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["evaluator"] = module
        spec.loader.exec_module(module)
        fn = getattr(module, request["function"])
    except BaseException:
        _reply(out, nonce, {"ok": False, "stage": "import", "error": traceback.format_exc(limit=8)})
        return 0
    try:
        mode = _wants_list(fn)
        if mode is None:
            value = fn()
        else:
            value = fn(list(blocks) if mode else "\n\n".join(blocks))
    except BaseException:
        _reply(out, nonce, {"ok": False, "stage": "call", "error": traceback.format_exc(limit=8)})
        return 0
    unavailable = common.unavailable_calls()
    swallowed = common.swallowed_exceptions()
    if not isinstance(value, scoring.Result):
        _reply(
            out,
            nonce,
            {
                "ok": False,
                "stage": "result",
                "error": f"{request['function']} returned {type(value).__name__} {value!r:.200}, "
                "expected scoring.Result",
                "unavailable": unavailable,
                "swallowed": swallowed,
            },
        )
        return 0
    checkpoints = [c.to_dict() for c in value.checkpoints]
    try:
        score = value.result
    except BaseException:
        _reply(out, nonce, {"ok": False, "stage": "result", "error": traceback.format_exc(limit=8)})
        return 0
    _reply(
        out,
        nonce,
        {"ok": True, "checkpoints": checkpoints, "score": score, "unavailable": unavailable, "swallowed": swallowed},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
