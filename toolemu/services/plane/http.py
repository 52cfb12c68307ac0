"""Request parsing, JSON answers and Plane's cursor pagination for the Plane emulator (WSGI, standard library)."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MAX_BODY_BYTES = 1_000_000
"""A request body larger than this is refused (413)."""
PER_PAGE = 100
"""Plane's default and largest page size."""
GAP_HEADER = ("X-Toolemu-Gap", "1")
"""Marks an answer to a request the emulator does not emulate (read by the evaluators' helpers)."""

_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 410: "Gone", 413: "Payload Too Large"}
NOT_FOUND_HTML = (b"<!doctype html>\n<html lang=\"en\">\n<head>\n  <title>Not Found</title>\n</head>\n<body>\n"
                  b"  <h1>Not Found</h1><p>The requested resource was not found on this server.</p>\n"
                  b"</body>\n</html>\n")
"""Django's answer to a path no route matches (Plane's server is Django)."""


class HttpError(Exception):
    """An API error answered as Plane does: a status and a JSON body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(f"{status} {body}")
        self.status = status
        self.body = body


def not_found() -> HttpError:
    """Plane's answer when an object does not exist."""
    return HttpError(404, {"error": "The required object does not exist."})


@dataclass(frozen=True, slots=True)
class Request:
    """What a handler reads of one request."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes

    def json(self) -> dict[str, Any]:
        """The body as a JSON object (a form-encoded body is read too); empty when there is none.

        Raises:
            HttpError: 400 when the body is not a JSON object.
        """
        if not self.body.strip():
            return {}
        if "application/x-www-form-urlencoded" in self.headers.get("content-type", ""):
            return dict(urllib.parse.parse_qsl(self.body.decode("utf-8", "replace")))
        try:
            value = json.loads(self.body)
        except ValueError as e:
            raise HttpError(400, {"detail": f"JSON parse error - {e}"}) from None
        if not isinstance(value, dict):
            raise HttpError(400, {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]})
        return value


def read_request(environ: dict[str, Any]) -> Request:
    """Parses a WSGI environ (the body read up to ``MAX_BODY_BYTES``; a chunked body is decoded).

    Raises:
        HttpError: 413 when the body is too large.
    """
    headers = {k[5:].replace("_", "-").lower(): str(v) for k, v in environ.items() if k.startswith("HTTP_")}
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").lower()] = str(environ[key])
    stream = environ.get("wsgi.input")
    body = b""
    length = headers.get("content-length", "")
    if stream is not None and length.isdigit():
        if int(length) > MAX_BODY_BYTES:
            raise HttpError(413, {"error": f"request body over {MAX_BODY_BYTES:,} bytes"})
        body = stream.read(int(length))
    elif stream is not None and "chunked" in headers.get("transfer-encoding", "").lower():
        body = _read_chunked(stream)
    query = dict(urllib.parse.parse_qsl(str(environ.get("QUERY_STRING", "")), keep_blank_values=True))
    path = str(environ.get("PATH_INFO", "/")).encode("latin-1").decode("utf-8", "replace")
    return Request(str(environ.get("REQUEST_METHOD", "GET")).upper(), path, query, headers, body)


def _read_chunked(stream: Any) -> bytes:
    out = bytearray()
    while True:
        size_line = stream.readline(100).split(b";", 1)[0].strip()
        size = int(size_line or b"0", 16)
        if size == 0:
            stream.readline(100)
            return bytes(out)
        out += stream.read(size)
        stream.readline(4)
        if len(out) > MAX_BODY_BYTES:
            raise HttpError(413, {"error": f"request body over {MAX_BODY_BYTES:,} bytes"})


def respond(start_response: Callable[..., Any], status: int, body: Any, *, gap: bool = False,
            html: bool = False) -> Iterable[bytes]:
    """Sends ``body`` as JSON (or raw HTML bytes); ``None`` sends no body (204)."""
    if html:
        data, kind = body, "text/html; charset=utf-8"
    elif body is None:
        data, kind = b"", "application/json"
    else:
        data, kind = json.dumps(body).encode(), "application/json"
    headers = [("Content-Type", kind), ("Content-Length", str(len(data))), ("Allow", "GET, POST, PATCH, DELETE")]
    if gap:
        headers.append(GAP_HEADER)
    start_response(f"{status} {_REASONS.get(status, 'Error')}", headers)
    return [data]


def paginate(items: list[dict[str, Any]], query: dict[str, str]) -> dict[str, Any]:
    """One page of ``items`` in Plane's shape (``per_page`` at most 100; cursor ``<per_page>:<page>:<is_prev>``).

    Raises:
        HttpError: 400 for a malformed cursor or page size.
    """
    try:
        per_page = min(int(query.get("per_page") or PER_PAGE), PER_PAGE)
        cursor = query.get("cursor") or f"{per_page}:0:0"
        size, page, _prev = (int(part) for part in cursor.split(":"))
    except ValueError:
        raise HttpError(400, {"error": "Invalid cursor parameter."}) from None
    if per_page < 1 or size < 1 or page < 0:
        raise HttpError(400, {"error": "Invalid cursor parameter."})
    start = page * size
    chunk = items[start : start + size]
    pages = max(1, -(-len(items) // size))
    return {
        "grouped_by": None, "sub_grouped_by": None, "total_count": len(items),
        "next_cursor": f"{size}:{page + 1}:0", "prev_cursor": f"{size}:{max(page - 1, 0)}:1",
        "next_page_results": start + size < len(items), "prev_page_results": page > 0,
        "count": len(chunk), "total_pages": pages, "total_results": len(items), "extra_stats": None,
        "results": chunk,
    }
