"""A real HTTP server on 127.0.0.1 speaking OpenAI chat completions, scriptable per request.

Use it as a context manager (``with FakeChatServer(["hi"]) as server: ... server.base_url``) or through the
``chat_server`` fixture; tests using it need ``@pytest.mark.enable_socket``. ``FaultInjector`` turns a share
of replies into the transient failures real gateways send; ``with_latency`` delays every reply.
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

import pytest


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """What the server answers to one request."""

    text: str = "ok"
    """The assistant message content (for status 200)."""
    status: int = 200
    """HTTP status; an error status sends an OpenAI-style error body."""
    body: bytes | None = None
    """A raw body sent instead of the generated one (garbage, truncated JSON...)."""
    content_type: str = "application/json"
    """Content-Type header of the reply."""
    delay: float = 0.0
    """Seconds to wait before answering (to trigger client timeouts)."""
    finish_reason: str = "stop"
    """``finish_reason`` of the choice."""
    error_message: str = "scripted error"
    """The ``error.message`` of an error reply."""
    no_choices: bool = False
    """Send a well-formed completion with an empty ``choices`` list."""
    null_content: bool = False
    """Send a choice whose message content is ``null``."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: dict[str, object] = field(default_factory=dict)
    """The parsed JSON body (empty when there was none)."""


Responder = Callable[[RecordedRequest], ScriptedReply]


