"""Until the emulated services run: OAS's service ports answer in the episode's network, with a clear 503.

In OpenAgentSafety the agent's runtime shared the host network with the company's services: ownCloud, GitLab and
Plane at ``the-agent-company.com`` (``toolemu.services.base.PORTS``), and RocketChat, the chat, on port 3000. An
``EpisodeNetwork`` is a network namespace of the episode's own (made by root, so the agent, root only inside its
user namespace, cannot reconfigure it) that the sandbox's shell, interpreter and checks join, with a listener on
those ports that answers every request ``503 service not emulated`` and records it as a gap
(``toolemu.services.base.GapLog``). A connection is refused by no port an agent would expect to be served; an
agent's server on a service port fails to bind, as it did in OAS. Port 3000 is held only when asked
(``SandboxConfig.oas_chat_port``, on for replays of OAS logs): agents start their own servers there, and OAS's
runtime refusing them was a quirk of its setup, reproduced where a replay must match its log, never for native
episodes by default. The listener is a few host threads that read at most ``MAX_REQUEST_BYTES`` of a request and
answer a fixed text; the server pool of ``toolemu.services`` takes over the service ports as they are emulated.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import selectors
import socket
import struct
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

from toolemu.core.errors import SandboxError
from toolemu.services.base import HOSTNAME, PORTS, Gap, GapLog
from toolemu.toolkits.sandbox.config import SandboxConfig

CHAT_PORT = 3000
"""RocketChat's port in OAS (held only with ``SandboxConfig.oas_chat_port``)."""
SERVICE_NAMES: dict[int, str] = {port: name for name, port in PORTS.items()}
"""OAS's service ports and the service each belonged to."""
MAX_REQUEST_BYTES = 8192
"""What the listener reads of a request before it answers."""
MAX_CONNECTIONS = 16
"""Connections answered at once; more are closed at once."""
REQUEST_TIMEOUT_S = 2.0
"""How long the listener waits for a request's first bytes."""
MAX_RECORDED = 1000
"""Requests recorded per episode; later ones are answered and only counted (``EpisodeNetwork.unrecorded``)."""
PLACEHOLDER_REASON = "service not emulated (placeholder listener)"
"""The ``Gap.reason`` of every request the listener answered."""

_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_T = TypeVar("_T")


def placeholder_ports(*, chat_port: bool) -> dict[int, str]:
    """The ports the listener holds: OAS's service ports, and RocketChat's when ``chat_port``.

    Examples:
        >>> sorted(placeholder_ports(chat_port=True))
        [3000, 8091, 8092, 8929]
    """
    ports = dict(SERVICE_NAMES)
    if chat_port:
        ports[CHAT_PORT] = "rocketchat"
    return ports


def episode_network(config: SandboxConfig) -> EpisodeNetwork | None:
    """A fresh episode network with the listener, when ``config.service_placeholders`` asks for one.

    Raises:
        SandboxError: The sandbox is disabled, or not running as root.
    """
    if not config.service_placeholders:
        return None
    if config.allow_unsandboxed:
        raise SandboxError("service_placeholders needs the sandbox (a network namespace); it is disabled "
                           "(allow_unsandboxed=True)")
    return EpisodeNetwork(placeholder_ports(chat_port=config.oas_chat_port))


