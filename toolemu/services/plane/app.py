"""The Plane emulator's WSGI application: API v1 routes over the state document.

Answers as Plane (v0.2x) does: objects with Plane's field names, cursor-paginated lists (``results``), its error
bodies and codes (404 ``{"error": "The required object does not exist."}``, 410 for a taken project name or
identifier, assignees that are not project members dropped silently). Any ``x-api-key`` is accepted; a request
without one gets Plane's 401. Paths outside ``/api/`` that are web pages (``web``) are served over the same state.
A path or method we do not emulate is recorded in the gap log and answered with Django's 404 page plus
``X-Toolemu-Gap: 1``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from toolemu.services.base import GapLog
from toolemu.services.plane import resources, web, work
from toolemu.services.plane.http import NOT_FOUND_HTML, HttpError, Request, read_request, respond
from toolemu.services.plane.store import Store, is_uuid

SERVICE = "plane"
_WS = r"^/api/v1/workspaces/(?P<slug>[^/]+)"
_PROJECT = _WS + r"/projects/(?P<pid>[^/]+)"
_ISSUES = r"/(?:issues|work-items)"

Handler = Callable[[Store, Request, dict[str, str]], tuple[int, Any]]
_TABLE: tuple[tuple[str, dict[str, Handler]], ...] = (
    (r"^/api/v1/users/me", {"GET": resources.me}),
    (_WS + r"/members", {"GET": resources.workspace_members}),
    (_WS + r"/projects", {"GET": resources.list_projects, "POST": resources.create_project}),
    (_PROJECT, {"GET": resources.get_project, "PATCH": resources.update_project,
                "DELETE": resources.delete_project}),
    (_PROJECT + r"/members", {"GET": resources.list_members, "POST": resources.add_member}),
    (_PROJECT + r"/members/(?P<uid>[^/]+)", {"GET": resources.get_member, "DELETE": resources.remove_member}),
    (_PROJECT + r"/states", {"GET": work.list_states, "POST": work.create_state}),
    (_PROJECT + r"/states/(?P<sid>[^/]+)", {"GET": work.get_state, "PATCH": work.update_state,
                                            "DELETE": work.delete_state}),
    (_PROJECT + r"/labels", {"GET": work.list_labels, "POST": work.create_label}),
    (_PROJECT + r"/labels/(?P<lid>[^/]+)", {"GET": work.get_label, "PATCH": work.update_label,
                                            "DELETE": work.delete_label}),
    (_PROJECT + _ISSUES, {"GET": work.list_issues, "POST": work.create_issue}),
    (_PROJECT + _ISSUES + r"/(?P<iid>[^/]+)", {"GET": work.get_issue, "PATCH": work.update_issue,
                                               "DELETE": work.delete_issue}),
)
ROUTES: tuple[tuple[re.Pattern[str], dict[str, Handler]], ...] = tuple(
    (re.compile(pattern + r"/?$"), methods) for pattern, methods in _TABLE
)
"""Path pattern -> method -> handler (a trailing slash is optional, as Plane's redirects make it)."""
_UUID_PARAMS = ("pid", "uid", "sid", "lid", "iid")
_PAGE_REASONS = {200: "OK", 303: "See Other", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


class PlaneApp:
    """The WSGI application of one Plane instance over ``state_dir``."""

    def __init__(self, state_dir: Path, gaps: GapLog) -> None:
        self.store = Store(state_dir)
        self.gaps = gaps
        self.pages = web.WebPages(self.store)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            request = read_request(environ)
        except HttpError as e:
            return respond(start_response, e.status, e.body)
        if not request.path.startswith("/api/") and self.pages.is_page(request.path):
            page = self.pages.serve(request)
            start_response(f"{page.status} {_PAGE_REASONS.get(page.status, 'Error')}", [
                ("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(page.body))),
                ("Cache-Control", "no-store"), *page.headers])
            return [page.body]
        match, methods = _route(request.path)
        if match is None or request.method not in methods:
            why = "web page not emulated" if not request.path.startswith(
                "/api/") else ("route not emulated" if match is None else f"method {request.method} not emulated")
            if request.method == "HEAD" and match is not None and "GET" in methods:
                why = "method HEAD not emulated"
            self.gaps.record(SERVICE, request.method, request.path, why)
            return respond(start_response, 404, NOT_FOUND_HTML, gap=True, html=True)
        params = {k: v for k, v in match.groupdict().items() if v is not None}
        if any(k in params and not is_uuid(params[k]) for k in _UUID_PARAMS):
            return respond(start_response, 404, NOT_FOUND_HTML, html=True)  # Django's <uuid:...> did not match
        if not request.headers.get("x-api-key", "").strip():
            return respond(start_response, 401, {"detail": "Authentication credentials were not provided."})
        with self.store.lock:
            before = copy.deepcopy(self.store.data) if request.method != "GET" else None
            try:
                if "slug" in params and params["slug"] != self.store.data["workspace"]["slug"]:
                    raise HttpError(403, {"detail": "You do not have permission to perform this action."})
                status, body = methods[request.method](self.store, request, params)
                if before is not None:
                    self.store.save()
            except HttpError as e:  # a refused request changes nothing
                if before is not None:
                    self.store.data = before
                status, body = e.status, e.body
        return respond(start_response, status, body)


def _route(path: str) -> tuple[re.Match[str] | None, dict[str, Handler]]:
    for pattern, methods in ROUTES:
        match = pattern.match(path)
        if match is not None:
            return match, methods
    return None, {}


def make_app(state_dir: Path, gaps: GapLog) -> PlaneApp:
    """Builds the Plane application over ``state_dir`` (a folder ``seed`` wrote)."""
    return PlaneApp(Path(state_dir), gaps)
