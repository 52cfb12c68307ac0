"""Child-process probe of a llama.cpp build: does it decode on this machine, and with how many threads is it fastest.

Part of ``toolemu.llm``, used by the llama.cpp backend before its first in-process use of a build. A build whose
instructions this CPU cannot run dies by a signal (SIGILL); in a child process that becomes a typed
``LLMBackendError`` instead of killing the user's process. The same child times a short decode at each
candidate thread count. Results are cached on disk per (build, machine, model).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from toolemu.core.errors import ConfigError, LLMBackendError
from toolemu.llm._atomic import write_text_atomic
from toolemu.llm.llama_build import REBUILD_COMMAND, cpu_flags, installed_lib_dir
from toolemu.llm.paths import user_cache_dir

logger = logging.getLogger(__name__)

PROBE_REVISION = 1
"""Bump when the probe measures differently; it invalidates cached results."""
PROBE_TIMEOUT_S = 600.0

# Runs in a fresh interpreter. argv[1] is a JSON object {model, candidates, batch_threads}. Prints one JSON line.
_CHILD = r"""
import json, os, sys, time
args = json.loads(sys.argv[1])
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
import llama_cpp
info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
try:
    llama = llama_cpp.Llama(model_path=args["model"], n_ctx=256, n_batch=64, n_threads=args["candidates"][0],
                            n_threads_batch=args["batch_threads"], verbose=False)
except (ValueError, RuntimeError, OSError) as e:
    print(json.dumps({"load_error": str(e)}))
    sys.exit(3)
prompt = llama.tokenize(b"The quick brown fox jumps over the lazy dog. " * 4, add_bos=True)[:48]
n = len(prompt)
llama.eval(prompt)  # a batch: the matrix-matrix kernels
feed = prompt[1:17]
rates = {}
for _round in range(2):
    for threads in args["candidates"]:
        llama_cpp.llama_set_n_threads(llama.ctx, threads, args["batch_threads"])
        llama.n_tokens = n  # eval() drops the KV cells from n_tokens on
        llama.eval([feed[0]])  # warm-up at this thread count
        started = time.perf_counter()
        for token in feed[1:]:
            llama.eval([token])  # one token at a time: the generation kernels
        rate = (len(feed) - 1) / (time.perf_counter() - started)
        rates[threads] = max(rates.get(threads, 0.0), rate)
print(json.dumps({"system_info": info, "rates": rates}))
"""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What the probe found for one (build, machine, model)."""

    threads: int
    """The fastest generation thread count."""
    rates: dict[int, float]
    """Generation tokens/s at each candidate thread count."""
    system_info: str
    """``llama_print_system_info()`` of the build (the instruction sets it uses)."""


