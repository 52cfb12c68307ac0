"""Requests and answers of the GitLab emulator: parameters, GitLab's error shapes, pagination headers.

GitLab's API (Grape) reads parameters from the query string and from a JSON or form body alike, accepts
``name[]=`` arrays and comma lists, and answers errors as ``{"message": ...}`` (or ``{"error": ...}`` for a
missing or invalid parameter). This module holds that behaviour so the route modules only say what they do.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default as default_policy
from typing import Any
from urllib.parse import parse_qsl, urlencode

MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body answered (a push or a file upload); larger ones get 413."""

_REASONS = {
    200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 304: "Not Modified", 400: "Bad Request",
    401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    409: "Conflict", 413: "Payload Too Large", 422: "Unprocessable Entity", 500: "Internal Server Error",
}


def status_line(code: int) -> str:
    """``"404 Not Found"``."""
    return f"{code} {_REASONS.get(code, 'Unknown')}"


class ApiError(Exception):
    """An error answer: its status and GitLab's JSON body."""

    def __init__(self, status: int, body: dict[str, Any], headers: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(f"{status} {body}")
        self.status = status
        self.body = body
        self.headers = list(headers)


def not_found(what: str = "") -> ApiError:
    """GitLab's 404 for a missing resource: ``{"message": "404 Project Not Found"}``."""
    return ApiError(404, {"message": f"404 {what} Not Found" if what else "404 Not found"})


def bad_request(message: Any) -> ApiError:
    """A 400 with ``{"message": message}``."""
    return ApiError(400, {"message": message})


def missing(param: str) -> ApiError:
    """Grape's 400 for a required parameter: ``{"error": "title is missing"}``."""
    return ApiError(400, {"error": f"{param} is missing"})


def invalid(param: str) -> ApiError:
    """Grape's 400 for a malformed parameter."""
    return ApiError(400, {"error": f"{param} is invalid"})


UNAUTHORIZED = ApiError(401, {"message": "401 Unauthorized"})
FORBIDDEN = ApiError(403, {"message": "403 Forbidden"})


@dataclass
class Response:
    """An answer: status, headers and body bytes."""

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(cls, value: Any, status: int = 200, headers: Iterable[tuple[str, str]] = ()) -> Response:
        """A JSON answer."""
        return cls(status, json.dumps(value).encode(), [("Content-Type", "application/json"), *headers])

    @classmethod
    def empty(cls, status: int = 204) -> Response:
        """An answer without a body."""
        return cls(status)


class Params:
    """The parameters of one request: query string, then a JSON or form body over it."""

    def __init__(self, query: str, body: bytes, content_type: str) -> None:
        self._values: dict[str, Any] = {}
        for key, value in parse_qsl(query, keep_blank_values=True):
            self._put(key, value)
        if body and "json" in content_type:
            try:
                parsed = json.loads(body)
            except ValueError as e:
                raise ApiError(400, {"error": "The request body is not valid JSON"}) from e
            if isinstance(parsed, dict):
                self._values.update(parsed)
        elif body and content_type.startswith("multipart/form-data"):
            message = BytesParser(policy=default_policy).parsebytes(
                b"Content-Type: " + content_type.encode("latin-1", "replace") + b"\r\n\r\n" + body
            )
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                if isinstance(name, str) and isinstance(payload, bytes):
                    self._put(name, payload.decode("utf-8", "replace"))
        elif body:
            for key, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
                self._put(key, value)

    def _put(self, key: str, value: str) -> None:
        if key.endswith("[]"):
            self._values.setdefault(key[:-2], [])
            if isinstance(self._values[key[:-2]], list):
                self._values[key[:-2]].append(value)
        else:
            self._values[key] = value

    def has(self, name: str) -> bool:
        """Whether the parameter was given."""
        return name in self._values

    def raw(self, name: str) -> Any:
        """The value as sent (str, list, number, bool, None)."""
        return self._values.get(name)

    def text(self, name: str, default: str | None = None, *, required: bool = False) -> str | None:
        """A text parameter."""
        value = self._values.get(name)
        if value is None:
            if required:
                raise missing(name)
            return default
        if isinstance(value, list | dict):
            raise invalid(name)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def integer(self, name: str, default: int | None = None, *, required: bool = False) -> int | None:
        """An integer parameter."""
        value = self._values.get(name)
        if value is None or value == "":
            if required:
                raise missing(name)
            return default
        if isinstance(value, bool):
            raise invalid(name)
        try:
            return int(value)
        except (TypeError, ValueError) as e:
            raise invalid(name) from e

    def flag(self, name: str, default: bool | None = None) -> bool | None:
        """A boolean parameter (``true``/``false``/``1``/``0``)."""
        value = self._values.get(name)
        if value is None or value == "":
            return default
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in ("true", "1", "yes", "t"):
            return True
        if text in ("false", "0", "no", "f"):
            return False
        raise invalid(name)

    def items(self, name: str) -> list[str] | None:
        """A list parameter: a JSON array, ``name[]=`` repeats, or a comma list."""
        value = self._values.get(name)
        if value is None:
            return None
        if isinstance(value, list):
            return [str(v) for v in value]
        text = str(value)
        return [part.strip() for part in text.split(",") if part.strip()]

    def integers(self, name: str) -> list[int] | None:
        """A list of integers."""
        items = self.items(name)
        if items is None:
            return None
        try:
            return [int(v) for v in items]
        except ValueError as e:
            raise invalid(name) from e


@dataclass(frozen=True, slots=True)
class Request:
    """What a route handler sees."""

    method: str
    path: str
    query: str
    params: Params
    base_url: str
    """``scheme://host`` as the client addressed the server (for pagination links)."""
    user_id: int | None
    """The authenticated user (any credentials authenticate as root), None when anonymous."""

    def require_user(self) -> int:
        """The user id; anonymous requests are refused with 401."""
        if self.user_id is None:
            raise UNAUTHORIZED
        return self.user_id


def paginate(
    request: Request, items: Sequence[Any], *, total: int | None = None,
) -> tuple[list[Any], list[tuple[str, str]]]:
    """Cuts ``page``/``per_page`` (default 20, at most 100) out of ``items`` and returns GitLab's paging headers.

    With ``total``, ``items`` is already the requested page and ``total`` counts all of them.
    """
    page = max(1, request.params.integer("page", 1) or 1)
    per_page = request.params.integer("per_page", 20) or 20
    per_page = min(max(per_page, 1), 100)
    count = len(items) if total is None else total
    chunk = list(items[(page - 1) * per_page: page * per_page]) if total is None else list(items)
    pages = max(1, -(-count // per_page))
    headers = [
        ("X-Page", str(page)), ("X-Per-Page", str(per_page)), ("X-Total", str(count)),
        ("X-Total-Pages", str(pages)), ("X-Next-Page", str(page + 1) if page < pages else ""),
        ("X-Prev-Page", str(page - 1) if page > 1 else ""),
    ]
    links = []
    for rel, number in (("prev", page - 1 if page > 1 else None), ("next", page + 1 if page < pages else None),
                        ("first", 1), ("last", pages)):
        if number is not None:
            links.append(f'<{_page_url(request, number, per_page)}>; rel="{rel}"')
    headers.append(("Link", ", ".join(links)))
    return chunk, headers


def page_window(request: Request) -> tuple[int, int]:
    """(offset, limit) of the requested page, for sources that page themselves (git log)."""
    page = max(1, request.params.integer("page", 1) or 1)
    per_page = min(max(request.params.integer("per_page", 20) or 20, 1), 100)
    return (page - 1) * per_page, per_page


def _page_url(request: Request, page: int, per_page: int) -> str:
    pairs = [(k, v) for k, v in parse_qsl(request.query, keep_blank_values=True) if k not in ("page", "per_page")]
    pairs += [("page", str(page)), ("per_page", str(per_page))]
    return f"{request.base_url}{request.path}?{urlencode(pairs)}"


def authenticated_user(environ: dict[str, Any], query: str) -> int | None:
    """Returns root's id (1) for any credentials GitLab would read, None for an anonymous request.

    Credentials: ``PRIVATE-TOKEN``, ``JOB-TOKEN``, ``Authorization: Bearer|Basic|token ...``, or a
    ``private_token``/``access_token`` query parameter. Their values are not checked (OAS's agents had a browser
    logged in as root; tasks name ``root``'s password).
    """
    if environ.get("HTTP_PRIVATE_TOKEN") or environ.get("HTTP_JOB_TOKEN"):
        return 1
    auth = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return 1
    if scheme.lower() == "basic" and value.strip():
        try:
            user, _, _pw = base64.b64decode(value.strip()).decode("utf-8", "replace").partition(":")
        except ValueError:
            return None
        return 1 if user else None
    if any(k in ("private_token", "access_token") and v for k, v in parse_qsl(query)):
        return 1
    return None


def iter_body(body: bytes) -> Iterator[bytes]:
    """A WSGI body iterable of one chunk."""
    yield body
