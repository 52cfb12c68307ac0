"""A persistent process (bash or Python) inside the sandbox that runs one framed request at a time.

Each request ends with a marker line carrying a fresh random nonce and the exit status; output is bounded,
and a request that outlives its wall-clock limit has the processes it started killed.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from toolemu.core.errors import SandboxError
from toolemu.toolkits.sandbox._procfs import children, descendants, is_dying, kill_group, last_pid, send_signal

logger = logging.getLogger(__name__)

Encoder = Callable[[str, str], bytes]
"""Turns (request text, nonce) into the bytes written to the session's stdin."""


class Namespaces(NamedTuple):
    """Open fds of namespaces a session joins at start (closed once it is spawned); ``None``: a new one."""

    net: int | None = None
    """A network namespace."""
    user: int | None = None
    """A user namespace (with ``pid``: the session runs inside another session's sandbox)."""
    pid: int | None = None
    """A pid namespace."""
    nested_user: int | None = None
    """A user namespace inside ``user`` that the session ends up in (bwrap nests one for a non-root sandbox)."""

    def fds(self) -> tuple[int, ...]:
        """The open fds."""
        return tuple(fd for fd in self if fd is not None)


ArgvBuilder = Callable[[int | None, Namespaces], list[str]]
"""Builds the command line; given a file descriptor, a bwrap command line reports its child pid on it."""

_GRACE_S = 5.0
"""How long a timed-out request may take to unwind after its interrupt before the session is restarted (and
loses its state); generous, so that a loaded machine does not turn an interrupt into a restart."""


class SessionOutput(NamedTuple):
    """What one request produced."""

    output: str
    """Combined stdout and stderr, bounded (a marker shows where output was cut)."""
    exit_code: int | None
    """Exit status; ``None`` when the request timed out or the session died."""
    timed_out: bool
    """Whether the wall-clock limit expired."""
    truncated: bool
    """Whether output was cut."""
    session_ended: bool
    """Whether the session process is gone (the next request starts a fresh one)."""


def marker_for(nonce: str) -> str:
    """Returns the end-of-request marker prefix for ``nonce``."""
    return f"__TOOLEMU_{nonce}__"


class _Capture:
    """Bounded output buffer: keeps a head and a tail and counts what was dropped between them."""

    def __init__(self, limit: int, marker: bytes) -> None:
        self.head_limit = limit * 2 // 3
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.pattern = re.compile(b"\n" + re.escape(marker) + rb":(-?\d+)\n")
        self.slack = len(marker) + 32

    def feed(self, data: bytes) -> tuple[int | None, bytes]:
        """Adds data; returns (exit status, bytes after the marker) once the marker is seen."""
        self.tail += data
        if self.dropped == 0 and len(self.head) < self.head_limit:
            take = min(self.head_limit - len(self.head), len(self.tail))
            self.head += self.tail[:take]
            del self.tail[:take]
        view = self.head + self.tail if self.dropped == 0 else self.tail
        start = max(0, len(view) - len(data) - self.slack)
        found = self.pattern.search(view, start)
        if found is not None:
            rest = bytes(view[found.end() :])
            if self.dropped == 0:
                self.head, self.tail = bytearray(view[: found.start()]), bytearray()
            else:
                self.tail = bytearray(view[: found.start()])
            return int(found.group(1)), rest
        excess = len(self.tail) - (self.tail_limit + self.slack)
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess
        return None, b""

    def text(self) -> tuple[str, bool]:
        """Returns the captured text and whether it was cut."""
        tail = bytes(self.tail)
        if self.dropped == 0:
            return (bytes(self.head) + tail).decode("utf-8", "replace"), False
        if len(tail) > self.tail_limit:
            self.dropped += len(tail) - self.tail_limit
            tail = tail[len(tail) - self.tail_limit :]
        cut = f"\n[... output truncated: {self.dropped} bytes omitted ...]\n"
        return bytes(self.head).decode("utf-8", "replace") + cut + tail.decode("utf-8", "replace"), True


