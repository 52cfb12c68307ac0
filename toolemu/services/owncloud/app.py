"""ownCloud's HTTP surface over one state folder: WebDAV, OCS (shares, capabilities, user), public links,
``status.php`` and the web pages (``web``); every other path is a gap, answered 404 (or 501 for another page of
the web UI) as ownCloud would not serve it.

Any credentials are accepted (OAS's agents had a browser logged in); none at all is a 401, as ownCloud answers.
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from toolemu.services.base import HOSTNAME, PORTS, GapLog, WSGIApp
from toolemu.services.owncloud.dav import dav_app, provider, sabre_quote
from toolemu.services.owncloud.form import cookies
from toolemu.services.owncloud.shares import OWNER, OcsError, ShareStore, folder_zip, ocs_body
from toolemu.services.owncloud.web import WebUI

VERSION = "10.13.4.1"
"""The ownCloud version ``status.php`` reports."""
GAP_HEADER = ("X-Toolemu-Gap", "1")
"""Marks an answer to a request the emulator does not serve (all three services use it)."""
MAX_DAV_USERS = 32
"""Distinct ``/remote.php/dav/files/<user>`` names served (each is the same drive)."""
_MAX_FORM_BYTES = 1 << 20
_OCS = re.compile(r"^/ocs/v([12])\.php(/.*)?$")
_SHARES = "/apps/files_sharing/api/v1/shares"
_DAV_FILES = re.compile(r"^/remote\.php/dav/files/([^/]+)(/.*)?$")
_LINK = re.compile(r"^/index\.php/s/([A-Za-z0-9]+)(/download|/authenticate)?/?$")
_WEB_UI = ("/index.php", "/apps/", "/login", "/settings/", "/core/", "/remote.php/dav/")

Start = Callable[..., Any]


class OwnCloud:
    """The WSGI application (see the module docstring)."""

    def __init__(self, state_dir: Path, gaps: GapLog) -> None:
        self.files = state_dir / "files"
        self.files.mkdir(exist_ok=True)
        self.gaps = gaps
        self.shares = ShareStore(state_dir / "shares.json", self.files)
        self.dav = dav_app(self.files, ["/remote.php/webdav"])
        self.web = WebUI(self.files, self.shares, _user)
        self._users: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start: Start) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "") or "/"
        method = environ["REQUEST_METHOD"]
        if path == "/status.php":
            return _send(start, 200, "application/json; charset=utf-8", json.dumps(_status()).encode())
        if path == "/remote.php/webdav" or path.startswith("/remote.php/webdav/"):
            return self._webdav(environ, start, None)
        found = _DAV_FILES.match(path)
        if found is not None:
            return self._webdav(environ, start, urllib.parse.unquote(found.group(1)))
        found = _OCS.match(path)
        if found is not None:
            return self._ocs(environ, start, int(found.group(1)), found.group(2) or "/")
        found = _LINK.match(path)
        if found is not None:
            return self._link(environ, start, found.group(1), found.group(2) or "")
        if path in ("/", "/index.php") and method == "GET":
            return _send(start, 302, "text/html", b"", [("Location", "/index.php/login")])
        if self.web.serves(path):
            return self.web(environ, start)
        web = path.startswith(_WEB_UI)
        reason = "this page of the web interface is not emulated" if web else "no such ownCloud endpoint is emulated"
        return self._gap(environ, start, 501 if web else 404, reason)

    def _webdav(self, environ: dict[str, Any], start: Start, user: str | None) -> Iterable[bytes]:
        name = _user(environ)
        if name is None:
            return _dav_unauthorized(start)
        if environ.get("HTTP_OC_CHUNKED"):
            return self._gap(environ, start, 501, "ownCloud's chunked upload (OC-Chunked) is not emulated")
        if user is not None:
            mount = f"/remote.php/dav/files/{user}"
            with self._lock:
                if user not in self._users:
                    if len(self._users) >= MAX_DAV_USERS:
                        return self._gap(environ, start, 403, f"more than {MAX_DAV_USERS} user names")
                    self._users.add(user)
                    self.dav.add_provider(mount, provider(self.files))
        environ["wsgidav.auth.user_name"] = name
        environ["wsgidav.auth.realm"] = "ownCloud"
        environ["wsgidav.auth.roles"] = []
        environ["wsgidav.auth.permissions"] = []
        if environ["REQUEST_METHOD"] in ("REPORT", "SEARCH"):
            return self._gap(environ, start, 501, f"WebDAV {environ['REQUEST_METHOD']} is not emulated")
        if environ["REQUEST_METHOD"] == "MOVE":
            return self._move(environ, start, user)
        return self.dav(environ, start)  # type: ignore[no-any-return]

    def _move(self, environ: dict[str, Any], start: Start, user: str | None) -> Iterable[bytes]:
        """A WebDAV MOVE that keeps the item's shares on it (ownCloud's shares follow the file)."""
        source = _user_path(environ.get("PATH_INFO", ""))
        dest = _user_path(urllib.parse.unquote(urllib.parse.urlsplit(environ.get("HTTP_DESTINATION", "")).path))
        status: list[str] = []

        def started(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status.append(code)
            return start(code, headers, exc_info)

        body = list(self.dav(environ, started))
        if status and status[0][:1] == "2" and source is not None and dest is not None:
            self.shares.moved(source, dest)
        return body

    def _ocs(self, environ: dict[str, Any], start: Start, version: int, route: str) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        form = _form(environ)
        as_json = form.get("format", "").lower() == "json"

        def answer(data: Any, status: int = 100, message: str = "") -> Iterable[bytes]:
            http, kind, body = ocs_body(data, status, message, version=version, json_format=as_json)
            return _send(start, http, kind, body)

        if _user(environ) is None:
            _, kind, body = ocs_body([], 997, "Unauthorised", version=version, json_format=as_json)
            return _send(start, 401, kind, body, [("WWW-Authenticate", 'Basic realm="ownCloud", charset="UTF-8"')])
        base = "http://" + (environ.get("HTTP_HOST") or f"{HOSTNAME}:{PORTS['owncloud']}")
        route = route.rstrip("/") or "/"
        try:
            if route == _SHARES and method == "GET":
                return answer(self.shares.list(form, base))
            if route == _SHARES and method == "POST":
                return answer(self.shares.create(form, base))
            found = re.fullmatch(re.escape(_SHARES) + r"/(\d+)", route)
            if found is not None and method in ("GET", "PUT", "DELETE"):
                share_id = int(found.group(1))
                if method == "GET":
                    return answer([self.shares.get(share_id, base)])
                if method == "PUT":
                    return answer(self.shares.update(share_id, form, base))
                self.shares.delete(share_id)
                return answer([])
            if route == "/cloud/capabilities" and method == "GET":
                return answer(_capabilities())
            if route == "/cloud/user" and method == "GET":
                name = _user(environ) or OWNER
                return answer({"id": name, "display-name": name, "email": None, "language": "en"})
        except OcsError as e:
            return answer([], e.status, e.message)
        self.gaps.record("owncloud", method, environ.get("PATH_INFO", ""), f"OCS {method} {route} is not emulated")
        _, kind, body = ocs_body([], 998, "Invalid query, please check the syntax.", version=version,
                                    json_format=as_json)
        return _send(start, 404, kind, body, [GAP_HEADER])

    def _link(self, environ: dict[str, Any], start: Start, token: str, action: str) -> Iterable[bytes]:
        share = self.shares.by_token(token)
        if share is None:
            page = _page("File not found", "<p>The requested share does not exist anymore.</p>")
            return _send(start, 404, "text/html; charset=utf-8", page)
        cookie_name = f"oc_share_{share['id']}"
        if action == "/authenticate" and environ["REQUEST_METHOD"] == "POST":
            if self.shares.check_password(share, _form(environ).get("password", "")):
                cookie = f"{cookie_name}={self.shares.cookie(share)}; Path=/; HttpOnly"
                return _send(start, 303, "text/html", b"", [("Location", f"/index.php/s/{token}"),
                                                            ("Set-Cookie", cookie)])
            return _send(start, 403, "text/html; charset=utf-8", _password_page(token, wrong=True))
        granted = share["password"] is None or cookies(environ).get(cookie_name) == self.shares.cookie(share)
        if not granted:
            if action == "/download":
                return _send(start, 303, "text/html", b"", [("Location", f"/index.php/s/{token}/authenticate")])
            return _send(start, 200, "text/html; charset=utf-8", _password_page(token, wrong=False))
        target = self.shares.resolve(share["path"])
        if target is None:
            return _send(start, 404, "text/html; charset=utf-8", _page("File not found", ""))
        if action == "/download":
            return self._download(environ, start, target)
        name = html.escape(target.name)
        if target.is_dir():
            rows = "".join(f"<li>{html.escape(p.name)}</li>" for p in sorted(target.iterdir()))
            body = f"<h1>{name}</h1><ul>{rows}</ul>"
        else:
            body = f"<h1>{name}</h1><p>{target.stat().st_size} bytes</p>"
        body += f'<a id="downloadFile" href="/index.php/s/{token}/download">Download</a>'
        return _send(start, 200, "text/html; charset=utf-8", _page(target.name, body))

    def _download(self, environ: dict[str, Any], start: Start, target: Path) -> Iterable[bytes]:
        if target.is_dir():
            query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
            sub = query.get("path", ["/"])[0].strip("/")
            files = query.get("files", [""])[0]
            picked = target.joinpath(*[p for p in (sub + "/" + files).split("/") if p and p != ".."])
            if picked != target and picked.is_file() and not picked.is_symlink():
                target = picked
        if target.is_dir():
            data, name, kind = folder_zip(target), f"{target.name}.zip", "application/zip"
        else:
            data, name, kind = target.read_bytes(), target.name, "application/octet-stream"
        disposition = f"attachment; filename*=UTF-8''{urllib.parse.quote(name)}; filename=\"{name}\""
        return _send(start, 200, kind, data, [("Content-Disposition", disposition)])

    def _gap(self, environ: dict[str, Any], start: Start, status: int, reason: str) -> Iterable[bytes]:
        self.gaps.record("owncloud", environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), reason)
        return _send(start, status, "text/plain; charset=utf-8", f"{reason}\n".encode(), [GAP_HEADER])


def make_app(state_dir: Path, gaps: GapLog) -> WSGIApp:
    """Builds ownCloud's application over ``state_dir`` (``files/`` and ``shares.json``)."""
    return OwnCloud(state_dir, gaps)


