"""ownCloud's WebDAV endpoint over the state folder's file tree, on ``wsgidav`` (RFC 4918: PROPFIND, PROPPATCH,
GET/HEAD with ranges, PUT, MKCOL, DELETE, COPY, MOVE, LOCK/UNLOCK), shaped the way ownCloud (Sabre/DAV) answers.

What is ownCloud's here: hrefs percent-encoded as Sabre encodes them, the ``oc:`` properties clients ask for
(``fileid``, ``id``, ``permissions``, ``size``), quota properties, ``OC-FileId``/``OC-ETag`` on uploads,
``X-OC-MTime``, ``501`` for a GET of a folder, and Sabre's XML error bodies.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from wsgidav import util as dav_util
from wsgidav.dav_error import DAVError, get_http_status_string
from wsgidav.dav_provider import _DAVResource
from wsgidav.fs_dav_provider import FileResource, FilesystemProvider, FolderResource
from wsgidav.mw.base_mw import BaseMiddleware
from wsgidav.request_resolver import RequestResolver
from wsgidav.wsgidav_app import WsgiDAVApp

OC_NS = "http://owncloud.org/ns"
SABRE_NS = "http://sabredav.org/ns"
# ownCloud's prefixes in every multistatus this process writes (wsgidav builds them with ElementTree).
ElementTree.register_namespace("d", "DAV:")
ElementTree.register_namespace("oc", OC_NS)
ElementTree.register_namespace("s", SABRE_NS)
INSTANCE_ID = "oc4ab2c9d8e1f0"
"""ownCloud's instance id, part of every ``oc:id``."""
QUOTA_BYTES = 1 << 30
"""The user's quota: uploads past it answer 507 as ownCloud's do (and an agent cannot fill the host's disk)."""

_EMPTY_ANSWERS = frozenset({"PUT", "MKCOL", "MOVE", "COPY", "DELETE"})
_SABRE_SAFE = re.compile(r"[^A-Za-z0-9_\-.~()/:@]")
_EXCEPTIONS = {400: "BadRequest", 401: "NotAuthenticated", 403: "Forbidden", 404: "NotFound",
               405: "MethodNotAllowed", 409: "Conflict", 412: "PreconditionFailed", 415: "UnsupportedMediaType",
               423: "Locked", 501: "NotImplemented", 507: "InsufficientStorage"}


def sabre_quote(path: str) -> str:
    """Percent-encodes ``path`` as Sabre/DAV does in hrefs (``/``, ``:``, ``@``, ``(``, ``)``, ``~`` stay).

    Examples:
        >>> sabre_quote("/remote.php/webdav/Human Resources Team/a+b (1).csv")
        '/remote.php/webdav/Human%20Resources%20Team/a%2bb%20(1).csv'
    """
    return _SABRE_SAFE.sub(lambda m: "".join(f"%{b:02x}" for b in m.group(0).encode()), path)


def _file_id(stat_ino: int) -> str:
    return str(stat_ino)


def _oc_properties(res: Any) -> list[str]:
    return [f"{{{OC_NS}}}id", f"{{{OC_NS}}}fileid", f"{{{OC_NS}}}permissions", f"{{{OC_NS}}}size"]


def _oc_value(res: Any, name: str, size: Callable[[], int]) -> str | None:
    ino = res.file_stat.st_ino
    if name == f"{{{OC_NS}}}fileid":
        return _file_id(ino)
    if name == f"{{{OC_NS}}}id":
        return f"{ino:08d}{INSTANCE_ID}"
    if name == f"{{{OC_NS}}}permissions":
        return "RDNVCK" if res.is_collection else "RDNVW"
    if name == f"{{{OC_NS}}}size":
        return str(size())
    return None


class _OcResource(_DAVResource):  # type: ignore[misc]
    """What ownCloud's files and folders share: Sabre's hrefs, the ``oc:`` properties, no creation date or name."""

    def oc_size(self) -> int:
        """``oc:size``: a file's length, a folder's bytes below it."""
        raise NotImplementedError

    def get_href(self) -> str:
        return sabre_quote(self.provider.mount_path + self.provider.share_path + self.get_preferred_path())

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)
        return names if is_allprop else [*names, *_oc_properties(self)]

    def get_property_value(self, name: str) -> Any:
        value = _oc_value(self, name, self.oc_size)
        return value if value is not None else super().get_property_value(name)

    def get_creation_date(self) -> None:
        return None  # ownCloud does not report one

    def get_display_name(self) -> None:
        return None


class _File(_OcResource, FileResource):  # type: ignore[misc]
    def oc_size(self) -> int:
        return int(self.file_stat.st_size)


class _Folder(_OcResource, FolderResource):  # type: ignore[misc]
    def oc_size(self) -> int:
        return tree_bytes(Path(self._file_path))

    def get_used_bytes(self) -> int:
        return tree_bytes(Path(self._file_path))

    def get_available_bytes(self) -> int:
        return max(0, QUOTA_BYTES - tree_bytes(Path(self.provider.root_folder_path)))

    def get_etag(self) -> str:
        return f"{self.file_stat.st_ino:x}{int(self.file_stat.st_mtime_ns):x}"

    def get_member(self, name: str) -> Any:
        return _ours(super().get_member(name), self.environ)