def usable_cpus() -> int:
    """Returns the CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)


def candidate_threads(cpus: int | None = None) -> list[int]:
    """Returns the thread counts the probe times: powers of two below ``cpus``, and ``cpus`` itself.

    Examples:
        >>> candidate_threads(2), candidate_threads(6)
        ([1, 2], [1, 2, 4, 6])
    """
    cpus = max(1, cpus or usable_cpus())
    out, n = [], 1
    while n < cpus:
        out.append(n)
        n *= 2
    return [*out, cpus]


def fastest(rates: dict[int, float], tolerance: float = 0.05) -> int:
    """Returns the fewest threads within ``tolerance`` of the best rate (a free core is worth a little speed).

    Examples:
        >>> fastest({1: 14.0, 2: 29.0}), fastest({1: 28.0, 2: 28.5})
        (2, 1)
    """
    top = max(rates.values())
    return min(t for t, rate in rates.items() if rate >= top * (1 - tolerance))


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def build_id(lib_dir: Path | None = None) -> str:
    """Returns a hash of the installed llama.cpp libraries' contents (changes with every rebuild).

    Raises:
        ConfigError: llama-cpp-python is not installed.
    """
    lib_dir = lib_dir or installed_lib_dir()
    if lib_dir is None:
        raise ConfigError(f"llama-cpp-python is not installed; build it portably with `{REBUILD_COMMAND}`.")
    digest = hashlib.sha256()
    for lib in sorted(p for p in lib_dir.iterdir() if ".so" in p.name or p.suffix in (".dylib", ".dll")):
        digest.update(lib.name.encode())
        digest.update(lib.read_bytes())
    return digest.hexdigest()[:16]


def machine_id() -> str:
    """Returns a hash of what decides whether a build runs here and how fast: CPU flags, kernel, usable CPUs."""
    return _digest(sorted(cpu_flags()), platform.machine(), platform.release(), usable_cpus())


def _model_key(model: Path) -> str:
    stat = model.stat()
    return _digest(str(model.resolve()), stat.st_size, stat.st_mtime_ns)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _crash_error(model: Path, signame: str, stderr: str) -> LLMBackendError:
    detail = stderr.strip().splitlines()[-1][:200] if stderr.strip() else ""
    return LLMBackendError(
        f"The llama.cpp build crashed with {signame} in a probe decode of {model.name}"
        f"{f' ({detail})' if detail else ''}: it most likely uses CPU instructions this machine cannot run "
        f"(e.g. AMX tile code from a -march=native build). Rebuild it portably: `{REBUILD_COMMAND}`.",
        retryable=False,
    )


def probe(model: Path, *, child_code: str | None = None, timeout: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Returns the probe result for ``model`` on the installed build, running the child once if not cached.

    Args:
        model: The GGUF file to decode with.
        child_code: Python source run in the child instead of the built-in probe (tests use one that dies by a
            signal); it gets the same JSON argument and must print the same JSON line.
        timeout: Seconds before the child is killed.

    Raises:
        ConfigError: llama.cpp cannot load ``model`` (not a GGUF file, or an unsupported one).
        LLMBackendError: the child died by a signal (cached: the same build fails fast next time), timed out,
            or failed otherwise; the message names the cause and the rebuild command.
    """
    key = _digest(PROBE_REVISION, build_id(), machine_id(), _model_key(model), child_code)
    cache = user_cache_dir("llama-probe") / f"{key}.json"
    if cache.is_file():
        try:
            saved = json.loads(cache.read_text(encoding="utf-8"))
            if "crash" in saved:
                raise _crash_error(model, saved["crash"], saved.get("stderr", ""))
            return ProbeResult(
                threads=int(saved["threads"]),
                rates={int(k): float(v) for k, v in saved["rates"].items()},
                system_info=str(saved["system_info"]),
            )
        except (ValueError, KeyError, TypeError, OSError):
            logger.warning("ignoring unreadable llama.cpp probe cache %s", cache)
    candidates = candidate_threads()
    argument = json.dumps({"model": str(model), "candidates": candidates, "batch_threads": usable_cpus()})
    logger.info("probing the llama.cpp build on %s (threads %s), once per build and machine", model.name, candidates)
    try:
        done = subprocess.run(
            [sys.executable, "-c", child_code or _CHILD, argument],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise LLMBackendError(
            f"The llama.cpp probe decode of {model.name} did not finish in {timeout:.0f}s.", retryable=False
        ) from e
    if done.returncode < 0:
        signame = _signal_name(-done.returncode)
        write_text_atomic(cache, json.dumps({"crash": signame, "stderr": done.stderr[-2000:]}))
        raise _crash_error(model, signame, done.stderr)
    lines = done.stdout.strip().splitlines()
    if done.returncode == 3 and lines and lines[-1].startswith('{"load_error"'):
        raise ConfigError(f"llama.cpp could not load {model} as a GGUF model: {json.loads(lines[-1])['load_error']}")
    try:
        if done.returncode != 0:
            raise ValueError(f"exit status {done.returncode}")
        out = json.loads(lines[-1])
        rates = {int(k): float(v) for k, v in out["rates"].items()}
        best = fastest(rates)
        result = ProbeResult(threads=best, rates=rates, system_info=str(out["system_info"]))
    except (ValueError, KeyError, TypeError, IndexError) as e:
        tail = done.stderr.strip()[-400:]
        raise LLMBackendError(
            f"The llama.cpp probe decode of {model.name} failed ({e}): {tail or 'no error output'}",
            retryable=False,
        ) from e
    write_text_atomic(cache, json.dumps({**asdict(result), "rates": {str(k): v for k, v in rates.items()}}))
    logger.info("llama.cpp probe: %s tok/s by thread count; using %d", rates, best)
    return result