def _user(environ: dict[str, Any]) -> str | None:
    """The account named by the request's credentials (any are accepted), or ``None`` without any."""
    header = environ.get("HTTP_AUTHORIZATION", "")
    kind, _, value = header.partition(" ")
    if kind.lower() == "basic":
        try:
            name = base64.b64decode(value.strip(), validate=False).decode("utf-8", "replace").partition(":")[0]
        except ValueError:
            return None
        return name or OWNER
    if kind.lower() == "bearer" and value.strip():
        return OWNER
    return None


def _user_path(path: str) -> str | None:
    if path == "/remote.php/webdav" or path.startswith("/remote.php/webdav/"):
        return path[len("/remote.php/webdav"):] or "/"
    found = _DAV_FILES.match(path)
    return (found.group(2) or "/") if found is not None else None


def _form(environ: dict[str, Any]) -> dict[str, str]:
    """Query and urlencoded body parameters (the body wins), as ownCloud reads them."""
    pairs = urllib.parse.parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    if environ["REQUEST_METHOD"] in ("POST", "PUT"):
        kind = environ.get("CONTENT_TYPE", "")
        length = min(int(environ.get("CONTENT_LENGTH") or 0), _MAX_FORM_BYTES)
        raw = environ["wsgi.input"].read(length) if length else b""
        text = raw.decode("utf-8", "replace")
        if "json" in kind:
            try:
                body = json.loads(text) if text else {}
            except ValueError:
                body = {}
            pairs += [(str(k), str(v).lower() if isinstance(v, bool) else str(v))
                      for k, v in (body.items() if isinstance(body, dict) else [])]
        else:
            pairs += urllib.parse.parse_qsl(text, keep_blank_values=True)
    return dict(pairs)