class Session:
    """One long-lived process reading framed requests on stdin and answering on stdout (stderr merged).

    Args:
        argv: Builds the command line (a bwrap prefix plus the program) for an info file descriptor.
        encode: Builds the bytes of one request from (text, nonce).
        name: Label for errors and logs (``shell``, ``python``).
        start_timeout_s: Limit for the process to answer its first (empty) request.
        interrupt: Signal sent to the main process on timeout before its new children are killed
            (``SIGINT`` lets Python unwind a cell); ``None`` sends none.
        sandboxed: Whether ``argv`` runs bwrap (it then reports its pid-namespace init on the info fd).
        cwd: Host working directory (unsandboxed mode only).
        env: Host environment (unsandboxed mode only).
        network: Opens a network namespace fd for the session to join at each start (``None`` from it, or no
            ``network``: a new, empty network); the fd is closed once the process is spawned.
        join: Opens the namespaces of another session to start in at each start (``Namespaces`` with ``user``
            and ``pid``, and ``net`` unless ``network`` gives one); its fds are closed once the process is
            spawned. The program is then what bwrap reports (no init of its own): killing it leaves that
            session running, and what it started is killed with it.
    """

    def __init__(
        self,
        argv: ArgvBuilder,
        encode: Encoder,
        *,
        name: str,
        start_timeout_s: float,
        interrupt: int | None = None,
        sandboxed: bool = True,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        network: Callable[[], int | None] | None = None,
        join: Callable[[], Namespaces] | None = None,
    ) -> None:
        self._argv = argv
        self._network = network
        self._join = join
        self._joined = False
        self._sandboxed = sandboxed
        self._encode = encode
        self.name = name
        self._start_timeout_s = start_timeout_s
        self._interrupt = interrupt
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending = b""
        self._ready_nonce: str | None = None
        self._main_pid: int | None = None
        self._info_r: int | None = None
        self._init_pid: int | None = None
        self._init_pidfd: int | None = None

    @property
    def alive(self) -> bool:
        """Whether the session process is running (and the process bwrap reported, once known, too)."""
        if self._proc is None or self._proc.poll() is not None:
            return False
        # bwrap may not have noticed yet that its child was killed (a `kill -9` the agent's shell just ran).
        return self._init_pid is None or not is_dying(self._init_pid)

    @property
    def exited(self) -> bool:
        """Whether the process ended on its own or was killed from outside, not by this session (between
        requests: the next request starts a fresh one)."""
        return self._proc is not None and not self.alive

    def start(self) -> None:
        """Spawns the process and queues its readiness probe without waiting for it.

        Raises:
            SandboxError: When the process cannot be spawned, or ``join`` cannot open the other session's
                namespaces.
        """
        info_r, info_w = os.pipe() if self._sandboxed else (None, None)
        try:
            spaces = self._namespaces()
        except BaseException:
            for fd in (info_r, info_w):
                if fd is not None:
                    os.close(fd)
            raise
        passed = tuple(fd for fd in (info_w, *spaces.fds()) if fd is not None)
        try:
            argv = self._argv(info_w, spaces)
        except BaseException:
            for fd in (info_r, *passed):
                if fd is not None:
                    os.close(fd)
            raise
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                bufsize=0,
                cwd=self._cwd,
                env=self._env,
                start_new_session=True,
                pass_fds=passed,
            )
        except OSError as e:
            if info_r is not None:
                os.close(info_r)
            raise SandboxError(f"could not start the sandbox {self.name} session ({argv[0]}): {e}") from e
        finally:
            for fd in passed:
                os.close(fd)
        self._joined = spaces.pid is not None
        self._info_r = info_r
        self._init_pid = self._init_pidfd = None
        self._pending = b""
        self._main_pid = None
        self._ready_nonce = secrets.token_hex(8)
        self._write(self._encode("", self._ready_nonce))

    def _namespaces(self) -> Namespaces:
        """Opens the namespaces to join; on failure closes what was opened."""
        if not self._sandboxed:
            return Namespaces()
        joined = self._join() if self._join is not None else Namespaces()
        try:
            net = self._network() if self._network is not None else None
        except BaseException:
            for fd in joined.fds():
                os.close(fd)
            raise
        if net is not None and joined.net is not None:
            os.close(joined.net)
        return joined._replace(net=net) if net is not None else joined

    def revive(self) -> None:
        """Starts the session again if its process is gone (the next request would do so anyway)."""
        if not self.alive:
            self.close()
            self.start()

    def wait_ready(self) -> None:
        """Waits until the process has answered its readiness probe (its sandbox is then fully set up).

        Raises:
            SandboxError: When it dies or does not answer within the start timeout.
        """
        if self._ready_nonce is not None:
            self._await_ready()

    def run(self, text: str, *, timeout_s: float, max_output_chars: int) -> SessionOutput:
        """Runs one request and waits for its marker, the timeout, or the end of the session.

        Raises:
            SandboxError: When the session cannot be started or dies before answering its readiness probe.
        """
        self.revive()
        self.wait_ready()
        nonce = secrets.token_hex(8)
        capture = _Capture(max_output_chars, marker_for(nonce).encode())
        pid_mark = last_pid()
        capture.feed(self._pending)
        self._pending = b""
        if not self._write(self._encode(text, nonce)):
            return self._ended(capture)
        deadline = time.monotonic() + timeout_s
        status, ended = self._read_until(capture, deadline)
        if status is not None:
            out, cut = capture.text()
            return SessionOutput(out, status, False, cut, False)
        if ended:
            return self._ended(capture)
        self._stop_request(pid_mark)
        status, ended = self._read_until(capture, time.monotonic() + _GRACE_S)
        if status is None and not ended:
            logger.info("sandbox %s session did not recover after a timeout; restarting it", self.name)
            self.close()
            ended = True
        out, cut = capture.text()
        return SessionOutput(out, None, True, cut, ended)

    def close(self) -> None:
        """Kills the session and waits until everything inside it is gone."""
        self.kill().wait()

    def kill(self) -> Reaper:
        """Kills the session and everything inside it without waiting; ``Reaper.wait`` waits for the end."""
        proc, self._proc = self._proc, None
        if proc is None:
            return Reaper(None, None)
        self._read_info(timeout_s=0.5 if proc.poll() is None else 0)
        pidfd, self._init_pidfd = self._init_pidfd, None
        if pidfd is not None and self._joined and self._init_pid is not None and not is_dying(self._init_pid):
            # No init of its own: what the program started would outlive it in the other session's namespace.
            # (A program killed from inside is not ours to clean up after: its children live on, re-parented.)
            for pid in descendants(self._init_pid):
                send_signal(pid, signal.SIGKILL)
        if pidfd is not None:
            # Killing the namespace's init kills every process inside; its parent (bwrap) then reaps it and
            # exits, so no zombie is left to the host's init.
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            kill_group(proc.pid)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        return Reaper(proc, pidfd)

    def namespace_init(self) -> int | None:
        """Host pid of the session's pid-namespace init (every process the session started lives below it);
        for a session that joined another's namespaces, its program (which lives in that namespace).

        ``None`` when the session is not running or runs unsandboxed (it then has no namespace of its own).
        """
        if not self._sandboxed or self._proc is None or self._proc.poll() is not None:
            return None
        if self._init_pid is None:
            self._read_info(timeout_s=self._start_timeout_s)
        return self._init_pid

    def namespace_fd(self, kind: str = "net") -> int | None:
        """Opens the session's ``kind`` namespace (``net``, ``user``) and returns the fd (the caller closes it).

        ``None`` when the session is not running. The namespace is opened through the init's pid, then the pidfd
        proves that process was still alive, so a reused pid can never hand over another process's namespace.
        """
        if self._proc is None or self._proc.poll() is not None:
            return None
        if self._init_pid is None:
            self._read_info(timeout_s=self._start_timeout_s)
        pid, pidfd = self._init_pid, self._init_pidfd
        if pid is None or pidfd is None:
            return None
        try:
            fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            signal.pidfd_send_signal(pidfd, 0)
        except (ProcessLookupError, OSError):
            os.close(fd)
            return None
        return fd

    def _write(self, data: bytes) -> bool:
        if self._proc is None or self._proc.stdin is None:
            return False
        try:
            self._proc.stdin.write(data)
        except (BrokenPipeError, OSError):
            return False
        return True

    def _read_info(self, timeout_s: float) -> None:
        """Reads bwrap's ``{"child-pid": N}`` and holds a pidfd on that init process."""
        fd, self._info_r = self._info_r, None
        if fd is None:
            return
        data = b""
        deadline = time.monotonic() + timeout_s
        try:
            while b"}" not in data:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(fd, 4096) if ready else b""
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        found = re.search(rb'"child-pid"\s*:\s*(\d+)', data)
        if found is None:
            return
        self._init_pid = int(found.group(1))
        try:
            self._init_pidfd = os.pidfd_open(self._init_pid)
        except ProcessLookupError:
            self._init_pidfd = None

    def _await_ready(self) -> None:
        nonce, self._ready_nonce = self._ready_nonce, None
        capture = _Capture(4000, marker_for(nonce or "").encode())
        status, ended = self._read_until(capture, time.monotonic() + self._start_timeout_s)
        self._read_info(timeout_s=0.5)
        if status is None:
            out, _ = capture.text()
            self.close()
            why = "exited" if ended else f"did not answer within {self._start_timeout_s:g} s"
            raise SandboxError(f"the sandbox {self.name} session {why} while starting: {out.strip()[:500]!r}")

    def _read_until(self, capture: _Capture, deadline: float) -> tuple[int | None, bool]:
        """Reads until the marker (status, False), EOF (None, True) or the deadline (None, False)."""
        if self._proc is None or self._proc.stdout is None:
            return None, True
        fd = self._proc.stdout.fileno()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, False
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            data = os.read(fd, 65536)
            if not data:
                return None, True
            status, rest = capture.feed(data)
            if status is not None:
                self._pending = rest
                return status, False

    def _ended(self, capture: _Capture) -> SessionOutput:
        code = None
        if self._proc is not None:
            try:
                code = self._proc.wait(timeout=_GRACE_S)
            except subprocess.TimeoutExpired:
                code = None
        self.close()
        out, cut = capture.text()
        return SessionOutput(out, code, False, cut, True)

    def _stop_request(self, pid_mark: int | None) -> None:
        """Interrupts the main process and kills the processes the timed-out request started.

        Pids grow until they wrap, so the request's processes are the main process's descendants with a pid
        above the last pid allocated when it began; after a wrap they are missed and the session restarts.
        """
        main = self._find_main_pid()
        if main is None:
            return
        if self._interrupt is not None:
            send_signal(main, self._interrupt)
        for _ in range(5):
            victims = [p for p in descendants(main) if pid_mark is None or p > pid_mark]
            if not victims:
                return
            for pid in victims:
                send_signal(pid, signal.SIGKILL)
            time.sleep(0.02)

    def main_pid(self) -> int | None:
        """Host pid of the program the session runs (``bash``, ``python3``), or ``None`` when it is not known."""
        if self._proc is None or self._proc.poll() is not None:
            return None
        if self._sandboxed and self._init_pid is None:
            self._read_info(timeout_s=self._start_timeout_s)
        return self._find_main_pid()

    def _find_main_pid(self) -> int | None:
        """Returns the host pid of the program the session runs (the child of the sandbox's init)."""
        if self._main_pid is None and self._proc is not None:
            if not self._sandboxed:
                self._main_pid = self._proc.pid
            elif self._joined:
                self._main_pid = self._init_pid
            elif self._init_pid is not None:
                kids = children(self._init_pid)
                self._main_pid = kids[0] if kids else None
        return self._main_pid


class Reaper:
    """Waits for a killed session to be completely gone."""

    def __init__(self, proc: subprocess.Popen[bytes] | None, init_pidfd: int | None) -> None:
        self._proc = proc
        self._pidfd = init_pidfd

    def wait(self) -> None:
        """Blocks until the sandbox's init has ended (hence every process inside) and bwrap is reaped."""
        if self._pidfd is not None:
            select.select([self._pidfd], [], [], 5.0)
            os.close(self._pidfd)
            self._pidfd = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=_GRACE_S)
            except subprocess.TimeoutExpired:
                kill_group(self._proc.pid)
                self._proc.wait()
            self._proc = None
