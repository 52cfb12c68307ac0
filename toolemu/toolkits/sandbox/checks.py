"""Runs the checks that need an episode's files (capture phase), read-only under bubblewrap.

Three runners: a case's native Python check (``function(final_state) -> bool``), an OpenAgentSafety
``evaluator.py`` through our ``scoring``/``common`` compatibility modules, and a regex over a file the snapshot
holds no text for. Each runs in its own process over the grader's copy of the episode (``GraderWorld``) mounted
read-only (an OAS evaluator writes to a throwaway copy of its own, ``check_scratch``), with no network, the
host's environment cleared, memory and CPU limits and a wall timeout.

Grading is a boundary: a check runs as the grader's host uid (never the agent's), in its own user and pid
namespaces, with an ``/etc`` we build (``grader_copy.grader_etc``: the agent's ``/etc`` only for entries that do
not steer execution) and our interpreters; its runner makes itself non-dumpable before any evaluator code, so
nothing it starts can read its memory or take its reply pipe. Its stdout and stderr are read through bounded
pipes (killed past the caps), and its reply is bounded too (checkpoints, numbers). The result is a raw
``CapturedCheck``; what it means (safe, unsafe, error) is decided by ``rewards``. A check that fails gets
``error`` set, and ``tampering`` when what the agent left is to blame; only a sandbox that cannot start raises.
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pydantic import JsonValue

from toolemu.core import safefs
from toolemu.core.capture import CapturedCheck, CheckpointScore, CheckRunner, Tampering
from toolemu.core.errors import CaseError, SandboxError
from toolemu.core.trajectory import FinalState
from toolemu.core.types import DEFAULT_USER, Frozen
from toolemu.toolkits.sandbox import oas_image
from toolemu.toolkits.sandbox._bounded import run_bounded
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS, bwrap_argv, host_uid_for
from toolemu.toolkits.sandbox.check_scratch import writable_view
from toolemu.toolkits.sandbox.clock import SandboxClock
from toolemu.toolkits.sandbox.drivers import driver_source
from toolemu.toolkits.sandbox.grader_copy import (
    AGENT_ETC_MOUNT,
    ETC_DENYLIST,
    RUNNER_MOUNT,
    UTILS_MOUNT,
    GraderWorld,
    agent_etc_path,
    copy_world,
    grader_etc,
)
from toolemu.toolkits.sandbox.oas_wheelhouse import installed_wheels
from toolemu.toolkits.sandbox.quota import check_quota

logger = logging.getLogger(__name__)

DEFAULT_CHECK_TIMEOUT_S = 30.0
"""Wall-clock limit of one check."""
SANDBOX_PYTHON = oas_image.SANDBOX_PYTHON
"""Interpreter the checks run under, inside the sandbox (``/usr`` is bound read-only)."""
CHECK_MEMORY_MB = 2048
"""Address-space limit of a check process, in MiB."""
MAX_REPLY_BYTES = 16 * 1024 * 1024
"""A check's reply pipe (stdout) past this many bytes kills it: an error."""
MAX_PRINT_BYTES = 8 * 1024 * 1024
"""A check that prints (stderr) past this many bytes is killed: an error."""
MAX_CHECKPOINTS = 1000
"""An OAS ``Result`` with more checkpoints than this is an error."""
MAX_POINTS = 10**9
"""Checkpoint and final-score numbers beyond this (in absolute value) are an error."""
MAX_TAMPERING = 50
"""Tampering records kept per check."""
COMPAT_MODULES = ("scoring.py", "common.py", "config.py", "service_helpers.py", "file_watch.py", "runner.py")
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
    source_root: str | None = None
    """``native`` / ``oas``: the case's folder; the path from it to ``source``'s folder is opened without
    following a link out of it (``None``: ``source``'s folder is opened as given)."""
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
    trajectory: str = "",
    chat: Sequence[Mapping[str, str]] = (),
    state: FinalState | None = None,
    timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
    bwrap: str | os.PathLike[str] | None = None,
    netns_fd: int | None = None,
    world: GraderWorld | None = None,
    clock: SandboxClock | None = None,
    services: Mapping[str, str] | None = None,
) -> CapturedCheck:
    """Runs ``job`` in a fresh read-only sandbox over the grader's copy (or ``root``) and returns its result.

    OAS evaluators run as OAS ran them: as root (inside the sandbox only) with the OAS image's libraries
    importable (the ``oas`` profile, ``toolemu.toolkits.sandbox.oas_image``), so one that imports ``requests``
    at the top loads.

    Args:
        root: The episode root (its ``WRITABLE_DIRS`` folders are bound read-only) when ``world`` is ``None``
            (a scratch root, tests); its ``/etc`` is copied, never bound.
        job: What to run.
        trajectory: ``oas``: the one string the evaluator gets, as OAS gave it: the episode's OpenHands event
            log as JSON text (``toolemu.testcases.openhands.episode_log``).
        chat: NPC messages (``{"npc", "direction", "content"}``) for the OAS chat helpers.
        state: The final-state snapshot handed to a native check's function.
        timeout_s: Wall-clock limit.
        bwrap: The bwrap executable; ``None`` searches ``PATH``.
        netns_fd: The episode's network namespace (``Sandbox.network_fd``) for the check to run in, so a
            server the agent left running answers on loopback; ``None``: a new, empty one.
        world: The grader's copy of the episode: the check reads it instead of ``root``, runs as its uid and
            has its traps (``CopyReport.traps``) blamed when it fails.
        clock: The episode clock (``Sandbox.clock``): the check runs at the episode's time, as OAS's evaluators
            ran right after the run.
        services: ``oas``: where the emulated services are reached (``EpisodeServices.addresses``), pinned for
            ``common``'s helpers so no hosts file decides it.

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
        "max_checkpoints": MAX_CHECKPOINTS,
        "max_points": MAX_POINTS,
    }
    parent = world.base if world is not None else None
    with tempfile.TemporaryDirectory(prefix="check-", dir=parent) as tmp:
        staging = Path(tmp)
        try:
            if world is not None:
                root, etc, uid, traps = world.root, world.checks_etc(), world.uid, tuple(world.report.traps)
                incomplete = world.report.overflow_trap()
                staging.chmod(0o755)
            else:
                etc, uid, traps = _scratch_etc(root, staging), host_uid_for(root), ()
                incomplete = None
        except OSError as e:
            raise SandboxError(f"check `{job.check}`: could not build the check's /etc: {e}") from e
        runner_dir = staging / "runner"
        runner_dir.mkdir()
        binds: list[tuple[Path, str]] = [(runner_dir, RUNNER_MOUNT)]
        # The agent's own /etc entries that the check's /etc replaces stay in the copy: readable as data there.
        agent_etc = root / "etc" if world is not None else None
        if agent_etc is not None and agent_etc.is_dir() and not agent_etc.is_symlink():
            binds.append((agent_etc, AGENT_ETC_MOUNT))
            request |= {"agent_etc": AGENT_ETC_MOUNT, "etc_denylist": list(ETC_DENYLIST)}
        if world is not None:
            truncated: list[JsonValue] = [path for path in sorted(world.report.truncated)]
            request["truncated"] = truncated
        if job.runner == "file_text":
            script = _stage_native_runner(runner_dir)
            where = agent_etc_path(job.path or "") if agent_etc is not None else None
            request |= {"job": "file_text", "file": where or job.path, "pattern": job.pattern}
        else:
            source = Path(job.source or "")
            if not source.is_file():
                return _failed(job, f"file {source} does not exist")
            utils = staging / "utils"
            try:  # never through a link: a link out of the folder or a special file makes the check an error
                safefs.copy_tree(source.parent, utils, what="python check's folder", links="inside",
                                 skip=("__pycache__",), within=job.source_root)
            except CaseError as e:
                return _failed(job, str(e))
            binds.append((utils, UTILS_MOUNT))
            request |= {"path": [RUNNER_MOUNT, UTILS_MOUNT], "function": job.function,
                        "module": f"{UTILS_MOUNT}/{source.name}", "evaluator": f"{UTILS_MOUNT}/{source.name}"}
            if job.runner == "oas":
                script = _stage_compat(runner_dir)
                request |= {"trajectory": trajectory, "chat": [dict(m) for m in chat],
                            "services": dict(services or {}),
                            "path": [RUNNER_MOUNT, UTILS_MOUNT, oas_image.SITE_MOUNT, *_agent_wheels(root)]}
            else:
                script = _stage_native_runner(runner_dir)
                request |= {"job": "native", "state": state.model_dump(mode="json") if state else None}
        for top in (staging / "runner", staging / "utils"):
            _open_up(top)
        # PYTHONNOUSERSITE: a Python the evaluator starts must not load the agent's ~/.local site-packages;
        # git reads no config of the agent's either.
        env = {"PYTHONIOENCODING": "utf-8", "PYTHONNOUSERSITE": "1", "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": "/dev/null"}
        if clock is not None:
            env |= clock.env()
            binds += clock.binds()
        with ExitStack() as stack:
            # An OAS evaluator may write where upstream's could (its container): into a copy of its own, dropped
            # with the check; every other check, and the snapshot, read the grader's copy read-only.
            scratch = stack.enter_context(writable_view(world, staging / "view")) if (
                job.runner == "oas" and world is not None) else None
            argv = bwrap_argv(
                root, writable=False, extra_ro_binds=binds, env=env, cwd="/", bwrap=bwrap, host_uid=uid,
                profile="oas" if job.runner == "oas" else "default", netns_fd=netns_fd, etc=etc,
                user=world.user if world is not None else DEFAULT_USER, scratch=scratch,
            )
            # -I -S: no user site, no site/sitecustomize, no PYTHON* variables; the runner puts its modules and
            # the check's folder on sys.path itself.
            argv += [SANDBOX_PYTHON, "-I", "-S", "-B", f"{RUNNER_MOUNT}/{script}"]
            with check_quota() as bound:  # processes and memory of the check and its children together
                result = _run(job, bound(argv), json.dumps(request), timeout_s, nonce,
                              () if netns_fd is None else (netns_fd,))
        if job.runner == "file_text" and result.value is False:
            cut = tuple(t for t in traps if t.kind == "oversize" and t.path == job.path)
            if cut:  # the pattern may be in the part that was not copied: no match proves nothing
                return _failed(job, f"{job.path}: only the first bytes were matched ({cut[0].found})",
                               tampering=cut)
        result = _blame(result, traps)
        if incomplete is not None:
            # An incomplete world cannot vouch for safety: whatever the check found, it did not see all of it.
            merged = tuple(dict.fromkeys((*result.tampering, incomplete)))[:MAX_TAMPERING]
            result = result.model_copy(update={"tampering": merged})
        return result


def _agent_wheels(root: Path) -> list[JsonValue]:
    """The wheelhouse folders of what the agent pip-installed (OAS's evaluators saw those packages): our
    pristine read-only copies, picked by the names in the episode's user site, never the agent's files."""
    wheels = oas_image.built_env_dir() / "wheels"
    return [f"{oas_image.WHEELS_MOUNT}/{name}" for name in installed_wheels(root, wheels)]


def _scratch_etc(root: Path, staging: Path) -> Path:
    """The checks' ``/etc`` for a root without a grader copy: the agent's data entries copied, ours on top."""
    agent = staging / "agent"
    agent.mkdir()
    copy_world(root, agent, max_files=10_000, max_bytes=64 * 1024 * 1024, max_file_bytes=16 * 1024 * 1024,
               uid=None, names=("etc",))
    etc = staging / "etc"
    grader_etc(agent / "etc", etc, None)
    staging.chmod(0o755)
    return etc


def _open_up(top: Path) -> None:
    """Makes the staged runner and check folder readable by the check's uid (links are left alone)."""
    if not top.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o644)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]


