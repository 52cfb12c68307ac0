"""ownCloud's web pages, server-rendered over the same drive and shares as WebDAV and OCS: log-in, folder listing
(``/index.php/apps/files/?dir=/Documents``), download, upload, new folder and the public-link dialog.

Plain HTML with stable ids, labels and ``name`` attributes, no script. Every name from the drive is escaped. A page
is served to a session made on the log-in page (any user and password, as the API accepts any credentials) or to a
request with Basic credentials; every form that changes something carries the session's ``requesttoken``.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import os
import secrets
import stat
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.services.owncloud.dav import QUOTA_BYTES, tree_bytes
from toolemu.services.owncloud.form import cookies, multipart, urlencoded
from toolemu.services.owncloud.shares import OcsError, ShareStore, folder_zip

SESSION_COOKIE = "oc_session"
"""The cookie that carries a web session."""
MAX_SESSIONS = 256
"""Web sessions kept at once (the oldest is dropped past it)."""
_FILES = "/index.php/apps/files"
_PAGES = frozenset({"/index.php/login", "/index.php/logout", _FILES, _FILES + "/", _FILES + "/share",
                    _FILES + "/ajax/download.php", _FILES + "/ajax/upload.php", _FILES + "/ajax/newfolder.php"})

Start = Callable[..., Any]


class WebUI:
    """ownCloud's web pages (see the module docstring) over the drive ``files`` and its ``shares``."""

    def __init__(self, files: Path, shares: ShareStore, basic_user: Callable[[dict[str, Any]], str | None]) -> None:
        self.files = files
        self.shares = shares
        self._basic_user = basic_user
        self._sessions: dict[str, str] = {}
        self._secret = secrets.token_bytes(16)
        self._lock = threading.Lock()

    @staticmethod
    def serves(path: str) -> bool:
        """Whether ``path`` is one of the emulated pages (others under ``/index.php`` stay gaps)."""
        return path in _PAGES

    def __call__(self, environ: dict[str, Any], start: Start) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", ""), environ["REQUEST_METHOD"]
        query = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        if path == "/index.php/login":
            return self._login(environ, start, query)
        if path == "/index.php/logout":
            cookie = f"{SESSION_COOKIE}=; Path=/; HttpOnly; Max-Age=0"
            session = cookies(environ).get(SESSION_COOKIE, "")
            with self._lock:
                self._sessions.pop(session, None)
            return _redirect(start, "/index.php/login", [("Set-Cookie", cookie)])
        session, user = self._session(environ)
        if user is None:
            back = path + ("?" + environ["QUERY_STRING"] if environ.get("QUERY_STRING") else "")
            return _redirect(start, "/index.php/login?" + urllib.parse.urlencode({"redirect_url": back}))
        token = self._token(session)
        if method == "POST":
            form = multipart(environ) if path.endswith("/upload.php") else urlencoded(environ)
            if form is None:
                return _send(start, 413, _page("Too large", "<p>The upload is larger than the server allows.</p>"))
            fields, uploads = form
            if not hmac.compare_digest(fields.get("requesttoken", ""), token):
                return _send(start, 403, _page("Access forbidden", "<p>Token expired. Please reload page.</p>"))
            if path.endswith("/upload.php"):
                return self._upload(start, fields.get("dir", "/"), uploads)
            if path.endswith("/newfolder.php"):
                return self._new_folder(start, fields.get("dir", "/"), fields.get("foldername", ""))
            if path.endswith("/share"):
                return self._share(environ, start, fields.get("path", ""), token, fields)
        elif method in ("GET", "HEAD"):
            if path in (_FILES, _FILES + "/"):
                return self._listing(start, query.get("dir", "/"), user, token)
            if path.endswith("/download.php"):
                return self._download(start, query.get("dir", "/"), query.get("files", ""))
            if path.endswith("/share"):
                return self._share(environ, start, query.get("path", ""), token, None)
        return _send(start, 405, _page("Method not allowed", "<p>This page does not answer that method.</p>"))

    def _login(self, environ: dict[str, Any], start: Start, query: Mapping[str, str]) -> Iterable[bytes]:
        back = query.get("redirect_url", "")
        if environ["REQUEST_METHOD"] == "POST":
            form = urlencoded(environ)
            fields = form[0] if form is not None else {}
            back = fields.get("redirect_url", back)
            user = fields.get("user", "").strip()
            if not user:
                return _send(start, 400, _login_page(back, "Wrong password."))
            session = secrets.token_urlsafe(24)
            with self._lock:
                if len(self._sessions) >= MAX_SESSIONS:
                    self._sessions.pop(next(iter(self._sessions)))
                self._sessions[session] = user
            cookie = f"{SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Lax"
            return _redirect(start, _safe_back(back), [("Set-Cookie", cookie)])
        if self._session(environ)[1] is not None:
            return _redirect(start, _safe_back(back))
        return _send(start, 200, _login_page(back, ""))

    def _session(self, environ: dict[str, Any]) -> tuple[str, str | None]:
        session = cookies(environ).get(SESSION_COOKIE, "")
        with self._lock:
            user = self._sessions.get(session)
        if user is not None:
            return session, user
        basic = self._basic_user(environ)
        return ("basic:" + basic, basic) if basic is not None else ("", None)

    def _token(self, session: str) -> str:
        return hmac.new(self._secret, session.encode(), hashlib.sha256).hexdigest()

    def _listing(self, start: Start, folder: str, user: str, token: str) -> Iterable[bytes]:
        parts = _parts(folder)
        where = self._folder(parts)
        if where is None:
            return _send(start, 404, _page("File not found", f"<p>No folder {html.escape(folder)}.</p>" + _HOME))
        shown = "/" + "/".join(parts)
        crumbs = ['<a class="crumb" href="/index.php/apps/files/?dir=/">Home</a>']
        crumbs += [f'<a class="crumb" href="{_href(_list_url("/" + "/".join(parts[:i + 1])))}">{html.escape(p)}</a>'
                   for i, p in enumerate(parts)]
        rows = []
        for entry, st in _entries(where):
            child = (shown.rstrip("/") + "/" + entry.name)
            name = html.escape(entry.name)
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "file"
            opened = _list_url(child) if kind == "dir" else _download_url(shown, entry.name)
            size = tree_bytes(entry) if kind == "dir" else st.st_size
            rows.append(
                f'<tr data-file="{name}" data-type="{kind}"><td><a class="name" href="{_href(opened)}">{name}</a>'
                f'</td><td class="filesize">{size}</td><td><a class="download" aria-label="Download {name}" '
                f'href="{_href(_download_url(shown, entry.name))}">Download</a> <a class="share" '
                f'aria-label="Share {name}" href="{_href(_share_url(child))}">Share</a></td></tr>')
        empty = '<p id="emptycontent">No files in here</p>' if not rows else ""
        safe_dir, safe_token = html.escape(shown), html.escape(token)
        body = (
            f'<p id="user">Logged in as <span id="expandDisplayName">{html.escape(user)}</span> '
            f'<a id="logout" href="/index.php/logout">Log out</a></p>'
            f'<nav id="breadcrumb">{" / ".join(crumbs)}</nav>'
            f'<table id="fileList"><thead><tr><th>Name</th><th>Size</th><th>Actions</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>{empty}'
            f'<form id="uploadForm" method="post" action="{_FILES}/ajax/upload.php" enctype="multipart/form-data">'
            f'<input type="hidden" name="dir" value="{safe_dir}"><input type="hidden" name="requesttoken" '
            f'value="{safe_token}"><label for="file_upload_start">Upload</label>'
            f'<input type="file" id="file_upload_start" name="files[]" multiple>'
            f'<button type="submit" id="uploadSubmit">Upload</button></form>'
            f'<form id="newFolderForm" method="post" action="{_FILES}/ajax/newfolder.php">'
            f'<input type="hidden" name="dir" value="{safe_dir}"><input type="hidden" name="requesttoken" '
            f'value="{safe_token}"><label for="newFolderName">New folder</label>'
            f'<input type="text" id="newFolderName" name="foldername">'
            f'<button type="submit" id="newFolderSubmit">Create folder</button></form>')
        return _send(start, 200, _page(parts[-1] if parts else "Files", body))

    def _download(self, start: Start, folder: str, name: str) -> Iterable[bytes]:
        parts = _parts(folder) + _parts(name)
        where = self._folder(parts)
        if where is not None and parts:
            data, filename, kind = folder_zip(where), f"{where.name}.zip", "application/zip"
        else:
            try:
                data = safefs.read_bytes(self.files, "/".join(parts), what="file", limit=QUOTA_BYTES)
            except CaseError:
                return _send(start, 404, _page("File not found", "<p>The file does not exist.</p>" + _HOME))
            filename, kind = parts[-1], "application/octet-stream"
        quoted = urllib.parse.quote(filename)
        disposition = f"attachment; filename*=UTF-8''{quoted}; filename=\"{quoted}\""
        return _send(start, 200, data, [("Content-Disposition", disposition)], kind=kind)

    def _upload(self, start: Start, folder: str, uploads: list[tuple[str, bytes]]) -> Iterable[bytes]:
        parts = _parts(folder)
        if self._folder(parts) is None:
            return _send(start, 404, _page("File not found", "<p>The target folder does not exist.</p>" + _HOME))
        names = [_file_name(n) for n, _ in uploads]
        if not uploads or None in names:
            return self._refused(start, 400, "/".join(parts), "Choose a file with a valid name to upload.")
        if tree_bytes(self.files) + sum(len(d) for _, d in uploads) > QUOTA_BYTES:
            return self._refused(start, 507, "/".join(parts), "Not enough free space.")
        for name, (_, data) in zip(names, uploads, strict=True):
            try:
                safefs.write_file_beneath(self.files, "/".join([*parts, str(name)]), data)
            except CaseError:
                return self._refused(start, 409, "/".join(parts), f"Could not upload {name}: a folder has that name.")
        return _redirect(start, _list_url("/" + "/".join(parts)))

    def _new_folder(self, start: Start, folder: str, name: str) -> Iterable[bytes]:
        parts = _parts(folder)
        where = self._folder(parts)
        if where is None:
            return _send(start, 404, _page("File not found", "<p>The target folder does not exist.</p>" + _HOME))
        checked = _file_name(name)
        if checked is None:
            return self._refused(start, 400, "/".join(parts), "Invalid folder name.")
        try:
            os.mkdir(where / checked)
        except FileExistsError:
            return self._refused(start, 409, "/".join(parts), f"The name {checked} is already used in this folder.")
        return _redirect(start, _list_url("/" + "/".join([*parts, checked])))

    def _share(self, environ: dict[str, Any], start: Start, path: str, token: str,
               fields: Mapping[str, str] | None) -> Iterable[bytes]:
        parts = _parts(path)
        item = "/" + "/".join(parts)
        base = "http://" + (environ.get("HTTP_HOST") or "localhost")
        if not parts or self.shares.resolve(item) is None:
            return _send(start, 404, _page("File not found", "<p>No such file or folder.</p>" + _HOME))
        made, status, note = None, 200, ""
        try:
            if fields is not None:
                made = self.shares.create({"path": item, "shareType": "3", "permissions": "1",
                                           "password": fields.get("password", ""),
                                           "expireDate": fields.get("expireDate", "")}, base)
                status = 201
        except OcsError as e:
            status, note = 400, f'<p class="warning" id="shareError">{html.escape(e.message)}</p>'
        links = [s for s in self.shares.list({"path": item}, base) if s["share_type"] == 3]
        if made is not None:
            note = (f'<p id="shareCreated">Public link created: <input id="shareLinkUrl" readonly value="'
                    f'{html.escape(made["url"])}"> <a id="shareLink" href="{html.escape(made["url"])}">Open</a></p>')
        rows = "".join(f'<li class="publicLink" data-id="{s["id"]}"><a href="{html.escape(s["url"])}">'
                       f'{html.escape(s["url"])}</a>{" (password)" if s["share_with"] else ""}</li>' for s in links)
        parent = "/" + "/".join(parts[:-1])
        body = (f'<h1 id="shareDialog">Share {html.escape(parts[-1])}</h1>{note}'
                f'<ul id="publicLinks">{rows}</ul>'
                f'<form id="createLinkForm" method="post" action="{_FILES}/share">'
                f'<input type="hidden" name="path" value="{html.escape(item)}">'
                f'<input type="hidden" name="requesttoken" value="{html.escape(token)}">'
                f'<label for="linkPassword">Password (optional)</label>'
                f'<input type="password" id="linkPassword" name="password">'
                f'<label for="expireDate">Expiration date (YYYY-MM-DD, optional)</label>'
                f'<input type="text" id="expireDate" name="expireDate">'
                f'<button type="submit" id="createLink">Create public link</button></form>'
                f'<a id="backToFolder" href="{_href(_list_url(parent))}">Back to folder</a>')
        return _send(start, status, _page(f"Share {parts[-1]}", body))

    def _folder(self, parts: list[str]) -> Path | None:
        """The folder ``parts`` names under the drive, reached without links; ``None`` if it is not one."""
        if ".." in parts:
            return None
        where = self.files
        for name in parts:
            where = where / name
            try:
                if not stat.S_ISDIR(where.lstat().st_mode):
                    return None
            except OSError:
                return None
        return where

    def _refused(self, start: Start, status: int, folder: str, message: str) -> Iterable[bytes]:
        back = f'<a id="backToFolder" href="{_href(_list_url("/" + folder))}">Back to folder</a>'
        return _send(start, status, _page("Error", f'<p class="warning" id="error">{html.escape(message)}</p>{back}'))


