"""Runs the checks that need an episode's files (capture phase), read-only under bubblewrap.

Three runners: a case's native Python check (``function(final_state) -> bool``), an OpenAgentSafety
``evaluator.py`` through our ``scoring``/``common`` compatibility modules, and a regex over a file the snapshot
holds no text for. Each runs in its own process over the episode root mounted read-only, with no network, the
host's environment cleared, memory and CPU limits and a wall timeout. The result is a raw ``CapturedCheck``;
what it means (safe, unsafe, error) is decided by ``rewards``. A check that fails gets ``error`` set; only
a sandbox that cannot start raises.
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import JsonValue

from toolemu.core.capture import CapturedCheck, CheckpointScore, CheckRunner
from toolemu.core.errors import SandboxError
from toolemu.core.trajectory import FinalState
from toolemu.core.types import Frozen
from toolemu.toolkits.sandbox import oas_image
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS, bwrap_argv
from toolemu.toolkits.sandbox.drivers import driver_source
from toolemu.toolkits.sandbox.quota import check_quota

logger = logging.getLogger(__name__)

DEFAULT_CHECK_TIMEOUT_S = 30.0
"""Wall-clock limit of one check."""
SANDBOX_PYTHON = oas_image.SANDBOX_PYTHON
"""Interpreter the checks run under, inside the sandbox (``/usr`` is bound read-only)."""
RUNNER_MOUNT = "/opt/toolemu/runner"
"""Where the runner scripts (and the OAS ``scoring``/``common`` modules) appear inside the sandbox."""
UTILS_MOUNT = "/utils"
"""Where the check's own folder (an OAS ``utils/``, or a native check's folder) appears inside the sandbox."""
CHECK_MEMORY_MB = 2048
"""Address-space limit of a check process, in MiB."""
LOADER_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d")
"""Host files bound over the episode's ``/etc`` copies for check processes."""
COMPAT_MODULES = ("scoring.py", "common.py", "config.py", "runner.py")
"""Files of ``oas_compat`` visible to OAS evaluators."""
_COMPAT_DIR = Path(__file__).resolve().parent / "oas_compat"
_NATIVE_RUNNER = "native_check"
_STDERR_TAIL = 2000


class CheckJob(Frozen):
    """One check to run during capture; built by the env from a case's checks."""

    check: str
    """The check's name (``id`` or ``<kind>[<index>]``), copied into the result."""
    runner: CheckRunner
    """Which runner."""
    source: str | None = None
    """``native`` / ``oas``: host path of the Python file, inside the case's folder."""
    function: str = "check"
    """``native`` / ``oas``: the function to call."""
    path: str | None = None
    """``file_text``: the file, as seen inside the sandbox."""
    pattern: str | None = None
    """``file_text``: the regex."""


@contextmanager
def scratch_root() -> Iterator[Path]:
    """An empty episode root, for checks of an episode that had no sandbox (emulated toolkits only)."""
    with tempfile.TemporaryDirectory(prefix="toolemu-check-root-") as tmp:
        root = Path(tmp)
        for name in WRITABLE_DIRS:
            (root / name).mkdir()
        root.chmod(0o755)
        yield root


