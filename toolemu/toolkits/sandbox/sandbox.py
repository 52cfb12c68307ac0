"""``Sandbox``: one episode's bubblewrap sandbox with a persistent shell, a Python interpreter and file ops.

Real toolkits share one ``Sandbox`` per episode; its owner (the env) resets it, snapshots it and closes it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import queue
import secrets
import shlex
import signal
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from pydantic import JsonValue

from toolemu.core.errors import SandboxError, ServiceError
from toolemu.core.trajectory import CommandRecord, FileRecord, FinalState
from toolemu.core.types import DEFAULT_USER, EnvironmentSpec, SandboxProfile
from toolemu.services.pool import EpisodeServices
from toolemu.toolkits.sandbox import oas_image
from toolemu.toolkits.sandbox.bwrap import JoinedNamespaces, bwrap_argv, find_bwrap
from toolemu.toolkits.sandbox.clock import SandboxClock
from toolemu.toolkits.sandbox.config import SandboxConfig
from toolemu.toolkits.sandbox.drivers import driver_source, write_drivers
from toolemu.toolkits.sandbox.freeze import freeze_namespaces, thaw_namespaces
from toolemu.toolkits.sandbox.grader_copy import GraderWorld, copy_world
from toolemu.toolkits.sandbox.kernel import KERNEL_DRIVERS, KERNEL_MOUNT, RESTARTED, kernel_argv, shell_namespaces
from toolemu.toolkits.sandbox.placeholder import EpisodeNetwork, episode_network
from toolemu.toolkits.sandbox.quota import Cgroup, mount_private_tmpfs, tree_usage, unmount
from toolemu.toolkits.sandbox.seed import build_template, copy_root, remove_tree, sandbox_to_host, write_instruction
from toolemu.toolkits.sandbox.service_link import start_services
from toolemu.toolkits.sandbox.session import Encoder, Namespaces, Reaper, Session, SessionOutput, marker_for
from toolemu.toolkits.sandbox.snapshot import Snapshot, snapshot_root

logger = logging.getLogger(__name__)

_HOST_UID_BASE = 1_500_000_000
INSTRUCTION_MOUNT = "/instruction"
"""Where the case's instruction appears as ``task.md`` under the ``oas`` profile (read-only), as in OAS."""


class CommandOutcome(NamedTuple):
    """The result of one shell command or Python cell."""

    output: str
    """Combined stdout and stderr, bounded, with notes on timeouts and restarts appended."""
    exit_code: int | None
    """Exit status; ``None`` when the command timed out."""
    timed_out: bool
    """Whether the command hit ``SandboxConfig.command_timeout_s``."""
    truncated: bool
    """Whether the output was cut."""
    restarted: bool
    """Whether the session ended (``exit``, a crash, an unrecoverable timeout); state such as cwd is lost."""