def _blame(result: CapturedCheck, traps: tuple[Tampering, ...]) -> CapturedCheck:
    """Adds the copy's traps to a check that failed (an error, or a tampering record naming no path) while they
    were in its world, and traps whose path a swallowed exception names; a check that succeeded without
    touching them keeps its verdict."""
    if not traps:
        return result
    if result.error is not None or any(not t.path for t in result.tampering):
        blamed = traps  # a crash, a timeout, or a read without end: the traps in the copy are the suspects
    else:
        blamed = tuple(t for t in traps if t.path and any(t.path in line for line in result.swallowed))
    if not blamed:
        return result
    merged = tuple(dict.fromkeys((*result.tampering, *blamed)))[:MAX_TAMPERING]
    return result.model_copy(update={"tampering": merged})


def _failed(job: CheckJob, error: str, **fields: object) -> CapturedCheck:
    return CapturedCheck.model_validate({"check": job.check, "runner": job.runner, "error": error, **fields})


def _stage_compat(runner_dir: Path) -> str:
    for name in COMPAT_MODULES:
        shutil.copyfile(_COMPAT_DIR / name, runner_dir / name)
    return "runner.py"


def _stage_native_runner(runner_dir: Path) -> str:
    (runner_dir / f"{_NATIVE_RUNNER}.py").write_text(driver_source(_NATIVE_RUNNER), encoding="utf-8")
    return f"{_NATIVE_RUNNER}.py"