def _ours(res: Any, environ: dict[str, Any]) -> Any:
    """wsgidav's file or folder resource as ownCloud's (anything else as it is)."""
    if isinstance(res, FolderResource):
        return _Folder(res.path, environ, res._file_path)
    if isinstance(res, FileResource):
        return _File(res.path, environ, res._file_path)
    return res


class _Provider(FilesystemProvider):  # type: ignore[misc]
    def get_resource_inst(self, path: str, environ: dict[str, Any]) -> Any:
        return _ours(super().get_resource_inst(path, environ), environ)


def tree_bytes(top: Path) -> int:
    """Bytes of the regular files under ``top`` (links are not followed)."""
    total = 0
    for entry in top.rglob("*"):
        if entry.is_file() and not entry.is_symlink():
            total += entry.lstat().st_size
    return total


class _OwnCloudShape(BaseMiddleware):  # type: ignore[misc]
    """Answers DAV errors with Sabre's XML body, refuses a GET of a folder (501) and uploads past the quota (507),
    and adds ``OC-FileId``/``OC-ETag`` to upload answers. Other exceptions propagate (the server records them)."""

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        method = environ["REQUEST_METHOD"]
        provider = environ.get("wsgidav.provider")
        try:
            if provider is not None and method in ("GET", "HEAD"):
                res = provider.get_resource_inst(environ["PATH_INFO"], environ)
                if res is not None and res.is_collection:
                    raise DAVError(501, "GET is only allowed on files")
            if provider is not None and method == "PUT":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                if length and tree_bytes(Path(provider.root_folder_path)) + length > QUOTA_BYTES:
                    raise DAVError(507, "Insufficient space in the user's quota")
            # wsgidav answers from a generator: its errors come with the first chunk, before any header is sent.
            sub = dav_util.SubAppStartResponse()
            body = self.next_app(environ, sub)
            chunks = iter(body)
            first = next(chunks, None)
        except DAVError as e:
            yield from _sabre_error(e, start_response, method == "HEAD")
            return
        try:
            headers = _upload_headers(environ, sub.status, sub.response_headers)
            start_response(sub.status, headers, sub.exc_info)
            if headers is sub.response_headers:
                if first is not None:
                    yield first
                yield from chunks
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()


def _upload_headers(environ: dict[str, Any], status: str, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """ownCloud's headers for a successful change (its body is empty: a new list), with ``OC-FileId`` and
    ``OC-ETag`` for an upload; else ``headers`` as given."""
    method = environ["REQUEST_METHOD"]
    provider = environ.get("wsgidav.provider")
    if method not in _EMPTY_ANSWERS or status[:1] != "2" or provider is None:
        return headers
    headers = [(k, v) for k, v in headers if k.lower() not in ("content-type", "content-length")]
    headers.append(("Content-Length", "0"))
    res = provider.get_resource_inst(environ["PATH_INFO"], environ) if method == "PUT" else None
    if res is not None:
        headers += [("OC-FileId", f"{res.file_stat.st_ino:08d}{INSTANCE_ID}"), ("OC-ETag", f'"{res.get_etag()}"')]
        if environ.get("HTTP_X_OC_MTIME"):
            headers.append(("X-OC-MTime", "accepted"))
    return headers


def _sabre_error(e: DAVError, start_response: Callable[..., Any], is_head: bool) -> list[bytes]:
    code = int(e.value)
    name = _EXCEPTIONS.get(code, "Exception")
    message = e.context_info or ""
    body = (f'<?xml version="1.0" encoding="utf-8"?>\n<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">\n'
            f"  <s:exception>Sabre\\DAV\\Exception\\{name}</s:exception>\n"
            f"  <s:message>{escape(message)}</s:message>\n</d:error>\n").encode()
    headers = [("Content-Type", "application/xml; charset=utf-8"), ("Content-Length", str(len(body))),
               *(e.add_headers or [])]
    start_response(get_http_status_string(e), headers)
    return [b""] if is_head or code in (204, 304) else [body]


def provider(files: Path) -> Any:
    """A provider of the folder ``files`` for one mount (a provider knows its own mount path)."""
    return _Provider(str(files), fs_opts={"follow_symlinks": False})


def dav_app(files: Path, mounts: Iterable[str]) -> WsgiDAVApp:
    """Builds the WebDAV application serving the folder ``files`` at each of ``mounts`` (``/remote.php/webdav``)."""
    config = {
        "provider_mapping": {m: provider(files) for m in mounts},
        "http_authenticator": {"domain_controller": None},
        "simple_dc": {"user_mapping": {"*": True}},
        "middleware_stack": [_OwnCloudShape, RequestResolver],
        "verbose": 0,
        "logging": {"enable": False},
        "dir_browser": {"enable": False},
        "lock_storage": True,
        "property_manager": True,
        "honor_mtime_header": True,
        "add_header_MS_Author_Via": False,
        "suppress_version_info": True,
    }
    return WsgiDAVApp(config)


def now_rfc1123() -> str:
    """The current time as HTTP writes it."""
    return str(dav_util.get_rfc1123_time(time.time()))