class Sandbox:
    """A per-episode sandbox root plus the processes running over it.

    Args:
        config: Limits and options.
        workdir: Host folder to create the sandbox's private folder in; ``None`` uses the system temp folder.
            When running as root, every folder on its path must be open to other users (``o+x``). The private
            folder itself is mode 0700 (owned by the sandbox's host user), and as root a ``disk_mb`` tmpfs
            mounted ``nosuid,nodev``; see ``toolemu.toolkits.sandbox.quota``.

    Raises:
        SandboxError: When bubblewrap is missing and ``config.allow_unsandboxed`` is false, ``workdir``
            cannot be reached by the sandbox user, or the host offers a cgroup that then cannot be set up.
    """

    def __init__(self, config: SandboxConfig | None = None, *, workdir: Path | None = None) -> None:
        self.config = config or SandboxConfig()
        if self.config.allow_unsandboxed:
            logger.warning("sandbox disabled (allow_unsandboxed=True): real tools run directly on this host")
        else:
            find_bwrap(self.config.bwrap_path)
        sandboxed_root = os.geteuid() == 0 and not self.config.allow_unsandboxed
        self._host_uid = _HOST_UID_BASE + secrets.randbelow(1 << 28) if sandboxed_root else None
        # The grader's own uid: never the agent's, so nothing the agent runs can read, ptrace or signal a check.
        self._grader_uid = (
            _HOST_UID_BASE + (1 << 28) + secrets.randbelow(1 << 28) if sandboxed_root else None
        )
        self._frozen: set[int] = set()
        parent = Path(workdir or tempfile.gettempdir()).resolve()
        if self._host_uid is not None:
            _check_traversable(parent)
        self._cgroup: Cgroup | None = None
        if not self.config.allow_unsandboxed:
            self._cgroup = Cgroup.create("sandbox", memory_mb=self.config.sandbox_memory_mb,
                                         max_processes=self.config.sandbox_max_processes)
        self._base = Path(tempfile.mkdtemp(prefix="toolemu-sandbox-", dir=parent))
        self._size_capped = self._private_base()
        # Unmounts, removes the cgroup and deletes the folder at close, or when the sandbox is garbage-collected
        # or the interpreter exits without a close (a leaked mount or cgroup would outlive the process).
        self._release = weakref.finalize(self, _release, self._base, self._cgroup, self._size_capped)
        self._disk_full: str | None = None
        self._templates: dict[str, tuple[Path, tuple[FileRecord, ...]]] = {}
        self._root: Path | None = None
        self._env: dict[str, str] = {}
        self._profile: SandboxProfile = "default"
        self._user = DEFAULT_USER
        self._initial: tuple[FileRecord, ...] = ()
        self._commands: list[CommandRecord] = []
        self._shell: Session | None = None
        self._python: Session | None = None
        self._instruction: Path | None = None
        self._kernel: Path | None = None
        self._closed = False
        self._clock: SandboxClock | None = None
        self._network: EpisodeNetwork | None = None
        self._spare: tuple[str, Path] | None = None
        self._serial = itertools.count(1)
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._worker_error: BaseException | None = None
        self._services: EpisodeServices | None = None
        self._stop_hooks: list[Callable[[], None]] = []

    def add_stop_hook(self, hook: Callable[[], None]) -> None:
        """Has ``hook`` run whenever the episode's processes are frozen or stopped (before grading, at close).

        A toolkit with processes of its own outside the sandbox's sessions (the browser) ends them there, so
        that nothing of the agent's runs while the grader reads the world.
        """
        self._stop_hooks.append(hook)

    def _run_stop_hooks(self) -> None:
        for hook in self._stop_hooks:
            hook()

    @property
    def cgroup(self) -> Cgroup | None:
        """The cgroup bounding every process of this sandbox (``freeze``/``thaw`` it), or ``None`` without one."""
        return self._cgroup

    @property
    def size_capped(self) -> bool:
        """Whether the episode's files live on a ``disk_mb`` tmpfs (else their size is checked per command)."""
        return self._size_capped

    @property
    def root(self) -> Path:
        """Host path of the current episode root (``root/workspace`` is ``/workspace`` inside).

        Raises:
            SandboxError: Before the first ``reset``.
        """
        if self._root is None:
            raise SandboxError("the sandbox has no episode yet; call Sandbox.reset(environment) first")
        return self._root

    @property
    def host_dir(self) -> Path:
        """Host folder holding everything this sandbox created (seed templates and the episode root)."""
        return self._base

    @property
    def profile(self) -> SandboxProfile:
        """The current episode's sandbox profile (``default`` before the first ``reset``)."""
        return self._profile

    @property
    def user(self) -> str:
        """The current episode's account name (``EnvironmentSpec.user``; ``user`` before the first ``reset``)."""
        return self._user

    @property
    def commands(self) -> tuple[CommandRecord, ...]:
        """Every command and cell run this episode, in order."""
        return tuple(self._commands)

    @property
    def services(self) -> EpisodeServices | None:
        """The current episode's emulated web services (``reset(services=...)``), or ``None``."""
        return self._services

    @property
    def initial_files(self) -> tuple[FileRecord, ...]:
        """Snapshot of the episode root right after ``reset``."""
        return self._initial

    def reset(self, environment: EnvironmentSpec | None = None, *, instruction: str | None = None,
              services: Sequence[str] = ()) -> None:
        """Starts a fresh episode: kills all sessions, copies the (cached) seed tree, starts the shell.

        Args:
            environment: The episode's seed files, variables and profile.
            instruction: The case's instruction: under the ``oas`` profile it is ``/instruction/task.md``
                (read-only), as OAS's runtime had it; ``None`` leaves ``/instruction`` out.
            services: Emulated web services the episode needs (``toolemu.services``): they start in a network
                namespace of their own that the shell and interpreter join (``service_link``); without them,
                the placeholder network (``SandboxConfig.service_placeholders``) where asked.

        Raises:
            SandboxError: When the sandbox is closed or its root cannot be created; ``ServiceError`` when the
                services cannot start (not root, sandbox disabled, a service failed).
            CaseError: When a seed file (or a service file) is invalid.
        """
        if self._closed:
            raise SandboxError("the sandbox is closed; create a new Sandbox")
        environment = environment or EnvironmentSpec()
        self._raise_worker_error()
        key, template, initial = self._template(environment)
        # Reaping the old processes, deleting the old root and copying the next one happen on a worker thread:
        # on some disks a directory removal alone costs milliseconds.
        for reaper in self._stop_sessions():
            self._submit(reaper.wait)
        old_services, self._services = self._services, None
        if old_services is not None:
            self._submit(old_services.close)
        if services:
            self._services = start_services(services, environment, sandboxed=not self.config.allow_unsandboxed,
                                            background=self._submit)
        with self._lock:
            spare = self._spare if self._spare is not None and self._spare[0] == key else None
            if spare is not None:
                self._spare = None
        old, self._root = self._root, None
        if spare is not None:
            root = spare[1]
        else:
            root = self._fresh_path()
            try:
                copy_root(template, root)
            except OSError as e:
                raise SandboxError(f"could not create an episode root from {template}: {e}") from e
        self._root = root
        if old is not None:
            self._submit(lambda: remove_tree(old))
        self._submit(lambda: self._prepare_spare(key, template))
        self._env = dict(environment.env)
        self._disk_full = None
        self._profile = environment.sandbox_profile
        self._user = environment.user
        self._initial = initial
        self._commands = []
        self._instruction = None
        if instruction is not None and self._profile == "oas" and not self.config.allow_unsandboxed:
            self._instruction = write_instruction(self._base, instruction, self._host_uid)
        self._start_clock(root)
        network: Callable[[], int | None] | None
        if self._services is not None:
            self._close_network()  # the services serve the company's ports in their own namespace
            network = self._services_network
        else:
            self._start_network()
            network = self._network.fd if self._network is not None else None
        self._shell = self._session("shell", ["/bin/bash", "--noprofile", "--norc"], _encode_shell,
                                    network=network)
        self._shell.start()

    def run_shell(self, command: str, *, tool: str = "TerminalExecute") -> CommandOutcome:
        """Runs a command in the episode's persistent bash session (cwd, env and jobs persist).

        Raises:
            ValueError: When ``command`` contains a NUL byte (toolkits reject that as a bad argument first).
            SandboxError: When the session cannot start.
        """
        if "\x00" in command:
            raise ValueError("command contains a NUL byte")
        if self._disk_full is not None:
            return self._refused(command, tool)
        if self._shell is None:
            raise SandboxError("the sandbox has no shell yet; call Sandbox.reset(environment) first")
        return self._run(self._shell, command, tool)

    def run_python(self, code: str, *, tool: str = "PythonExecute") -> CommandOutcome:
        """Runs a cell in the episode's persistent Python interpreter (globals persist).

        Raises:
            SandboxError: When the interpreter cannot start.
        """
        if self._disk_full is not None:
            return self._refused(code, tool)
        if self._shell is None:
            raise SandboxError("the sandbox has no episode yet; call Sandbox.reset(environment) first")
        restarted = self._python is not None and self._python.exited
        if self._python is None:
            # The interpreter shares the shell's network, as one container would: a server the agent started in
            # the shell answers its cells on loopback (joining needs root; elsewhere it has its own network).
            # It also runs in the shell's user and pid namespaces, as OpenHands' Jupyter kernel did: `ps` in the
            # shell lists it and `kill` ends it (the next cell then starts a fresh one).
            network = self.network_fd if os.geteuid() == 0 else None
            join = None if self.config.allow_unsandboxed else lambda: shell_namespaces(self._shell)
            self._python = self._session("python", [], _encode_python, interrupt=signal.SIGINT,
                                         network=network, join=join, program_of=self._python_argv)
            self._python.start()
        return self._run(self._python, code, tool, note=RESTARTED if restarted else "")

    def _python_argv(self) -> list[str]:
        if self._kernel is None:
            self._kernel = write_drivers(self._base / "kernel", KERNEL_DRIVERS)
        if self.config.allow_unsandboxed:
            return kernel_argv(self.config.python, str(self._kernel), None)
        return kernel_argv(self.config.python, KERNEL_MOUNT, self._shell)

    def file_op(self, request: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """Runs one file operation inside the sandbox as a fresh process (see ``drivers/file_ops.py``).

        Returns:
            The driver's answer: ``{"ok": true, "result": {...}}`` or ``{"ok": false, "error": "..."}``.

        Raises:
            SandboxError: When the helper process fails or answers with something other than JSON.
        """
        if self._disk_full is not None:
            return {"ok": False, "error": self._disk_full}
        argv = self._argv([self.config.python, "-I", "-c", driver_source("file_ops")])
        if self.config.allow_unsandboxed and isinstance(request.get("path"), str):
            request = {**request, "path": str(sandbox_to_host(self.root, str(request["path"])))}
        try:
            done = subprocess.run(
                argv,
                input=json.dumps(request).encode(),
                capture_output=True,
                timeout=self.config.command_timeout_s,
                check=False,
                cwd=str(self.root / "workspace") if self.config.allow_unsandboxed else None,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxError(f"sandbox file operation {request.get('op')!r} failed: {e}") from e
        self._check_disk()
        self._sweep_clock()
        try:
            answer = json.loads(done.stdout)
        except json.JSONDecodeError as e:
            err = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise SandboxError(
                f"sandbox file helper exited {done.returncode} without an answer: {err!r}"
            ) from e
        if not isinstance(answer, dict):
            raise SandboxError(f"sandbox file helper answered {answer!r}; expected a JSON object")
        return answer

    def log_command(self, record: CommandRecord) -> None:
        """Appends a record to the command log (toolkits log file operations this way)."""
        self._commands.append(record)

    def snapshot_files(self) -> tuple[FileRecord, ...]:
        """Returns records of the files under the episode's writable folders (bounded per the config).

        Raises:
            SandboxError: Before ``reset``, or when the root cannot be read.
        """
        return self._snapshot(self.root).files

    def final_state(self, world: GraderWorld | None = None) -> FinalState:
        """Returns the episode's ``FinalState``: files now and after reset, and the command log.

        Args:
            world: The grader's copy to snapshot (its placeholders for special files left out); ``None``
                snapshots the live root: stop the episode's processes first (``stop``).

        What the snapshot's bounds (or the copy's) left out is said in ``FinalState.snapshot_overflow``.
        """
        if world is None:
            snap = self._snapshot(self.root)
            return FinalState(files=snap.files, initial_files=self._initial, commands=self.commands,
                              snapshot_overflow=snap.overflow)
        snap = self._snapshot(world.root)
        # A file the copy truncated (a byte bound) has no text or members: its hole would read as the agent's.
        cut = world.report.truncated
        files = tuple(r.model_copy(update={"content": None, "members": ()}) if r.path in cut else r
                      for r in snap.files if r.path not in world.report.placeholders)
        notes = [n for n in (world.report.overflow_note(), snap.overflow) if n]
        return FinalState(files=files, initial_files=self._initial, commands=self.commands,
                          snapshot_overflow="; ".join(notes) or None)

    def freeze(self) -> None:
        """Stops (SIGSTOP) every process of the episode, in every session's pid namespace, until ``thaw``.

        A process that will not stop (or a session without a namespace: unsandboxed) has its session killed
        instead, so that in every case nothing of the agent's runs while the grader copies the world.
        """
        self._run_stop_hooks()
        inits = [s.namespace_init() for s in (self._shell, self._python) if s is not None]
        sandboxed = [pid for pid in inits if pid is not None]
        if len(sandboxed) < len(inits):
            self.stop()
            return
        try:
            self._frozen |= freeze_namespaces(sandboxed)
        except TimeoutError as e:
            logger.warning("sandbox freeze failed (%s); killing the episode's processes instead", e)
            self.stop()

    def thaw(self) -> None:
        """Lets the processes ``freeze`` stopped run again."""
        frozen, self._frozen = self._frozen, set()
        thaw_namespaces(frozen)

    @contextmanager
    def grader_world(self, max_bytes: int = 256 * 1024 * 1024) -> Iterator[GraderWorld]:
        """Copies the (frozen) episode root into a folder only the grader's uid can enter; removed on exit.

        Args:
            max_bytes: File content copied in all; past it, holes stand for content (recorded as traps).

        Raises:
            SandboxError: Before ``reset``, or when the copy fails.
        """
        root = self.root
        # Beside the sandbox's folder, not in it: that one is the agent uid's own (0700).
        base = Path(tempfile.mkdtemp(prefix="toolemu-grader-", dir=self._base.parent))
        try:
            base.chmod(0o700)
            uid = self._grader_uid
            if uid is not None:
                os.chown(base, uid, uid)
            world_root = base / "world"
            world_root.mkdir(mode=0o755)
            if uid is not None:
                os.chown(world_root, uid, uid)
            cfg = self.config
            try:
                # Folders count as entries here, not in the snapshot: the bound is the snapshot's, twice over.
                report = copy_world(root, world_root, max_files=2 * cfg.snapshot_max_files + 2, max_bytes=max_bytes,
                                    max_file_bytes=cfg.snapshot_max_hash_bytes, uid=uid)
            except OSError as e:
                raise SandboxError(f"could not copy the episode root {root} for the grader: {e}") from e
            yield GraderWorld(root=world_root, base=base, uid=uid, report=report, user=self._user,
                              max_file_bytes=cfg.snapshot_max_hash_bytes)
        finally:
            remove_tree(base)

    def network_fd(self) -> int | None:
        """Opens the network namespace of the episode's shell, where servers the agent started listen.

        Returns an fd the caller closes (pass it to ``run_check(netns_fd=...)``), or ``None`` when no shell runs
        (none was started, or it ended: then nothing it started is listening either) or the sandbox is off.
        With services the namespace is theirs (the shell joined it), open as long as they serve.
        """
        if self.config.allow_unsandboxed:
            return None
        if self._services is not None:
            return self._services.network_fd()
        if self._shell is None:
            return None
        return self._shell.namespace_fd("net")

    @property
    def clock(self) -> SandboxClock | None:
        """The episode clock (``SandboxConfig.clock_start``), or ``None`` on the real clock."""
        return self._clock

    @property
    def network(self) -> EpisodeNetwork | None:
        """The episode's own network with the placeholder listener (``SandboxConfig.service_placeholders``)."""
        return self._network

    def _services_network(self) -> int:
        """The services' network namespace for a session to join; their end is an infrastructure failure."""
        fd = self._services.network_fd() if self._services is not None else None
        if fd is None:
            raise ServiceError("the episode's emulated services are gone; the episode cannot go on")
        return fd

    def stop(self) -> None:
        """Kills the episode's processes (shell, interpreter, anything they left running) and keeps its files.

        Called before the final snapshot so a background job cannot change the state while checks read it.
        """
        self._run_stop_hooks()
        for reaper in self._stop_sessions():
            reaper.wait()

    def close(self) -> None:
        """Kills every process and deletes every file this sandbox made. Safe to call twice."""
        self._run_stop_hooks()
        self.thaw()
        for reaper in self._stop_sessions():
            reaper.wait()
        if self._worker is not None:
            self._jobs.put(None)
            self._worker.join()
            self._worker = None
        self._closed = True
        services, self._services = self._services, None
        if services is not None:
            services.close()
        self._root = None
        self._spare = None
        if self._network is not None:
            self._network.close()
            self._network = None
        if self._clock is not None:
            self._clock.close()
            self._clock = None
        self._release()
        self._raise_worker_error()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, session: Session, text: str, tool: str, *, note: str = "") -> CommandOutcome:
        cfg = self.config
        got: SessionOutput = session.run(
            text, timeout_s=cfg.command_timeout_s, max_output_chars=cfg.max_output_chars
        )
        output = note + got.output
        self._sweep_clock()
        if self._check_disk():
            output += f"\n{self._disk_full}"
        if got.timed_out:
            limit = f"{cfg.command_timeout_s:g} s"
            output += f"\n[toolemu: timed out after {limit}; the processes it started were killed]"
        if got.session_ended:
            output += f"\n[toolemu: the {session.name} session ended; the next call starts a fresh one]"
        self._commands.append(CommandRecord(tool=tool, command=text, exit_code=got.exit_code, output=output))
        return CommandOutcome(output, got.exit_code, got.timed_out, got.truncated, got.session_ended)

    def _refused(self, text: str, tool: str) -> CommandOutcome:
        output = self._disk_full or ""
        self._commands.append(CommandRecord(tool=tool, command=text, exit_code=None, output=output))
        return CommandOutcome(output, None, False, False, True)

    def _session(
        self, name: str, program: list[str], encode: Encoder, *, interrupt: int | None = None,
        network: Callable[[], int | None] | None = None, join: Callable[[], Namespaces] | None = None,
        program_of: Callable[[], list[str]] | None = None,
    ) -> Session:
        if self.config.allow_unsandboxed:
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(self.root / "home" / self._user),
                **self._env,
                **(self._clock.env(inside=False) if self._clock is not None else {}),
            }
            cwd: str | None = str(self.root / "workspace")
        else:
            env, cwd = None, None
        return Session(
            lambda info_fd, spaces: self._argv(program_of() if program_of is not None else program,
                                               info_fd=info_fd, spaces=spaces),
            encode,
            name=name,
            start_timeout_s=self.config.start_timeout_s,
            interrupt=interrupt,
            sandboxed=not self.config.allow_unsandboxed,
            cwd=cwd,
            env=env,
            network=network,
            join=join,
        )

    def _argv(self, program: list[str], *, info_fd: int | None = None, spaces: Namespaces | None = None) -> list[str]:
        """Wraps ``program`` in the limits and (unless disabled) bwrap."""
        cfg = self.config
        limits = (
            f"ulimit -HS -c 0 -v {cfg.memory_mb * 1024} -u {cfg.max_processes} -f {cfg.max_file_mb * 1024} "
            f'&& ulimit -S -t {cfg.cpu_seconds} && ulimit -H -t {cfg.cpu_seconds + 1} && exec "$@"'
        )
        wrapped = ["/bin/bash", "-c", limits, "toolemu-limits", *program]
        if cfg.allow_unsandboxed:
            return wrapped
        spaces = spaces or Namespaces()
        join = None
        if spaces.user is not None and spaces.pid is not None:
            join = JoinedNamespaces(spaces.user, spaces.pid, spaces.nested_user)
        clock = self._clock
        binds: list[tuple[Path, str]] = list(clock.binds()) if clock is not None else []
        if self._kernel is not None:
            binds.append((self._kernel, KERNEL_MOUNT))
        if self._instruction is not None:
            binds.append((self._instruction, INSTRUCTION_MOUNT))
        prefix = bwrap_argv(
            self.root,
            env=self._env | (clock.env() if clock is not None else {}),
            extra_ro_binds=binds,
            cwd=oas_image.OUTPUTS if self._profile == "oas" else "/workspace",
            bwrap=cfg.bwrap_path,
            host_uid=self._host_uid,
            info_fd=info_fd,
            profile=self._profile,
            netns_fd=spaces.net,
            tmpfs_mb=cfg.tmpfs_mb,
            user=self._user,
            join=join,
        )
        return self._cgroup.wrap(prefix + wrapped) if self._cgroup is not None else prefix + wrapped

    def _start_clock(self, root: Path) -> None:
        """Starts the episode clock at ``clock_start`` and gives the fresh root's files that time."""
        if self.config.clock_start is not None:
            self._clock = self._clock or SandboxClock(self._base.parent)
            self._clock.start(self.config.clock_start)
            self._clock.stamp_all(root)

    def _sweep_clock(self) -> None:
        if self._clock is not None and self._root is not None:
            self._clock.sweep(self._root)

    def _start_network(self) -> None:
        self._close_network()
        self._network = episode_network(self.config)

    def _close_network(self) -> None:
        if self._network is not None:
            self._network.close()
            self._network = None

    def _private_base(self) -> bool:
        """Makes the base folder private: a size-capped ``nosuid,nodev`` tmpfs as root, else mode 0700.

        Returns whether the tmpfs is mounted (else ``_check_disk`` measures the root after each command).
        """
        cfg = self.config
        why = "the sandbox is disabled" if cfg.allow_unsandboxed else mount_private_tmpfs(
            self._base, size_mb=cfg.disk_mb, max_files=cfg.disk_max_files, uid=self._host_uid)
        if why is None:
            return True
        logger.info("sandbox files not on a size-capped tmpfs (%s): their size is checked after each command", why)
        if self._host_uid is not None:
            os.chown(self._base, self._host_uid, self._host_uid)
        self._base.chmod(0o700)
        return False

    def _check_disk(self) -> bool:
        """Without the tmpfs: ends the episode's sessions once its files pass ``disk_mb``; returns whether so."""
        if self._size_capped or self._root is None or self._disk_full is not None:
            return False
        limit = self.config.disk_mb * 1024 * 1024
        used = tree_usage(self._root, limit_bytes=limit)
        if used <= limit:
            return False
        for reaper in self._stop_sessions():
            reaper.wait()
        self._disk_full = (
            f"[toolemu: the episode's files passed the disk cap of {self.config.disk_mb} MiB "
            "(SandboxConfig.disk_mb); its processes were stopped and no further command runs this episode]"
        )
        logger.warning("sandbox %s: %s", self._base, self._disk_full)
        return True

    def _fresh_path(self) -> Path:
        return self._base / f"root-{next(self._serial)}"

    def _prepare_spare(self, key: str, template: Path) -> None:
        with self._lock:
            if self._spare is not None and self._spare[0] == key:
                return
            stale, self._spare = self._spare, None
            path = self._fresh_path()
        if stale is not None:
            remove_tree(stale[1])
        copy_root(template, path)
        with self._lock:
            self._spare = (key, path)

    def _submit(self, job: Callable[[], None]) -> None:
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="toolemu-sandbox-worker", daemon=True)
            self._worker.start()
        self._jobs.put(job)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except OSError as e:
                # Reported by the next reset or close (a background failure must not pass silently).
                self._worker_error = e

    def _raise_worker_error(self) -> None:
        error, self._worker_error = self._worker_error, None
        if error is not None:
            raise SandboxError(f"sandbox background cleanup failed: {error}") from error

    def _template(self, environment: EnvironmentSpec) -> tuple[str, Path, tuple[FileRecord, ...]]:
        key = hashlib.sha256(environment.model_dump_json().encode()).hexdigest()[:16]
        if key not in self._templates:
            path = self._base / f"template-{key}"
            remove_tree(path)
            try:
                build_template(path, environment, self._host_uid)
            except OSError as e:
                raise SandboxError(f"could not build the seed tree {path}: {e}") from e
            self._templates[key] = (path, self._snapshot(path).files)
        return (key, *self._templates[key])

    def _snapshot(self, root: Path) -> Snapshot:
        return snapshot_root(root, self.config)

    def _stop_sessions(self) -> list[Reaper]:
        # SIGKILL ends stopped processes too; the set is cleared so a later thaw never signals a reused pid.
        self._frozen = set()
        reapers = [session.kill() for session in (self._shell, self._python) if session is not None]
        self._shell = self._python = None
        return reapers


