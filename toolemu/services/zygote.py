"""The services' fork server: one process with the service code imported that forks one child per episode.

``toolemu.services.pool`` starts it (``main``, given the fd of its socket) and sends it requests over a
``SOCK_SEQPACKET`` socket. Each child enters a network namespace (a new one, or the one whose fd came with the
request), copies the seed state of each service into the episode's folder, binds the services' ports there and
serves them with a threaded HTTP/1.1 WSGI server (``cheroot``) until the host closes the child's control socket.
The child answers ``gaps`` on that socket (``seal``: stop serving, answer the gaps, exit; ``discard``: delete the
state folder, exit) and sends its own pidfd
once it serves, so the host can kill it without racing a reused pid.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from toolemu.core.errors import ConfigError, NotRegisteredError
from toolemu.services import netns
from toolemu.services.base import GapLog, WSGIApp
from toolemu.services.registry import SERVICES, service_spec

MAX_MESSAGE = 64 * 1024
"""Largest message on the zygote's and the children's sockets."""
MAX_GAPS_SENT = 200
"""Distinct gaps a child reports (most frequent first); the rest are counted in ``dropped``."""
MAX_REQUEST_BYTES = 256 * 1024 * 1024
"""Largest request body a service accepts (413 past it): an agent cannot fill the host's disk through an upload."""
_THREADS = 4


def main(argv: list[str]) -> int:
    """Runs the fork server on the inherited socket ``argv[1]`` until the host closes it."""
    # It ends when the host closes the socket (or dies); no parent-death signal: that fires when the host's
    # *thread* that started it ends.
    sock = socket.socket(fileno=int(argv[1]))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children; the host holds their pidfds
    unavailable: dict[str, str] = {}
    for name in SERVICES:
        try:
            service_spec(name)
        except (ConfigError, NotRegisteredError) as e:
            unavailable[name] = str(e)
    _warm_up([n for n in SERVICES if n not in unavailable])
    sock.send(json.dumps({"ready": True, "unavailable": unavailable}).encode())
    while True:
        message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 2)
        if not message:
            return 0
        pid = os.fork()
        if pid == 0:
            sock.close()
            code = 1
            try:
                code = _child(json.loads(message), fds, unavailable)
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)


def _warm_up(names: list[str]) -> None:
    """Does once, before any fork, what every child would otherwise pay for: the imports an app and the server do
    lazily on first use (an app over an empty folder, a server bound and stopped). The fork server binds only in
    an empty network namespace of its own, never on the host's network."""
    from cheroot import wsgi

    try:
        netns.new_network()
    except OSError:
        return  # not root: the children cannot start either, and say so
    with tempfile.TemporaryDirectory(prefix="toolemu-warm-") as tmp:
        for name in names:
            folder = Path(tmp) / name
            folder.mkdir()
            try:
                app = service_spec(name).make_app(folder, GapLog())
            except Exception:  # a warm-up only: a child building this app reports the failure for real
                continue
            server = wsgi.Server(("0.0.0.0", 0), app, numthreads=1)
            server.error_log = _quiet  # type: ignore[method-assign]
            server.prepare()
            server.stop()


def _child(request: dict[str, Any], fds: list[int], unavailable: dict[str, str]) -> int:
    for number in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    control = socket.socket(fileno=fds[0])
    gaps = GapLog()
    try:
        netns.die_with_parent(signal.SIGKILL)
        servers = _start(request, fds[1] if len(fds) > 1 else None, unavailable, gaps)
    except Exception as e:  # the child's start is a boundary: the host raises ServiceError with this message
        control.send(json.dumps({"error": f"{type(e).__name__}: {e}"}).encode()[:MAX_MESSAGE])
        return 1
    pidfd = os.pidfd_open(os.getpid())
    socket.send_fds(control, [json.dumps({"ready": True, "pid": os.getpid()}).encode()], [pidfd])
    os.close(pidfd)
    for server in servers:
        threading.Thread(target=server.serve, daemon=True).start()
    while True:
        try:
            command = control.recv(MAX_MESSAGE)
        except OSError:
            return 0
        if not command:
            return 0
        op = json.loads(command).get("op")
        if op == "discard":  # the episode is over: its state goes, in this process rather than the host's
            shutil.rmtree(request["state"], ignore_errors=True)
            return 0
        if op == "seal":  # stop serving; once answered, the state folder is at rest and the child is gone
            for server in servers:
                server.stop()
            control.send(json.dumps(_gap_report(gaps)).encode())
            return 0
        if op == "gaps":
            control.send(json.dumps(_gap_report(gaps)).encode())


def _start(request: dict[str, Any], netns_fd: int | None, unavailable: dict[str, str], gaps: GapLog) -> list[Any]:
    from cheroot import wsgi  # imported here so the zygote's own start does not pay for it twice

    if netns_fd is not None:
        netns.join_network(netns_fd)
        os.close(netns_fd)
    else:
        netns.new_network()
    state = Path(request["state"])
    os.environ["HOME"] = str(state)
    folders: list[tuple[str, int, Path]] = []
    for entry in request["services"]:
        name, port, seed = entry["name"], int(entry["port"]), entry.get("seed")
        if name in unavailable:
            raise ConfigError(unavailable[name])
        folder = state / name
        if seed is not None and not folder.exists():
            shutil.copytree(seed, folder, symlinks=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        folders.append((name, port, folder))
    netns.not_dumpable()
    servers = []
    for name, port, folder in folders:
        app = service_spec(name).make_app(folder, gaps)
        server = wsgi.Server(("0.0.0.0", port), _guarded(app, name, gaps), numthreads=_THREADS, max=64,
                             server_name="toolemu", timeout=30, shutdown_timeout=2)
        server.max_request_body_size = MAX_REQUEST_BYTES
        server.error_log = _quiet  # type: ignore[method-assign]
        server.prepare()
        servers.append(server)
    return servers


def _guarded(app: WSGIApp, name: str, gaps: GapLog) -> WSGIApp:
    """Wraps ``app`` so that an exception is answered with a 500 and recorded as a gap (the emulator failed)."""

    def guarded(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
        try:
            body = app(environ, start_response)
        except Exception as e:  # the emulator's request boundary: a real server answers 500 and lives on
            gaps.record(name, method, path, f"emulator error: {type(e).__name__}: {e}")
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")], sys.exc_info())
            return [b"internal server error\n"]
        return _recorded(body, lambda e: gaps.record(name, method, path, f"emulator error: {type(e).__name__}: {e}"))

    return guarded


def _recorded(body: Iterable[bytes], record: Callable[[Exception], None]) -> Iterator[bytes]:
    """Yields ``body``; an exception while producing it is recorded, then ends the response (the server closes
    the connection: the headers are gone already)."""
    try:
        yield from body
    except Exception as e:
        record(e)
        raise
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()


def _quiet(msg: str = "", level: int = 20, traceback: bool = False) -> None:
    """cheroot's error log (a client that hung up, a bad request line): not the episode's business."""


def _gap_report(gaps: GapLog) -> dict[str, Any]:
    counts = Counter((g.service, g.method, g.path[:300], g.reason[:300]) for g in gaps.snapshot())
    top = counts.most_common(MAX_GAPS_SENT)
    return {"gaps": [[*key, n] for key, n in top], "dropped": sum(counts.values()) - sum(n for _, n in top)}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