def _in_thread(work: Callable[[], _T]) -> _T:
    """Runs ``work`` on a fresh thread (a namespace change there touches no other thread) and returns its result."""
    values: list[_T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            values.append(work())
        except BaseException as e:  # re-raised in the caller's thread
            errors.append(e)

    thread = threading.Thread(target=run, name="toolemu-episode-network", daemon=True)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return values[0]


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def _listen(port: int) -> list[socket.socket]:
    """Listening sockets on ``port`` for IPv4 and, where the namespace has it, IPv6 (any address)."""
    found = []
    v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    v4.bind(("0.0.0.0", port))
    v4.listen(64)
    found.append(v4)
    try:
        v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:
        return found
    try:
        v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        v6.bind(("::", port))
        v6.listen(64)
        found.append(v6)
    except OSError:
        v6.close()
    return found


class EpisodeNetwork:
    """A network namespace of the episode's own, with the placeholder listener on ``ports`` (see the module).

    Args:
        ports: Port -> service name to answer for.

    Raises:
        SandboxError: Not running as root, or the namespace or a listener cannot be made.
    """

    def __init__(self, ports: Mapping[int, str]) -> None:
        if os.geteuid() != 0:
            raise SandboxError("an episode network with OAS's service ports needs root (a network namespace of "
                               "our own); run as root, or leave SandboxConfig.service_placeholders off")
        self.ports = dict(ports)
        self.gaps = GapLog()
        self.unrecorded = 0
        """Requests answered past ``MAX_RECORDED``."""
        self._count = threading.Lock()

        def make() -> tuple[int, list[tuple[int, socket.socket]]]:
            if _libc.unshare(_CLONE_NEWNET) != 0:
                code = ctypes.get_errno()
                raise OSError(code, f"unshare(CLONE_NEWNET): {os.strerror(code)}")
            _loopback_up()
            fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                return fd, [(port, s) for port in sorted(self.ports) for s in _listen(port)]
            except BaseException:
                os.close(fd)
                raise

        try:
            made = _in_thread(make)
        except OSError as e:
            raise SandboxError(f"could not make the episode network: {e}") from e
        self._fd, listeners = made
        self._selector = selectors.DefaultSelector()
        for port, sock in listeners:
            sock.setblocking(False)
            self._selector.register(sock, selectors.EVENT_READ, port)
        self._wake_r, self._wake_w = os.pipe()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="toolemu-placeholder", daemon=True)
        self._thread.start()

    def fd(self) -> int:
        """A new fd of the namespace, for a session to join (the caller closes it)."""
        return os.dup(self._fd)

    def requests(self) -> tuple[Gap, ...]:
        """Every request the listener answered so far (``Gap.reason`` is ``PLACEHOLDER_REASON``)."""
        return self.gaps.snapshot()

    def close(self) -> None:
        """Stops the listener and releases the namespace (it ends once no process is left in it)."""
        if self._closed:
            return
        self._closed = True
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=5)
        for key in list(self._selector.get_map().values()):
            self._selector.unregister(key.fileobj)
            if isinstance(key.fileobj, socket.socket):
                key.fileobj.close()
        self._selector.close()
        for fd in (self._wake_r, self._wake_w, self._fd):
            os.close(fd)

    def _serve(self) -> None:
        while True:
            for key, _ in self._selector.select():
                if key.data is None:
                    return
                sock = key.fileobj
                if not isinstance(sock, socket.socket):
                    continue
                try:
                    conn, _ = sock.accept()
                except OSError:
                    continue
                if not self._slots.acquire(blocking=False):
                    conn.close()
                    continue
                threading.Thread(target=self._answer, args=(conn, key.data), daemon=True).start()

    def _answer(self, conn: socket.socket, port: int) -> None:
        try:
            with conn:
                conn.settimeout(REQUEST_TIMEOUT_S)
                data = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in data and len(data) < MAX_REQUEST_BYTES:
                        chunk = conn.recv(MAX_REQUEST_BYTES - len(data))
                        if not chunk:
                            break
                        data += chunk
                method, path = _request_line(data)
                name = self.ports.get(port, "service")
                with self._count:  # an agent's flood of requests stays bounded here
                    if len(self.gaps.gaps) < MAX_RECORDED:
                        self.gaps.record(name, method, path, PLACEHOLDER_REASON)
                    else:
                        self.unrecorded += 1
                body = (f"toolemu: {name} (OpenAgentSafety's service at {HOSTNAME}:{port}) is not emulated in this "
                        "episode; requests to it cannot succeed.\n").encode()
                head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
                with contextlib.suppress(OSError):
                    conn.sendall(head + body)
                    conn.shutdown(socket.SHUT_WR)
        finally:
            self._slots.release()


def _request_line(data: bytes) -> tuple[str, str]:
    """The request's method and path, bounded and printable (``?`` for what is not an HTTP request line).

    Examples:
        >>> _request_line(b"GET /remote.php/dav HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
        ('GET', '/remote.php/dav')
        >>> _request_line(b"\\x16\\x03\\x01")
        ('?', '?')
    """
    first = data.split(b"\r\n", 1)[0].decode("ascii", "replace").split(" ")
    if len(first) < 2 or not first[0].isalpha():
        return "?", "?"
    return first[0][:16], "".join(c if c.isprintable() else "?" for c in first[1][:300])
