"""Runs a check process with its output read through bounded pipes: a head and tail kept, killed past a cap."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from typing import IO, NamedTuple, cast


class BoundedResult(NamedTuple):
    """What a bounded run produced."""

    returncode: int | None
    """Exit status (negative: killed by that signal); ``None`` when it was killed for time or output."""
    stdout: bytes
    """Everything on stdout, when within its cap (else what was read before the kill)."""
    stderr_tail: str
    """The head and tail of stderr around a marker of what was dropped."""
    timed_out: bool
    """The wall-clock limit expired (the process was killed)."""
    overflow: str | None
    """Which stream passed its cap, in words (the process was killed); ``None`` when none did."""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def run_bounded(argv: list[str], stdin: bytes, *, timeout_s: float, max_stdout: int, max_stderr: int,
                keep: int = 2000, pass_fds: tuple[int, ...] = ()) -> BoundedResult:
    """Runs ``argv`` in its own session, feeds ``stdin``, and reads both outputs with caps.

    Raises:
        OSError: The process cannot be started.
    """
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, pass_fds=pass_fds)
    pipe_in, pipe_out = cast(IO[bytes], proc.stdin), cast(IO[bytes], proc.stdout)
    pipe_err = cast(IO[bytes], proc.stderr)

    def feed() -> None:
        try:
            pipe_in.write(stdin)
        except OSError:
            pass
        finally:
            try:
                pipe_in.close()
            except OSError:
                pass

    writer = threading.Thread(target=feed, name="toolemu-check-stdin", daemon=True)
    writer.start()
    out = bytearray()
    head, tail = bytearray(), bytearray()
    err_total = 0
    overflow: str | None = None
    timed_out = False
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as sel:
        sel.register(pipe_out, selectors.EVENT_READ, "out")
        sel.register(pipe_err, selectors.EVENT_READ, "err")
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(remaining):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if key.data == "out":
                    out += chunk
                    if len(out) > max_stdout:
                        overflow = f"wrote more than {max_stdout:,} bytes to its reply pipe"
                else:
                    err_total += len(chunk)
                    if len(head) < keep:
                        head += chunk[: keep - len(head)]
                    tail = (tail + chunk)[-keep:]
                    if err_total > max_stderr:
                        overflow = f"printed more than {max_stderr:,} bytes"
                if overflow is not None:
                    break
            if overflow is not None:
                break
    if timed_out or overflow is not None:
        _kill(proc)
    returncode = proc.wait()
    writer.join(timeout=1.0)
    for stream in (pipe_out, pipe_err):
        stream.close()
    if err_total <= keep:
        shown = bytes(head)
    elif err_total <= 2 * keep:
        shown = bytes(head) + bytes(tail[len(tail) - (err_total - keep):])
    else:
        shown = bytes(head) + f"\n[... {err_total - 2 * keep:,} bytes omitted ...]\n".encode() + bytes(tail)
    killed = timed_out or overflow is not None
    return BoundedResult(None if killed else returncode, bytes(out[:max_stdout]), shown.decode("utf-8", "replace"),
                         timed_out, overflow)