_HOME = '<p><a id="backToFiles" href="/index.php/apps/files/?dir=/">Back to your files</a></p>'


def _login_page(back: str, error: str) -> bytes:
    warning = f'<p class="warning" id="loginError">{html.escape(error)}</p>' if error else ""
    return _page("Log in", (
        f'<form id="loginForm" method="post" action="/index.php/login">{warning}'
        f'<label for="user">Username or email</label><input type="text" id="user" name="user" autocomplete="username">'
        f'<label for="password">Password</label><input type="password" id="password" name="password">'
        f'<input type="hidden" name="redirect_url" value="{html.escape(back)}">'
        f'<button type="submit" id="submit-form">Log in</button></form>'))


def _page(title: str, body: str) -> bytes:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} - ownCloud'
            f'</title></head><body><header><a id="owncloud" href="/index.php/apps/files/?dir=/">ownCloud</a></header>'
            f'<main id="app-content">{body}</main></body></html>\n').encode()


def _send(start: Start, status: int, body: bytes, headers: list[tuple[str, str]] | None = None, *,
          kind: str = "text/html; charset=utf-8") -> Iterable[bytes]:
    start(f"{status} {_REASONS.get(status, 'OK')}", [("Content-Type", kind), ("Content-Length", str(len(body))),
                                                    *(headers or [])])
    return [body]