def _release(base: Path, cgroup: Cgroup | None, mounted: bool) -> None:
    """Kills what is left in the cgroup and removes it, then unmounts the tmpfs and deletes ``base``."""
    if cgroup is not None:
        cgroup.close()
    if mounted:
        unmount(base)
        base.rmdir()
    else:
        remove_tree(base)


def _check_traversable(folder: Path) -> None:
    """Raises unless every folder from ``/`` to ``folder`` lets other users pass (the sandbox runs as one)."""
    for part in (folder, *folder.parents):
        if not os.stat(part).st_mode & 0o001:
            raise SandboxError(
                f"sandbox workdir {folder} is unusable: {part} is closed to other users (mode "
                f"{oct(os.stat(part).st_mode & 0o777)}), and the sandbox runs as an unprivileged user. "
                "Pass a "
                f"workdir such as {tempfile.gettempdir()} or run `chmod o+x {part}`."
            )


def _encode_shell(command: str, nonce: str) -> bytes:
    # `eval` of a quoted string keeps the outer line parseable whatever the command is; a leading space stops
    # a command beginning with `-` from being read as an option of eval; stdin is /dev/null so the command
    # cannot swallow later requests.
    marker = marker_for(nonce)
    body = f"eval {shlex.quote(' ' + command)} </dev/null" if command else ":"
    return f"{body}\nprintf '\\n{marker}:%d\\n' \"$?\"\n".encode()


def _encode_python(code: str, nonce: str) -> bytes:
    data = code.encode("utf-8", "surrogateescape")
    return f"{nonce} {len(data)}\n".encode() + data