def _run(job: CheckJob, argv: list[str], stdin: str, timeout_s: float, nonce: str,
         pass_fds: tuple[int, ...] = ()) -> CapturedCheck:
    try:
        done = run_bounded(argv, stdin.encode("utf-8", "surrogatepass"), timeout_s=timeout_s,
                           max_stdout=MAX_REPLY_BYTES, max_stderr=MAX_PRINT_BYTES, keep=_STDERR_TAIL,
                           pass_fds=pass_fds)
    except OSError as e:
        raise SandboxError(f"check `{job.check}`: could not start bubblewrap: {e}") from e
    stderr_tail = done.stderr_tail
    if stderr_tail.strip():
        logger.debug("check %s: stderr:\n%s", job.check, stderr_tail)
    if done.timed_out:
        return _failed(job, f"timed out after {timeout_s:g}s")
    if done.overflow is not None:
        return _failed(job, f"{done.overflow} and was killed; stderr: {stderr_tail.strip()[-500:]}")
    try:
        reply = json.loads(done.stdout)
    except ValueError:  # JSON errors, and integers past Python's digit limit
        why = f"killed by signal {-done.returncode}" if done.returncode and done.returncode < 0 else (
            f"exit {done.returncode}")
        return _failed(job, f"produced no result ({why}); stderr: {stderr_tail.strip()}")
    if not isinstance(reply, dict):
        return _failed(job, f"runner replied {reply!r:.200}")
    if reply.get("nonce") != nonce:
        return _failed(job, "the check's output did not come from the runner (forged or corrupted reply)")
    return _captured(job, reply)


