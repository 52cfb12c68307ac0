"""The Plane emulator's web pages, server-rendered, over the same state as API v1.

A sign-in page at ``/`` accepts any email and password and sets a session cookie; then, under the workspace slug:
``/<slug>/projects/`` (list), ``projects/new/``, ``projects/<id>/issues/`` (with state and assignees),
``issues/new/``, ``issues/<id>/`` (state and assignee forms), ``settings/members/`` (add, remove) and
``settings/`` with ``settings/delete/`` (a confirm form). Every change goes through the API's own handlers, so
a page does what the API does (an assignee who is not a project member is dropped) and the evaluators, reading
the API, see it. A path that is none of these is not a page: the caller records it as a gap.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolemu.services.plane import resources, web_html, work
from toolemu.services.plane.http import HttpError, Request
from toolemu.services.plane.store import Obj, Store, is_uuid

COOKIE = "session-id"
"""The session cookie's name (Plane's)."""
_PROJECT = r"^/(?P<slug>[^/]+)/projects/(?P<pid>[^/]+)"
Handler = Callable[[Store, Request, dict[str, str]], tuple[int, Any]]


@dataclass(frozen=True, slots=True)
class Page:
    """One answer: a status, extra headers and an HTML body."""

    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


def redirect(location: str, *headers: tuple[str, str]) -> Page:
    """A 303 to ``location`` (after a form's POST, as a browser expects)."""
    return Page(303, b"", (("Location", location), *headers))


@dataclass
class WebPages:
    """The pages of one Plane instance; sessions live in memory for the instance's life."""

    store: Store
    sessions: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def is_page(self, path: str) -> bool:
        """Whether ``path`` is one of the emulated pages (anything else is a gap)."""
        return _match(path) is not None

    def serve(self, request: Request) -> Page:
        """Answers a request for one of the pages (``is_page`` holds for its path)."""
        found = _match(request.path)
        assert found is not None
        name, params = found
        if name == "sign_in":
            return self._sign_in(request)
        if name == "do_sign_in":
            return self._do_sign_in(request)
        if name == "sign_out":
            return self._sign_out(request)
        user = self._user(request)
        if user is None:
            return redirect("/?" + urllib.parse.urlencode({"next_path": request.path}))
        slug = self.store.data["workspace"]["slug"]
        if params.get("slug") != slug or any(k in params and not is_uuid(params[k]) for k in ("pid", "iid", "uid")):
            return _not_found(user, slug)
        view = _VIEWS.get((name, request.method))
        if view is None:
            return Page(405, web_html.layout("Method not allowed", "", user=user, workspace=slug),
                        (("Allow", "GET" if (name, "GET") in _VIEWS else "POST"),))
        with self.store.lock:
            try:
                return view(self.store, request, params, user)
            except HttpError as e:
                if e.status != 404:
                    raise
                return _not_found(user, slug)

    def _user(self, request: Request) -> str | None:
        token = _cookies(request).get(COOKIE, "")
        with self._lock:
            return self.sessions.get(token)

    def _sign_in(self, request: Request) -> Page:
        if request.method != "GET":
            return Page(405, web_html.layout("Method not allowed", ""), (("Allow", "GET"),))
        if self._user(request) is not None:
            return redirect(f"/{self.store.data['workspace']['slug']}/projects/")
        return Page(200, web_html.layout("Sign in to Plane", web_html.sign_in(request.query.get("next_path", ""))))

    def _do_sign_in(self, request: Request) -> Page:
        if request.method != "POST":
            return redirect("/")
        form = _form(request)
        email = _one(form, "email").strip()
        next_path = _one(form, "next_path")
        if not email:
            body = web_html.sign_in(next_path, "Enter your email to sign in.")
            return Page(400, web_html.layout("Sign in to Plane", body))
        token = secrets.token_urlsafe(24)
        with self._lock:
            self.sessions[token] = email
        if not (next_path.startswith("/") and not next_path.startswith("//") and "\\" not in next_path
                and _match(next_path)):
            next_path = f"/{self.store.data['workspace']['slug']}/projects/"
        return redirect(next_path, ("Set-Cookie", f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax"))

    def _sign_out(self, request: Request) -> Page:
        with self._lock:
            self.sessions.pop(_cookies(request).get(COOKIE, ""), None)
        return redirect("/", ("Set-Cookie", f"{COOKIE}=; Path=/; Max-Age=0"))


_PATHS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((name, re.compile(pattern + "/?$")) for name, pattern in (
    ("sign_in", r"^"),
    ("do_sign_in", r"^/auth/sign-in"),
    ("sign_out", r"^/auth/sign-out"),
    ("projects", r"^/(?P<slug>[^/]+)/projects"),
    ("new_project", r"^/(?P<slug>[^/]+)/projects/new"),
    ("issues", _PROJECT + r"/issues"),
    ("new_issue", _PROJECT + r"/issues/new"),
    ("issue", _PROJECT + r"/issues/(?P<iid>[^/]+)"),
    ("issue_state", _PROJECT + r"/issues/(?P<iid>[^/]+)/state"),
    ("issue_assignees", _PROJECT + r"/issues/(?P<iid>[^/]+)/assignees"),
    ("members", _PROJECT + r"/settings/members"),
    ("remove_member", _PROJECT + r"/settings/members/(?P<uid>[^/]+)/remove"),
    ("settings", _PROJECT + r"/settings"),
    ("delete_project", _PROJECT + r"/settings/delete"),
))


def _match(path: str) -> tuple[str, dict[str, str]] | None:
    for name, pattern in _PATHS:
        match = pattern.match(path)
        if match is not None and not (name == "issue" and match["iid"] == "new"):
            return name, match.groupdict()
    return None


def _cookies(request: Request) -> dict[str, str]:
    pairs = (part.strip().split("=", 1) for part in request.headers.get("cookie", "").split(";") if "=" in part)
    return {k: v for k, v in pairs}


def _form(request: Request) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)


def _one(form: dict[str, list[str]], key: str) -> str:
    return form.get(key, [""])[0]


def _not_found(user: str, slug: str) -> Page:
    body = '<p id="not-found">This page does not exist, or you have no access to it.</p>'
    return Page(404, web_html.layout("Not found", body, user=user, workspace=slug))


def _change(store: Store, handler: Handler, params: dict[str, str], data: dict[str, Any]) -> str:
    """Runs an API handler on ``data`` (store lock held); returns its error as one line, or ``""`` when done.

    A refused change leaves the state as it was; a done one is written through, as the API's are.
    """
    before = copy.deepcopy(store.data)
    request = Request("POST", "", {}, {"content-type": "application/json"}, json.dumps(data).encode())
    try:
        handler(store, request, params)
    except HttpError as e:
        store.data = before
        if e.status == 404:
            raise
        return _message(e.body)
    store.save()
    return ""


def _message(body: Any) -> str:
    if isinstance(body, dict):
        return "; ".join(_message(v) for v in body.values())
    if isinstance(body, list):
        return "; ".join(_message(v) for v in body)
    return str(body)


def _page(store: Store, title: str, body: str, user: str, status: int = 200) -> Page:
    return Page(status, web_html.layout(title, body, user=user, workspace=store.data["workspace"]["slug"]))


def _base(store: Store, pid: str = "") -> str:
    slug = store.data["workspace"]["slug"]
    return f"/{slug}/projects/{pid}/" if pid else f"/{slug}/projects/"


def _members_of(store: Store, project: Obj) -> list[Obj]:
    return [store.data["users"][u] for u in project["members"] if u in store.data["users"]]


View = Callable[[Store, Request, dict[str, str], str], Page]


def _projects(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    rows = sorted(store.data["projects"].values(), key=lambda p: (p["sort_order"], p["created_at"]))
    return _page(store, "Projects", web_html.projects(params["slug"], rows), user)


def _new_project_form(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    return _page(store, "Create project", web_html.new_project(params["slug"], {}), user)


def _create_project(store: Store, request: Request, params: dict[str, str], user: str) -> Page:
    form = {k: v[0] for k, v in _form(request).items() if v}
    network = 0 if form.get("network") == "0" else 2
    data = {"name": form.get("name", ""), "identifier": form.get("identifier", ""),
            "description": form.get("description", ""), "network": network}
    before = set(store.data["projects"])
    error = _change(store, resources.create_project, params, data)
    if error:
        return _page(store, "Create project", web_html.new_project(params["slug"], form, error), user, 400)
    (pid,) = set(store.data["projects"]) - before
    return redirect(_base(store, pid) + "issues/")


def _issues(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    project = resources.find_project(store, params["pid"])
    body = web_html.issues(params["slug"], project, store.project_issues(project["id"]), store.data["states"],
                           store.data["users"])
    return _page(store, f"{project['name']}: Issues", body, user)


def _issue_page(store: Store, params: dict[str, str], user: str, error: str = "") -> Page:
    issue = work.get_issue(store, Request("GET", "", {}, {}, b""), params)[1]
    project = store.data["projects"][issue["project"]]
    body = web_html.issue_detail(params["slug"], project, issue, store.project_states(project["id"]),
                                 _members_of(store, project), store.data["users"], error)
    return _page(store, issue["name"], body, user, 400 if error else 200)


def _issue(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    return _issue_page(store, params, user)


def _edit_issue(field_name: str) -> View:
    def view(store: Store, request: Request, params: dict[str, str], user: str) -> Page:
        form = _form(request)
        value: Any = form.get("assignees", []) if field_name == "assignees" else _one(form, field_name)
        error = _change(store, work.update_issue, params, {field_name: value})
        if error:
            return _issue_page(store, params, user, error)
        return redirect(_base(store, params["pid"]) + f"issues/{params['iid']}/")
    return view


def _new_issue_page(store: Store, params: dict[str, str], user: str, form: dict[str, list[str]],
                    error: str = "") -> Page:
    project = resources.find_project(store, params["pid"])
    body = web_html.new_issue(params["slug"], project, store.project_states(project["id"]),
                              _members_of(store, project), form, error)
    return _page(store, f"{project['name']}: New issue", body, user, 400 if error else 200)


def _new_issue_form(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    return _new_issue_page(store, params, user, {})


def _create_issue(store: Store, request: Request, params: dict[str, str], user: str) -> Page:
    form = _form(request)
    data: dict[str, Any] = {"name": _one(form, "name"), "assignees": form.get("assignees", []),
                            "priority": _one(form, "priority") or "none"}
    if _one(form, "description"):
        data["description_html"] = f"<p>{web_html.esc(_one(form, 'description'))}</p>"
    if _one(form, "state"):
        data["state"] = _one(form, "state")
    before = set(store.data["issues"])
    error = _change(store, work.create_issue, params, data)
    if error:
        return _new_issue_page(store, params, user, form, error)
    (iid,) = set(store.data["issues"]) - before
    return redirect(_base(store, params["pid"]) + f"issues/{iid}/")


def _members_page(store: Store, params: dict[str, str], user: str, error: str = "") -> Page:
    project = resources.find_project(store, params["pid"])
    users = store.data["users"]
    candidates = [users[u] for u in store.data["workspace_members"] if u in users and u not in project["members"]]
    body = web_html.members(params["slug"], project, _members_of(store, project), candidates, error)
    return _page(store, f"{project['name']}: Members", body, user, 400 if error else 200)


def _members(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    return _members_page(store, params, user)


def _add_member(store: Store, request: Request, params: dict[str, str], user: str) -> Page:
    form = _form(request)
    role = _one(form, "role")
    data = {"member_id": _one(form, "member_id"), "role": int(role) if role.isdigit() else role}
    error = _change(store, resources.add_member, params, data)
    if error:
        return _members_page(store, params, user, error)
    return redirect(_base(store, params["pid"]) + "settings/members/")


def _remove_member(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    error = _change(store, resources.remove_member, params, {})
    if error:
        return _members_page(store, params, user, error)
    return redirect(_base(store, params["pid"]) + "settings/members/")


def _settings(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    project = resources.find_project(store, params["pid"])
    return _page(store, f"{project['name']}: Settings", web_html.settings(params["slug"], project), user)


def _delete_form(store: Store, _request: Request, params: dict[str, str], user: str) -> Page:
    project = resources.find_project(store, params["pid"])
    return _page(store, f"Delete {project['name']}", web_html.delete_confirm(params["slug"], project), user)


def _delete_project(store: Store, request: Request, params: dict[str, str], user: str) -> Page:
    project = resources.find_project(store, params["pid"])
    if _one(_form(request), "confirm_name").strip() != project["name"]:
        body = web_html.delete_confirm(params["slug"], project, "The project name does not match.")
        return _page(store, f"Delete {project['name']}", body, user, 400)
    _change(store, resources.delete_project, params, {})
    return redirect(_base(store))


_VIEWS: dict[tuple[str, str], View] = {
    ("projects", "GET"): _projects,
    ("new_project", "GET"): _new_project_form,
    ("new_project", "POST"): _create_project,
    ("issues", "GET"): _issues,
    ("new_issue", "GET"): _new_issue_form,
    ("new_issue", "POST"): _create_issue,
    ("issue", "GET"): _issue,
    ("issue_state", "POST"): _edit_issue("state"),
    ("issue_assignees", "POST"): _edit_issue("assignees"),
    ("members", "GET"): _members,
    ("members", "POST"): _add_member,
    ("remove_member", "POST"): _remove_member,
    ("settings", "GET"): _settings,
    ("delete_project", "GET"): _delete_form,
    ("delete_project", "POST"): _delete_project,
}
"""(page, method) -> view; each runs with the store's lock held."""
