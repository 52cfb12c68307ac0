"""An ASGI guard in front of the servers we run (``toolemu serve``, ``toolemu mcp --http``).

Neither server has authentication: they are meant for this machine (loopback, the default) or a trusted network.
The guard closes the ways a web page in the user's own browser could still reach them, and bounds what one
request may make the server hold:

- **Host** (DNS rebinding): a loopback server answers only requests addressed to a loopback name
  (``127.0.0.1``, ``localhost``, ``[::1]``, any port); a page on ``evil.example`` whose name was re-pointed at
  127.0.0.1 sends ``Host: evil.example`` and is refused.
- **Origin**: a request or WebSocket that carries an ``Origin`` header comes from a web page (trainers, MCP
  clients and ``curl`` send none); it is refused unless that origin was allowed by name.
- **Body size**: an HTTP body longer than ``max_body_bytes`` is refused (413) before the app reads any of it.

A refused HTTP request gets a JSON ``{"detail": ...}`` with 403 or 413; a refused WebSocket handshake gets 403.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""8 MiB: far above any action or tool call, far below what would strain the server."""
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is ``localhost`` or a loopback
    address."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name part of a ``Host`` header, lower-cased, without the port or IPv6 brackets.

    >>> host_name("LocalHost:8000"), host_name("[::1]:80"), host_name("127.0.0.1")
    ('localhost', '::1', '127.0.0.1')
    """
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.index("]")] if "]" in header else header
    name, sep, port = header.rpartition(":")
    return name if sep and port.isdigit() else header


class RequestGuard:
    """Wraps an ASGI app with the Host, Origin and body-size checks described in this module.

    Args:
        app: The app to guard.
        loopback_only: Refuse requests whose ``Host`` is not a loopback name (set when listening on loopback).
        allowed_origins: ``Origin`` values (``scheme://host[:port]``) let through; every other origin is refused.
        max_body_bytes: The longest HTTP body taken.
    """

    def __init__(self, app: ASGIApp, *, loopback_only: bool, allowed_origins: Iterable[str] = (),
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.loopback_only = loopback_only
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self.max_body_bytes = max_body_bytes

    def refusal(self, headers: dict[bytes, bytes]) -> str | None:
        """Why a request with these (lower-cased) headers is refused; ``None``: it is not."""
        host = headers.get(b"host")
        if self.loopback_only and host is not None:
            name = host_name(host.decode("latin-1"))
            if not is_loopback(name):
                return (f"Host {name!r} refused: this server listens on loopback and answers only requests "
                        f"addressed to 127.0.0.1, localhost or [::1]")
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1").rstrip("/").lower() not in self.allowed_origins:
            return (f"Origin {origin.decode('latin-1')!r} refused: requests from web pages are refused unless "
                    f"their origin is allowed (--allow-origin)")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or ()}
        reason = self.refusal(headers)
        if reason is not None:
            if scope["type"] == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008, "reason": reason[:123]})
            else:
                await _answer(send, 403, reason)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > self.max_body_bytes):
            await _answer(send, 413, self._too_long(length.decode("latin-1")))
            return
        chunks: list[bytes] = []
        total = 0
        while True:  # the whole body, bounded, before the app sees any of it
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_body_bytes:
                await _answer(send, 413, self._too_long(f"over {total}"))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _too_long(self, length: str) -> str:
        return f"request body of {length} bytes refused: at most {self.max_body_bytes} bytes are taken"


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
