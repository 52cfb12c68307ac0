"""Tests for toolemu.llm.http_transport: a keep-alive connection per thread for plain-HTTP endpoints, behind the
real openai client, against raw loopback servers that close, stall or answer as told."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from toolemu.core.errors import EndpointTimeoutError, EndpointUnreachableError
from toolemu.core.types import Message
from toolemu.llm.http_transport import ThreadConnectionTransport, lean_transport_applies
from toolemu.llm.openai_compat import OpenAICompatModel
from toolemu.llm.retry import RetryPolicy, count_retries

HI = [Message(role="user", content="hi")]
ONCE = RetryPolicy(max_attempts=1)
COMPLETION = json.dumps({
    "id": "c1", "object": "chat.completion", "created": 1, "model": "raw",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
}).encode()

pytestmark = pytest.mark.enable_socket


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


class RawServer:
    """A loopback HTTP server on raw sockets; ``handle(conn)`` serves one accepted connection.

    ``connections`` counts the connections accepted."""

    def __init__(self, handle: Callable[[socket.socket], None]) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._handle = handle
        self.connections = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            self._handle(conn)

    def close(self) -> None:
        self._sock.close()


def read_request(conn: socket.socket) -> bool:
    """Reads one request (headers and Content-Length body); False when the client closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lengths = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
    length = int(lengths[0].split(b":")[1])
    while len(body) < length:
        body += conn.recv(65536)
    return True


def answer(conn: socket.socket, body: bytes = COMPLETION) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    servers: list[RawServer] = []

    def make(handle: Callable[[socket.socket], None]) -> RawServer:
        servers.append(RawServer(handle))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def keep_alive(conn: socket.socket) -> None:
    while read_request(conn):
        answer(conn)


def test_lean_transport_applies_to_direct_plain_http_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert lean_transport_applies("http://127.0.0.1:8000/v1")
    assert lean_transport_applies("http://vllm.internal:8000/v1")
    assert not lean_transport_applies("https://api.openai.com/v1")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.corp:3128")
    assert not lean_transport_applies("http://vllm.internal:8000/v1")  # the proxy applies: default transport
    monkeypatch.setenv("NO_PROXY", "vllm.internal")
    assert lean_transport_applies("http://vllm.internal:8000/v1")


def test_openai_compat_uses_the_lean_transport_for_plain_http_only() -> None:
    plain = OpenAICompatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    tls = OpenAICompatModel("m", base_url="https://example.invalid/v1", api_key="k")
    assert isinstance(plain._client._client._transport, ThreadConnectionTransport)
    assert not isinstance(tls._client._client._transport, ThreadConnectionTransport)


def test_each_thread_keeps_one_connection_alive(raw_server: Callable[..., RawServer]) -> None:
    server = raw_server(keep_alive)
    model = OpenAICompatModel("m", base_url=server.base_url, api_key="k", retry=ONCE)
    with ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(lambda _: [model.chat(HI).text for _ in range(4)], range(3)))
    assert replies == [["pong"] * 4] * 3
    assert server.connections == 3  # 12 calls, one connection per thread


def test_a_connection_the_server_closed_while_idle_is_replaced_without_a_retry(
    raw_server: Callable[..., RawServer],
) -> None:
    def one_per_connection(conn: socket.socket) -> None:  # answers, then closes without saying so
        if read_request(conn):
            answer(conn)

    server = raw_server(one_per_connection)
    model = OpenAICompatModel("m", base_url=server.base_url, api_key="k", retry=ONCE)
    with count_retries() as retries:
        assert [model.chat(HI).text for _ in range(3)] == ["pong"] * 3
    assert server.connections == 3
    assert not retries  # the stale connection was replaced inside the transport, not retried as a failure


def test_a_fresh_connection_closed_without_an_answer_is_an_unreachable_error(
    raw_server: Callable[..., RawServer],
) -> None:
    def hang_up(conn: socket.socket) -> None:
        read_request(conn)

    server = raw_server(hang_up)
    model = OpenAICompatModel("m", base_url=server.base_url, api_key="k", retry=ONCE)
    with pytest.raises(EndpointUnreachableError, match="could not be reached") as info:
        model.chat(HI)
    assert info.value.retryable
    assert server.connections == 1  # a fresh connection is not sent again


def test_a_server_that_never_answers_is_a_timeout(raw_server: Callable[..., RawServer]) -> None:
    release = threading.Event()

    def stall(conn: socket.socket) -> None:
        read_request(conn)
        release.wait(5)

    server = raw_server(stall)
    model = OpenAICompatModel("m", base_url=server.base_url, api_key="k", retry=ONCE, timeout=0.3)
    try:
        with pytest.raises(EndpointTimeoutError, match=r"timed out after 0\.3s") as info:
            model.chat(HI)
    finally:
        release.set()
    assert info.value.retryable


def test_nothing_listening_is_an_unreachable_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed again on leaving: nothing listens there
    model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", retry=ONCE)
    with pytest.raises(EndpointUnreachableError, match="could not be reached"):
        model.chat(HI)