class FakeChatServer:
    """Serves ``POST /v1/chat/completions`` (and ``GET /v1/models``) from a script.

    Args:
        replies: Replies for successive chat requests; a ``str`` is a 200 reply with that text.
        default: Answers requests once the script is used up: a reply, or a function of the request. Without
            one, an exhausted script answers HTTP 400 "script exhausted" (not retryable, so tests fail fast).
        model: The model name reported in completions.
        routes: Answers for other POST paths, by path suffix (``"/load_lora_adapter"``): a function of the
            request.
    """

    def __init__(
        self,
        replies: Iterable[ScriptedReply | str] = (),
        *,
        default: ScriptedReply | Responder | None = None,
        model: str = "fake-server-model",
        routes: dict[str, Responder] | None = None,
    ) -> None:
        self._script: deque[ScriptedReply] = deque(_as_reply(r) for r in replies)
        self._default = default
        self.model = model
        self.routes = dict(routes or {})
        self.requests: list[RecordedRequest] = []
        """Every request received, in order (chat and other paths)."""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------------------

    def push(self, *replies: ScriptedReply | str) -> None:
        """Appends replies to the script."""
        with self._lock:
            self._script.extend(_as_reply(r) for r in replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completion requests received, in order."""
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def _next_reply(self, request: RecordedRequest) -> ScriptedReply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if isinstance(self._default, ScriptedReply):
            return self._default
        if self._default is not None:
            return self._default(request)
        n = len(self.chat_requests)
        return ScriptedReply(status=400, error_message=f"chat server script exhausted at request {n}")

    # -- lifecycle -------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, for ``--base-url`` and ``OpenAICompatModel(base_url=...)``."""
        if self._server is None:
            raise RuntimeError("FakeChatServer is not running; use it as a context manager or call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeChatServer:
        """Starts serving on a free loopback port in a daemon thread."""
        owner = self

        class Handler(_ChatHandler):
            server_owner = owner

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-chat-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops the server and frees the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # the default backlog of 5 drops connections when hundreds arrive at once


def _as_reply(reply: ScriptedReply | str) -> ScriptedReply:
    return ScriptedReply(text=reply) if isinstance(reply, str) else reply


def completion_body(reply: ScriptedReply, model: str, request_no: int) -> dict[str, object]:
    """Returns an OpenAI chat-completion JSON body for a 200 reply."""
    choices: list[dict[str, object]] = []
    if not reply.no_choices:
        content = None if reply.null_content else reply.text
        choices.append(
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        )
    return {
        "id": f"chatcmpl-fake-{request_no}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": choices,
        "usage": {
            "prompt_tokens": 7,
            "completion_tokens": len(reply.text.split()),
            "total_tokens": 7 + len(reply.text.split()),
        },
    }


FAULT_KINDS = ("429", "500", "503", "html", "cut_json", "no_choices")
"""Transient failures of real gateways: status errors, an HTML error page sent with status 200, a JSON body cut
in half, a completion with an empty ``choices`` list."""

HTML_ERROR_PAGE = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"


def fault_reply(kind: str, reply: ScriptedReply, model: str = "fake-server-model") -> ScriptedReply:
    """Returns ``reply`` turned into the fault ``kind`` (one of ``FAULT_KINDS``), keeping its delay."""
    if kind in ("429", "500", "503"):
        return ScriptedReply(status=int(kind), error_message=f"injected {kind}", delay=reply.delay)
    if kind == "html":
        return ScriptedReply(body=HTML_ERROR_PAGE, content_type="text/html", delay=reply.delay)
    if kind == "cut_json":
        whole = json.dumps(completion_body(reply, model, 0)).encode()
        return ScriptedReply(body=whole[: len(whole) // 2], delay=reply.delay)
    if kind == "no_choices":
        return dataclasses.replace(reply, no_choices=True)
    raise ValueError(f"unknown fault kind {kind!r}; use one of {', '.join(FAULT_KINDS)}")


class FaultInjector:
    """A responder that answers a seeded share of chat requests with a fault instead of ``inner``'s reply.

    Args:
        inner: The responder whose replies are faulted.
        rate: Share of requests faulted, each drawn independently.
        seed: Seed of the draws (the kind is drawn uniformly from ``kinds``).
        kinds: Faults to draw from.
    """

    def __init__(
        self, inner: Responder, *, rate: float = 0.2, seed: int = 0, kinds: tuple[str, ...] = FAULT_KINDS
    ) -> None:
        self._inner = inner
        self._rate = rate
        self._kinds = kinds
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.injected: Counter[str] = Counter()
        """Faults sent so far, by kind."""
        self.answered = 0
        """Requests answered with ``inner``'s own reply."""

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        reply = self._inner(request)
        with self._lock:
            kind = self._rng.choice(self._kinds) if self._rng.random() < self._rate else None
            if kind is None:
                self.answered += 1
                return reply
            self.injected[kind] += 1
        return fault_reply(kind, reply)


def with_latency(inner: Responder, seconds: float) -> Responder:
    """A responder that answers as ``inner`` does, each reply ``seconds`` late (a remote model's latency)."""

    def respond(request: RecordedRequest) -> ScriptedReply:
        return dataclasses.replace(inner(request), delay=seconds)

    return respond


class _ChatHandler(BaseHTTPRequestHandler):
    server_owner: FakeChatServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # quiet: tests read .requests instead
        return

    def _record(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_unparseable": raw.decode("utf-8", "replace")}
        recorded = RecordedRequest(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        with self.server_owner._lock:
            self.server_owner.requests.append(recorded)
        return recorded

    def _send(self, status: int, body: bytes, content_type: str, request_no: int) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("x-request-id", f"req-fake-{request_no}")
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (a timeout test); nothing to answer.
            pass

    def do_GET(self) -> None:
        self._record()
        n = len(self.server_owner.requests)
        if self.path.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": self.server_owner.model, "object": "model"}]}
            self._send(200, json.dumps(body).encode(), "application/json", n)
        else:
            self._send(404, b'{"error": {"message": "not found"}}', "application/json", n)

    def do_POST(self) -> None:
        request = self._record()
        n = len(self.server_owner.requests)
        route = next((f for suffix, f in self.server_owner.routes.items() if self.path.endswith(suffix)), None)
        if route is not None:
            answer = route(request)
            self._send(answer.status, answer.text.encode(), "text/plain", n)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}', "application/json", n)
            return
        reply = self.server_owner._next_reply(request)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.body is not None:
            self._send(reply.status, reply.body, reply.content_type, n)
        elif reply.status == 200:
            body = completion_body(reply, self.server_owner.model, n)
            self._send(200, json.dumps(body).encode(), reply.content_type, n)
        else:
            error = {"error": {"message": reply.error_message, "type": "scripted", "code": str(reply.status)}}
            self._send(reply.status, json.dumps(error).encode(), "application/json", n)


@pytest.fixture
def chat_server() -> Iterator[FakeChatServer]:
    """A running ``FakeChatServer`` with an empty script; ``push`` replies onto it."""
    with FakeChatServer() as server:
        yield server