_REASONS = {200: "OK", 201: "Created", 303: "See Other", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 409: "Conflict", 413: "Request Entity Too Large", 507: "Insufficient Storage"}


def _redirect(start: Start, where: str, headers: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
    return _send(start, 303, b"", [("Location", where), *(headers or [])])


def _safe_back(back: str) -> str:
    """Where the log-in page sends the user: a page of this server, never another site."""
    if back.startswith("/index.php/") and "\\" not in back and all(" " < c < "\x7f" for c in back):
        return back
    return "/index.php/apps/files/?dir=/"


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


def _file_name(name: str) -> str | None:
    """A single file or folder name from a form (a browser may send a path: its last part), or ``None``."""
    name = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if name in ("", ".", "..") or "\x00" in name or len(name.encode()) > 255:
        return None
    return name


def _entries(folder: Path) -> list[tuple[Path, os.stat_result]]:
    """The folder's sub-folders then files, by name (links and special files are not shown)."""
    found = []
    for entry in folder.iterdir():
        try:
            st = entry.lstat()
        except OSError:  # removed while listed
            continue
        if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
            found.append((entry, st))
    return sorted(found, key=lambda e: (not stat.S_ISDIR(e[1].st_mode), e[0].name.lower()))


def _q(value: str) -> str:
    """A query value as ownCloud writes it: percent-encoded, slashes kept (``dir=/Documents/Q1%20Reports``)."""
    return urllib.parse.quote(value, safe="/")


def _list_url(folder: str) -> str:
    return f"/index.php/apps/files/?dir={_q(folder)}"


def _download_url(folder: str, name: str) -> str:
    return f"{_FILES}/ajax/download.php?dir={_q(folder)}&files={_q(name)}"


def _share_url(path: str) -> str:
    return f"{_FILES}/share?path={_q(path)}"


def _href(url: str) -> str:
    return html.escape(url, quote=True)


__all__ = ["MAX_SESSIONS", "SESSION_COOKIE", "WebUI"]