def run_check(
    root: Path,
    job: CheckJob,
    *,
    trajectory: Sequence[str] = (),
    chat: Sequence[Mapping[str, str]] = (),
    state: FinalState | None = None,
    timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
    bwrap: str | os.PathLike[str] | None = None,
    trajectory_text: str | None = None,
    netns_fd: int | None = None,
) -> CapturedCheck:
    """Runs ``job`` in a fresh read-only sandbox over ``root`` and returns its raw result.

    OAS evaluators run as OAS ran them: as root (inside the sandbox only) with the OAS image's libraries
    importable (the ``oas`` profile, ``toolemu.toolkits.sandbox.oas_image``), so one that imports ``requests``
    at the top loads.

    Args:
        root: The episode root (its ``WRITABLE_DIRS`` folders are bound read-only).
        job: What to run.
        trajectory: The episode as OAS trajectory blocks (``oas``).
        chat: NPC messages (``{"npc", "direction", "content"}``) for the OAS chat helpers.
        state: The final-state snapshot handed to a native check's function.
        timeout_s: Wall-clock limit.
        bwrap: The bwrap executable; ``None`` searches ``PATH``.
        trajectory_text: ``oas``: the string given to evaluators that take one string, instead of the blocks
            joined (an imported OpenHands log is scored over its own JSON text, as OAS did).
        netns_fd: The episode's network namespace (``Sandbox.network_fd``) for the check to run in, so a
            server the agent left running answers on loopback; ``None``: a new, empty one.

    Returns:
        The raw result; ``error`` is set when the check crashed, timed out, or returned something unusable.

    Raises:
        SandboxError: bubblewrap or the sandbox's Python interpreter is missing, or bwrap cannot start.
    """
    if not Path(SANDBOX_PYTHON).exists():
        raise SandboxError(f"{SANDBOX_PYTHON} is missing; install python3 to run Python checks in the sandbox")
    nonce = secrets.token_hex(16)
    request: dict[str, JsonValue] = {
        "nonce": nonce,
        "memory_mb": CHECK_MEMORY_MB,
        "cpu_seconds": math.ceil(timeout_s) + 1,
    }
    with tempfile.TemporaryDirectory(prefix="toolemu-check-") as tmp:
        staging = Path(tmp)
        runner_dir = staging / "runner"
        runner_dir.mkdir()
        binds: list[tuple[Path, str]] = [*_loader_guards(root), (runner_dir, RUNNER_MOUNT)]
        if job.runner == "file_text":
            script = _stage_native_runner(runner_dir)
            request |= {"job": "file_text", "file": job.path, "pattern": job.pattern}
        else:
            source = Path(job.source or "")
            if not source.is_file():
                return _failed(job, f"file {source} does not exist")
            utils = staging / "utils"
            shutil.copytree(source.parent, utils, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            binds.append((utils, UTILS_MOUNT))
            request |= {"path": [RUNNER_MOUNT, UTILS_MOUNT], "function": job.function,
                        "module": f"{UTILS_MOUNT}/{source.name}", "evaluator": f"{UTILS_MOUNT}/{source.name}"}
            if job.runner == "oas":
                script = _stage_compat(runner_dir)
                request |= {"trajectory": list(trajectory), "chat": [dict(m) for m in chat],
                            "trajectory_text": trajectory_text,
                            "path": [RUNNER_MOUNT, UTILS_MOUNT, oas_image.SITE_MOUNT]}
            else:
                script = _stage_native_runner(runner_dir)
                request |= {"job": "native", "state": state.model_dump(mode="json") if state else None}
        for path in [staging, *staging.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        argv = bwrap_argv(
            root, writable=False, extra_ro_binds=binds, env={"PYTHONIOENCODING": "utf-8"}, cwd="/", bwrap=bwrap,
            profile="oas" if job.runner == "oas" else "default", netns_fd=netns_fd,
        )
        # -I -S: no user site, no site/sitecustomize (Debian links it into the agent-writable /etc), no
        # PYTHON* variables; the runner puts its modules and the check's folder on sys.path itself.
        argv += [SANDBOX_PYTHON, "-I", "-S", "-B", f"{RUNNER_MOUNT}/{script}"]
        with check_quota() as bound:  # processes and memory of the check and its children together
            return _run(job, bound(argv), json.dumps(request), timeout_s, nonce,
                        () if netns_fd is None else (netns_fd,))


def _failed(job: CheckJob, error: str, **fields: object) -> CapturedCheck:
    return CapturedCheck.model_validate({"check": job.check, "runner": job.runner, "error": error, **fields})


def _stage_compat(runner_dir: Path) -> str:
    for name in COMPAT_MODULES:
        shutil.copyfile(_COMPAT_DIR / name, runner_dir / name)
    return "runner.py"


def _stage_native_runner(runner_dir: Path) -> str:
    (runner_dir / f"{_NATIVE_RUNNER}.py").write_text(driver_source(_NATIVE_RUNNER), encoding="utf-8")
    return f"{_NATIVE_RUNNER}.py"


def _loader_guards(root: Path) -> list[tuple[Path, str]]:
    """Binds that hide the agent's dynamic-loader files from the check process.

    The episode's ``/etc`` is the agent's to write; an ``ld.so.preload`` or a doctored ``ld.so.cache`` there
    would run the agent's code inside the check and let it forge the verdict. The host's loader files are
    bound over the agent's, and ``/dev/null`` over a planted ``ld.so.preload``.
    """
    etc = root / "etc"
    binds: list[tuple[Path, str]] = []
    for name in LOADER_FILES:
        if os.path.lexists(etc / name) and Path("/etc", name).exists():
            binds.append((Path("/etc", name), f"/etc/{name}"))
    if os.path.lexists(etc / "ld.so.preload"):
        binds.append((Path("/dev/null"), "/etc/ld.so.preload"))
    return binds


def _run(job: CheckJob, argv: list[str], stdin: str, timeout_s: float, nonce: str,
         pass_fds: tuple[int, ...] = ()) -> CapturedCheck:
    try:
        proc = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=timeout_s, start_new_session=True,
            pass_fds=pass_fds,
        )
    except subprocess.TimeoutExpired:
        return _failed(job, f"timed out after {timeout_s:g}s")
    except OSError as e:
        raise SandboxError(f"check `{job.check}`: could not start bubblewrap: {e}") from e
    stderr_tail = proc.stderr[-_STDERR_TAIL:]
    if stderr_tail.strip():
        logger.debug("check %s: stderr:\n%s", job.check, stderr_tail)
    try:
        reply = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return _failed(job, f"produced no result (exit {proc.returncode}); stderr: {stderr_tail.strip()}")
    if not isinstance(reply, dict):
        return _failed(job, f"runner replied {reply!r:.200}")
    if reply.get("nonce") != nonce:
        return _failed(job, "the check's output did not come from the runner (forged or corrupted reply)")
    return _captured(job, reply)


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _captured(job: CheckJob, reply: dict[str, object]) -> CapturedCheck:
    unavailable, swallowed = _strings(reply.get("unavailable")), _strings(reply.get("swallowed"))
    name = Path(job.source).name if job.source else (job.path or "")
    if not reply.get("ok"):
        stage = {"import": "failed at import", "call": "raised", "result": "returned a bad result"}.get(
            str(reply.get("stage")), "failed"
        )
        error = f"{name} {stage}: {str(reply.get('error', '')).strip()[-_STDERR_TAIL:]}"
        return _failed(job, error, unavailable=unavailable, swallowed=swallowed)
    if job.runner == "oas":
        raw = reply.get("checkpoints")
        items = raw if isinstance(raw, list) else []
        try:
            checkpoints = tuple(
                CheckpointScore(total=float(c["total"]), result=float(c["result"])) for c in items
            )
        except (KeyError, TypeError, ValueError) as e:
            return _failed(job, f"{name} returned malformed checkpoints {raw!r:.200}: {e}")
        score = reply.get("final_score")
        final = None
        if isinstance(score, dict) and isinstance(score.get("total"), int) and isinstance(score.get("result"), int):
            final = CheckpointScore(total=float(score["total"]), result=float(score["result"]))
        if final is None:
            return _failed(job, f"{name}: the runner replied without a usable final score ({score!r:.120})")
        return CapturedCheck(check=job.check, runner="oas", checkpoints=checkpoints, final_score=final,
                             unavailable=unavailable, swallowed=swallowed, detail=name)
    value = reply.get("value")
    if not isinstance(value, bool):
        what = f"{job.function}()" if job.runner == "native" else "the match"
        return _failed(job, f"{what} returned {type(value).__name__} {value!r:.80}, expected bool")
    detail = f"{name}:{job.function} returned {value}" if job.runner == "native" else str(reply.get("detail", ""))
    return CapturedCheck(check=job.check, runner=job.runner, value=value, detail=detail)
