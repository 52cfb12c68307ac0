"""A lean transport for plain-HTTP endpoints: each thread keeps its own keep-alive connection.

The ``openai`` client's default transport shares one connection pool between all threads. Each request and each
response close walks every connection in the pool under one lock, so at a few hundred calls in flight the pool
costs more CPU than the episode itself and throughput falls as concurrency rises. Local servers (vLLM, llama.cpp
server, Ollama, a gateway on the cluster) are reached over plain HTTP, where a connection per thread needs no pool
at all. The client above is unchanged: it builds the request, reads the response and maps the errors raised here
(``httpx`` timeouts and network errors) to ``openai`` errors as usual.

HTTPS endpoints, and any endpoint a proxy variable applies to, keep the default transport (see
:func:`lean_transport_applies`).
"""

from __future__ import annotations

import http.client
import threading
import urllib.request
from typing import Any

import httpx2

_RECONNECT_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
"""What a kept-alive connection raises when the server closed it while idle: sent again once on a new one."""


def lean_transport_applies(base_url: str) -> bool:
    """Whether ``base_url`` is a plain-HTTP endpoint reached directly (no proxy variable applies to its host).

    Examples:
        >>> lean_transport_applies("https://api.openai.com/v1")
        False
    """
    url = httpx2.URL(base_url)
    if url.scheme != "http" or not url.host:
        return False
    proxies = urllib.request.getproxies()
    if not (proxies.get("http") or proxies.get("all")):
        return True
    return bool(urllib.request.proxy_bypass(url.host))


def _seconds(timeouts: dict[str, Any], key: str) -> float | None:
    value = timeouts.get(key)
    return float(value) if value is not None else None


class ThreadConnectionTransport(httpx2.BaseTransport):
    """Sends each request on the calling thread's own keep-alive connection (``http.client``) to its host.

    At most ``max_in_flight`` requests are sent at once (the others wait, up to the request's pool timeout). A
    connection the server closed while idle is replaced and the request sent again once; any other failure is
    raised as the ``httpx`` error the default transport would raise (``ConnectTimeout``, ``ReadTimeout``,
    ``ConnectError``, ``ReadError``, ``RemoteProtocolError``), so callers see the same errors either way.
    """

    def __init__(self, max_in_flight: int) -> None:
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPConnection] = set()
        self._closed = False

    def _connection(self, host: str, port: int) -> tuple[http.client.HTTPConnection, bool]:
        """Returns this thread's connection to ``host:port`` and whether it was used before."""
        conns: dict[tuple[str, int], http.client.HTTPConnection] | None = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        conn = conns.get((host, port))
        if conn is not None:
            return conn, True
        if self._closed:
            raise httpx2.ConnectError("the transport is closed")
        conn = conns[(host, port)] = http.client.HTTPConnection(host, port)
        with self._lock:
            self._open.add(conn)
        return conn, False

    def _drop(self, host: str, port: int) -> None:
        conn = self._local.conns.pop((host, port), None)
        if conn is not None:
            conn.close()
            with self._lock:
                self._open.discard(conn)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        host, port = url.host, url.port or 80
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        body = request.read()
        target = url.raw_path.decode("ascii")
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        if not self._slots.acquire(timeout=_seconds(timeouts, "pool")):
            raise httpx2.PoolTimeout("no free connection slot within the pool timeout", request=request)
        try:
            return self._send(request, host, port, target, headers, body, timeouts)
        finally:
            self._slots.release()

    def _send(
        self,
        request: httpx2.Request,
        host: str,
        port: int,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        timeouts: dict[str, Any],
    ) -> httpx2.Response:
        while True:
            conn, reused = self._connection(host, port)
            try:
                if conn.sock is None:
                    conn.timeout = _seconds(timeouts, "connect")
                    conn.connect()
                conn.sock.settimeout(_seconds(timeouts, "read"))
                conn.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    conn.putheader(name, value)
                conn.endheaders(body or None)
                response = conn.getresponse()
                content = response.read()
            except _RECONNECT_ERRORS as err:
                self._drop(host, port)
                if reused:
                    continue  # the server closed the idle connection: once more on a new one
                raise httpx2.ReadError(str(err) or type(err).__name__, request=request) from err
            except TimeoutError as err:
                connected = conn.sock is not None
                self._drop(host, port)
                timeout = httpx2.ReadTimeout if connected else httpx2.ConnectTimeout
                raise timeout(str(err) or "timed out", request=request) from err
            except http.client.HTTPException as err:  # a malformed status line or headers, a body cut short
                self._drop(host, port)
                raise httpx2.RemoteProtocolError(str(err) or type(err).__name__, request=request) from err
            except OSError as err:
                connected = conn.sock is not None
                self._drop(host, port)
                failure = httpx2.ReadError if connected else httpx2.ConnectError
                raise failure(str(err) or type(err).__name__, request=request) from err
            if response.will_close:
                self._drop(host, port)
            return httpx2.Response(
                response.status,
                headers=response.getheaders(),
                stream=httpx2.ByteStream(content),
                request=request,
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason.encode("latin-1")},
            )

    def close(self) -> None:
        """Closes every connection any thread opened; later requests fail with ``ConnectError``."""
        with self._lock:
            self._closed = True
            conns, self._open = self._open, set()
        for conn in conns:
            try:
                conn.close()
            except OSError:
                pass


__all__ = ["ThreadConnectionTransport", "lean_transport_applies"]