def _tampering(value: object) -> tuple[Tampering, ...]:
    """The runner's tampering records, validated and bounded (unknown kinds are dropped)."""
    found: list[Tampering] = []
    for item in value[:MAX_TAMPERING] if isinstance(value, list) else ():
        if isinstance(item, dict):
            try:
                found.append(Tampering.model_validate({"kind": item.get("kind"),
                                                       "path": str(item.get("path", ""))[:500],
                                                       "found": str(item.get("found", ""))[:500]}))
            except ValueError:
                continue
    return tuple(dict.fromkeys(found))


def _points(value: object) -> float:
    """A checkpoint number as a float; bounded, so ``10**400`` or ``inf`` is an error, not a crash."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r:.40} is not a number")
    if isinstance(value, int) and abs(value) > MAX_POINTS:
        raise ValueError(f"{str(value)[:20]}... is beyond the bound {MAX_POINTS:,}")
    number = float(value)
    if not math.isfinite(number) or abs(number) > MAX_POINTS:
        raise ValueError(f"{number!r} is beyond the bound {MAX_POINTS:,}")
    return number


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _captured(job: CheckJob, reply: dict[str, object]) -> CapturedCheck:
    unavailable, swallowed = _strings(reply.get("unavailable"))[:100], _strings(reply.get("swallowed"))[:100]
    tampering = _tampering(reply.get("tampering"))
    name = Path(job.source).name if job.source else (job.path or "")
    if not reply.get("ok"):
        stage = {"import": "failed at import", "call": "raised", "result": "returned a bad result"}.get(
            str(reply.get("stage")), "failed"
        )
        error = f"{name} {stage}: {str(reply.get('error', '')).strip()[-_STDERR_TAIL:]}"
        return _failed(job, error, unavailable=unavailable, swallowed=swallowed, tampering=tampering)
    if job.runner == "oas":
        raw = reply.get("checkpoints")
        items = raw if isinstance(raw, list) else []
        if len(items) > MAX_CHECKPOINTS:
            return _failed(job, f"{name} returned {len(items):,} checkpoints; at most {MAX_CHECKPOINTS:,} are read",
                           tampering=tampering)
        try:
            checkpoints = tuple(
                CheckpointScore(total=_points(c["total"]), result=_points(c["result"])) for c in items
            )
            score = reply.get("final_score")
            final = None
            if isinstance(score, dict) and isinstance(score.get("total"), int) and isinstance(
                    score.get("result"), int):
                final = CheckpointScore(total=_points(score["total"]), result=_points(score["result"]))
        except (KeyError, TypeError, ValueError) as e:
            return _failed(job, f"{name} returned malformed checkpoints or score ({str(raw)[:200]}): {e}",
                           tampering=tampering)
        if final is None:
            return _failed(job, f"{name}: the runner replied without a usable final score ({str(score)[:120]})",
                           tampering=tampering)
        return CapturedCheck(check=job.check, runner="oas", checkpoints=checkpoints, final_score=final,
                             unavailable=unavailable, swallowed=swallowed, detail=name, tampering=tampering)
    value = reply.get("value")
    if not isinstance(value, bool):
        what = f"{job.function}()" if job.runner == "native" else "the match"
        return _failed(job, f"{what} returned {type(value).__name__} {str(value)[:80]}, expected bool",
                       tampering=tampering)
    detail = f"{name}:{job.function} returned {value}" if job.runner == "native" else str(reply.get("detail", ""))
    return CapturedCheck(check=job.check, runner=job.runner, value=value, detail=detail[:2000],
                         tampering=tampering)
