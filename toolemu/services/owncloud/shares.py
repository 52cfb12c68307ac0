"""ownCloud's shares: the OCS share API (``/ocs/v1.php|v2.php/apps/files_sharing/api/v1/shares``, XML or
``format=json``) and the public link pages (``/index.php/s/<token>``, its ``/download`` and password form).

Shares live in ``shares.json`` beside the file tree, written atomically after every change.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import mimetypes
import os
import secrets
import string
import threading
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

OWNER = "theagentcompany"
"""The account every request acts as (OAS's evaluators and browser use it)."""
SHARE_TYPES = {0: "user", 1: "group", 3: "link", 4: "email", 6: "federated"}
"""ownCloud's share types (``shareType``)."""
_TOKEN_ALPHABET = string.ascii_letters + string.digits


class OcsError(Exception):
    """An OCS failure: ``status`` is ownCloud's OCS status code (and the HTTP status under v2)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ShareStore:
    """The shares of one ownCloud state folder (thread-safe)."""

    def __init__(self, path: Path, files: Path) -> None:
        self._path = path
        self._files = files
        self._lock = threading.Lock()
        self._secret = secrets.token_bytes(16)
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"next_id": 1, "shares": []}
        self._next: int = int(data["next_id"])
        self._shares: list[dict[str, Any]] = list(data["shares"])

    def create(self, form: Mapping[str, str], base_url: str) -> dict[str, Any]:
        """Creates a share from the API's parameters (``path``, ``shareType``, ``shareWith``, ...).

        Raises:
            OcsError: A missing or bad parameter, or a path that does not exist (ownCloud's codes and messages).
        """
        path = form.get("path", "")
        if not path:
            raise OcsError(404, "Please specify a file or folder path")
        target = self.resolve(path)
        if target is None:
            raise OcsError(404, "Wrong path, file/folder doesn't exist")
        try:
            share_type = int(form.get("shareType", ""))
        except ValueError:
            raise OcsError(400, "Unknown share type") from None
        if share_type not in SHARE_TYPES:
            raise OcsError(400, "Unknown share type")
        share_with = form.get("shareWith", "")
        if share_type in (0, 1, 4, 6) and not share_with:
            raise OcsError(404, "Please specify a valid user" if share_type == 0 else "Please specify a valid group")
        is_folder = target.is_dir()
        default = 1 if share_type == 3 else (31 if is_folder else 19)
        permissions = _int(form.get("permissions"), default)
        if share_type == 3 and form.get("publicUpload", "").lower() == "true":
            permissions = 15 if is_folder else 1
        share: dict[str, Any] = {
            "id": 0, "share_type": share_type, "path": "/" + path.strip("/"), "permissions": permissions,
            "share_with": share_with if share_type != 3 else None, "stime": int(time.time()),
            "expiration": _expiration(form.get("expireDate")), "name": form.get("name", ""),
            "item_type": "folder" if is_folder else "file", "token": None, "password": None,
        }
        if share_type == 3:
            share["token"] = "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(15))
            if form.get("password"):
                share["password"] = _hash(form["password"])
        with self._lock:
            share["id"] = self._next
            self._next += 1
            self._shares.append(share)
            self._save()
        return self.render(share, base_url)

    def list(self, form: Mapping[str, str], base_url: str) -> list[dict[str, Any]]:
        """The shares, optionally of one ``path`` (``subfiles=true``: of the items in that folder).

        Raises:
            OcsError: ``path`` does not exist.
        """
        path = form.get("path")
        with self._lock:
            shares = list(self._shares)
        if path:
            wanted = "/" + path.strip("/")
            if self.resolve(path) is None:
                raise OcsError(404, "Wrong path, file/folder doesn't exist")
            if form.get("subfiles", "").lower() == "true":
                shares = [s for s in shares if s["path"].rsplit("/", 1)[0] == wanted.rstrip("/")]
            else:
                shares = [s for s in shares if s["path"] == wanted]
        return [self.render(s, base_url) for s in shares]

    def get(self, share_id: int, base_url: str) -> dict[str, Any]:
        """One share.

        Raises:
            OcsError: No such share (404 "Wrong share ID, share doesn't exist").
        """
        return self.render(self._find(share_id), base_url)

    def update(self, share_id: int, form: Mapping[str, str], base_url: str) -> dict[str, Any]:
        """Changes ``permissions``, ``password``, ``expireDate``, ``name`` or ``publicUpload`` of a share.

        Raises:
            OcsError: No such share, or nothing to change (400 "Wrong or no update parameter given").
        """
        with self._lock:
            share = self._find(share_id)
            known = {"permissions", "password", "expireDate", "name", "publicUpload"}
            if not known & set(form):
                raise OcsError(400, "Wrong or no update parameter given")
            if "permissions" in form:
                share["permissions"] = _int(form["permissions"], share["permissions"])
            if "publicUpload" in form and share["share_type"] == 3:
                share["permissions"] = 15 if form["publicUpload"].lower() == "true" else 1
            if "password" in form:
                share["password"] = _hash(form["password"]) if form["password"] else None
            if "expireDate" in form:
                share["expiration"] = _expiration(form["expireDate"])
            if "name" in form:
                share["name"] = form["name"]
            self._save()
        return self.render(share, base_url)

    def delete(self, share_id: int) -> None:
        """Removes a share.

        Raises:
            OcsError: No such share.
        """
        with self._lock:
            share = self._find(share_id)
            self._shares.remove(share)
            self._save()

    def by_token(self, token: str) -> dict[str, Any] | None:
        """The public link with ``token``, unless it expired or its item is gone."""
        with self._lock:
            found = next((s for s in self._shares if s["token"] == token), None)
        if found is None or self.resolve(found["path"]) is None:
            return None
        if found["expiration"] and found["expiration"] < time.strftime("%Y-%m-%d 00:00:00"):
            return None
        return found

    def check_password(self, share: Mapping[str, Any], password: str) -> bool:
        """Whether ``password`` opens the link ``share``."""
        return share["password"] is None or hmac.compare_digest(share["password"], _hash(password))

    def cookie(self, share: Mapping[str, Any]) -> str:
        """The value of the cookie that proves a visitor gave the link's password."""
        return hmac.new(self._secret, str(share["id"]).encode(), hashlib.sha256).hexdigest()

    def resolve(self, path: str) -> Path | None:
        """The host path of ``path`` under the user's files, or ``None`` when missing or outside them."""
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            return None
        target = self._files.joinpath(*parts)
        if os.path.islink(target) or not target.exists():
            return None
        return target

    def moved(self, source: str, dest: str) -> None:
        """Keeps shares on their item after a WebDAV ``MOVE`` from ``source`` to ``dest`` (user paths)."""
        source, dest = "/" + source.strip("/"), "/" + dest.strip("/")
        with self._lock:
            for share in self._shares:
                if share["path"] == source or share["path"].startswith(source + "/"):
                    share["path"] = dest + share["path"][len(source):]
            self._save()

    def render(self, share: Mapping[str, Any], base_url: str) -> dict[str, Any]:
        """A share as ownCloud's API writes it."""
        target = self.resolve(share["path"])
        ino = target.stat().st_ino if target is not None else 0
        mime = "httpd/unix-directory" if share["item_type"] == "folder" else (
            mimetypes.guess_type(share["path"])[0] or "application/octet-stream")
        data: dict[str, Any] = {
            "id": share["id"], "share_type": share["share_type"], "uid_owner": OWNER, "displayname_owner": OWNER,
            "permissions": share["permissions"], "stime": share["stime"], "parent": None,
            "expiration": share["expiration"], "token": share["token"], "uid_file_owner": OWNER,
            "displayname_file_owner": OWNER, "additional_info_owner": None, "additional_info_file_owner": None,
            "path": share["path"], "item_type": share["item_type"], "mimetype": mime,
            "storage_id": f"home::{OWNER}", "storage": 1, "item_source": ino, "file_source": ino,
            "file_parent": target.parent.stat().st_ino if target is not None else 0,
            "file_target": "/" + share["path"].rsplit("/", 1)[-1], "share_with": share["share_with"],
            "share_with_displayname": share["share_with"], "share_with_additional_info": None,
            "mail_send": 0, "name": share["name"], "attributes": None,
        }
        if share["share_type"] == 3:
            data["url"] = f"{base_url}/index.php/s/{share['token']}"
            data["share_with"] = "***redacted***" if share["password"] else None
            data["share_with_displayname"] = data["share_with"]
        return data

    def _find(self, share_id: int) -> dict[str, Any]:
        found = next((s for s in self._shares if s["id"] == share_id), None)
        if found is None:
            raise OcsError(404, "Wrong share ID, share doesn't exist")
        return found

    def _save(self) -> None:
        scratch = self._path.with_name(self._path.name + ".tmp")
        scratch.write_text(json.dumps({"next_id": self._next, "shares": self._shares}, indent=1))
        os.replace(scratch, self._path)


def ocs_body(data: Any, status: int, message: str, *, version: int, json_format: bool) -> tuple[int, str, bytes]:
    """An OCS answer: (HTTP status, content type, body). ``status`` 100/200 is success; v1 answers HTTP 200 to
    every handled error, v2 uses the status as HTTP status too."""
    ok = status in (100, 200)
    code = (100 if version == 1 else 200) if ok else status
    http = 200 if (ok or version == 1) else status
    meta = {"status": "ok" if ok else "failure", "statuscode": code, "message": "OK" if ok and not message else message,
            "totalitems": "", "itemsperpage": ""}
    if json_format:
        return http, "application/json; charset=utf-8", json.dumps({"ocs": {"meta": meta, "data": data}}).encode()
    meta_xml = "".join(f"<{k}>{escape(str(v))}</{k}>" for k, v in meta.items())
    return http, "text/xml; charset=UTF-8", (
        f'<?xml version="1.0"?>\n<ocs>\n <meta>{meta_xml}</meta>\n <data>{_xml(data)}</data>\n</ocs>\n').encode()


def _xml(value: Any) -> str:
    if isinstance(value, dict):
        return "".join(f"<{k}>{_xml(v)}</{k}>" if v not in (None, "") else f"<{k}/>" for k, v in value.items())
    if isinstance(value, list):
        return "".join(f"<element>{_xml(v)}</element>" for v in value)
    return escape(str(value)) if value is not None else ""


def folder_zip(folder: Path) -> bytes:
    """A zip of ``folder`` as a public link's folder download (links are not followed)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in sorted(folder.rglob("*")):
            if entry.is_file() and not entry.is_symlink():
                archive.write(entry, f"{folder.name}/{entry.relative_to(folder)}")
    return buffer.getvalue()


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        raise OcsError(400, "Wrong or no update parameter given") from None


def _expiration(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return time.strftime("%Y-%m-%d 00:00:00", time.strptime(value[:10], "%Y-%m-%d"))
    except ValueError:
        raise OcsError(404, "Invalid date, date format must be YYYY-MM-DD") from None


def _hash(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()