def _send(start: Start, status: int, kind: str, body: bytes,
          headers: list[tuple[str, str]] | None = None) -> list[bytes]:
    reason = {200: "OK", 207: "Multi-Status", 302: "Found", 303: "See Other", 401: "Unauthorized",
              403: "Forbidden", 404: "Not Found", 501: "Not Implemented"}.get(status, "")
    start(f"{status} {reason}".strip(), [("Content-Type", kind), ("Content-Length", str(len(body))),
                                         *(headers or [])])
    return [body]


def _dav_unauthorized(start: Start) -> list[bytes]:
    body = (b'<?xml version="1.0" encoding="utf-8"?>\n<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">\n'
            b"  <s:exception>Sabre\\DAV\\Exception\\NotAuthenticated</s:exception>\n"
            b"  <s:message>No public access to this resource., No 'Authorization: Basic' header found.</s:message>\n"
            b"</d:error>\n")
    return _send(start, 401, "application/xml; charset=utf-8", body,
                 [("WWW-Authenticate", 'Basic realm="ownCloud", charset="UTF-8"')])


def _status() -> dict[str, Any]:
    return {"installed": True, "maintenance": False, "needsDbUpgrade": False, "version": VERSION,
            "versionstring": VERSION.rsplit(".", 1)[0], "edition": "Community", "productname": "ownCloud",
            "product": "ownCloud"}


def _capabilities() -> dict[str, Any]:
    major, minor, micro, _ = VERSION.split(".")
    return {
        "version": {"major": int(major), "minor": int(minor), "micro": int(micro),
                    "string": VERSION.rsplit(".", 1)[0], "edition": "Community", "product": "ownCloud"},
        "capabilities": {
            "core": {"pollinterval": 60, "webdav-root": "remote.php/webdav", "status": _status()},
            "dav": {"chunking": "1.0"},
            "files_sharing": {"api_enabled": True, "public": {"enabled": True, "password": {"enforced": False},
                                                                "expire_date": {"enabled": False}, "upload": True},
                              "user": {"send_mail": False}, "resharing": True, "group_sharing": True},
        },
    }


def _page(title: str, body: str) -> bytes:
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)} - ownCloud</title>'
            f"</head><body>{body}</body></html>\n").encode()


def _password_page(token: str, *, wrong: bool) -> bytes:
    note = '<p class="warning">The password is wrong. Try again.</p>' if wrong else ""
    form = (f'<form method="post" action="/index.php/s/{token}/authenticate">{note}'
            '<p>This share is password-protected</p><input type="password" name="password" id="password">'
            '<input type="submit" value="Continue"></form>')
    return _page("Password required", form)


__all__ = ["GAP_HEADER", "VERSION", "OwnCloud", "make_app", "sabre_quote"]
