"""The forms of ownCloud's web pages: cookies, urlencoded bodies and ``multipart/form-data`` uploads."""

from __future__ import annotations

import urllib.parse
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

MAX_UPLOAD_BYTES = 256 * 1024 * 1024
"""Largest upload form body (the service's request limit)."""
MAX_FORM_BYTES = 1 << 20
"""Largest urlencoded form body."""


def cookies(environ: dict[str, Any]) -> dict[str, str]:
    """The request's cookies by name."""
    found: dict[str, str] = {}
    for part in environ.get("HTTP_COOKIE", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key:
            found[key] = value
    return found


def _length(environ: dict[str, Any]) -> int:
    try:
        return max(0, int(environ.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def urlencoded(environ: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, bytes]]] | None:
    """An urlencoded body's fields (and no files), or ``None`` past ``MAX_FORM_BYTES``."""
    length = _length(environ)
    if length > MAX_FORM_BYTES:
        return None
    raw = environ["wsgi.input"].read(length) if length else b""
    return dict(urllib.parse.parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)), []


def multipart(environ: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, bytes]]] | None:
    """A ``multipart/form-data`` body: its text fields and its files (``files[]``: name, bytes), or ``None`` past
    ``MAX_UPLOAD_BYTES``."""
    length = _length(environ)
    if length > MAX_UPLOAD_BYTES:
        return None
    kind = environ.get("CONTENT_TYPE", "")
    if not kind.startswith("multipart/form-data"):
        return {}, []
    raw = environ["wsgi.input"].read(length) if length else b""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + kind.encode("latin-1") + b"\r\n\r\n" + raw)
    fields: dict[str, str] = {}
    uploads: list[tuple[str, bytes]] = []
    parts: list[Message] = list(message.iter_parts()) if message.is_multipart() else []
    for part in parts:
        field = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        if field == "files[]" and filename is not None:
            uploads.append((filename, data))
        elif isinstance(field, str):
            fields[field] = data.decode("utf-8", "replace")
    return fields, uploads


__all__ = ["MAX_FORM_BYTES", "MAX_UPLOAD_BYTES", "cookies", "multipart", "urlencoded"]
