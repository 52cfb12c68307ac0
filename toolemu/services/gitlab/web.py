"""GitLab's web pages: sign-in, dashboard, new project, and each project's pages (over the API's own rules).

A page that changes something calls the REST API's handler for that change (:func:`~.api.call`), so the web
UI and the API share one store and one copy of every rule; what a page does, an evaluator sees through the API.
Paths follow GitLab's (``/users/sign_in``, ``/<namespace>/<project>/-/issues/<iid>``). Anonymous visitors see
public projects; anything else redirects to the sign-in page, which accepts any credentials as root (as the
API does). A path that is no page of ours answers None, and the app records it as a gap.
"""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import urlencode

from toolemu.services.gitlab import api, web_issues, web_repo, web_wiki
from toolemu.services.gitlab.http import ApiError, Params, Response
from toolemu.services.gitlab.routing import Ctx, Route, find
from toolemu.services.gitlab.web_page import (
    CSRF_FIELD,
    SESSION_COOKIE,
    Sessions,
    WebRequest,
    esc,
    field,
    form,
    hidden,
    page,
    redirect,
    select,
    textarea,
    url,
)

PROJECT_PAGES: tuple[Route, ...] = (*web_repo.PAGES, *web_issues.PAGES, *web_wiki.PAGES)


def _safe_return(target: str) -> str:
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def sign_in_page(w: WebRequest, *, status: int = 200, flash: str = "") -> Response:
    """``GET /users/sign_in``."""
    fields = (field("Username or primary email", "user[login]", "user_login") +
              field("Password", "user[password]", "user_password", kind="password") +
              hidden("redirect_to", _safe_return(w.text("redirect_to") or "/")))
    return page("Sign in", form("/users/sign_in", fields, "Sign in", "sign-in-button"), w.nav, status=status,
                flash=flash)


def sign_in(w: WebRequest, sessions: Sessions) -> Response:
    """``POST /users/sign_in``: any non-empty login and password sign in (as root, like any API credential)."""
    if not w.text("user[login]") or not w.text("user[password]"):
        return sign_in_page(w, status=401, flash="Invalid login or password.")
    token = sessions.start(1)
    cookie = f"{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax"
    return redirect(_safe_return(w.text("redirect_to") or "/"), [("Set-Cookie", cookie)])


def dashboard(w: WebRequest) -> Response:
    """``GET /`` and ``/dashboard/projects``: every project, newest activity first, with a search box."""
    query = w.text("name").lower()
    projects = sorted(w.ctx.store.state.projects, key=lambda p: p.last_activity_at, reverse=True)
    rows = "".join(
        f'<tr id="project-{p.id}"><td><a href="{url(p.namespace, p.path)}">{esc(p.name)}</a></td>'
        f'<td>{esc(p.path_with_namespace)}</td><td>{esc(p.visibility)}</td>'
        f'<td>{"archived" if p.archived else ""}</td><td>{esc(p.description)}</td></tr>'
        for p in projects if not query or query in p.name.lower() or query in p.path.lower())
    search = ('<form method="get" action="/dashboard/projects">'
              f'{field("Filter by name", "name", "project-filter", w.text("name"))}'
              '<button type="submit" id="project-filter-button">Filter</button></form>')
    table = ('<table id="projects"><tr><th>Name</th><th>Path</th><th>Visibility</th><th>Archived</th>'
             f'<th>Description</th></tr>{rows}</table>')
    return page("Projects", search + table, w.nav)


def new_project_page(w: WebRequest, *, status: int = 200, flash: str = "") -> Response:
    """``GET /projects/new``."""
    fields = (field("Project name", "name", "project_name", w.text("name")) +
              field("Project slug", "path", "project_path", w.text("path")) +
              textarea("Project description (optional)", "description", "project_description", w.text("description")) +
              select("Visibility level", "visibility", "project_visibility",
                     [("private", "Private"), ("internal", "Internal"), ("public", "Public")],
                     w.text("visibility") or "private") +
              '<p><input type="checkbox" id="project_initialize_with_readme" name="initialize_with_readme" '
              'value="true" checked> <label for="project_initialize_with_readme">Initialize repository with a '
              'README</label></p>')
    return page("Create blank project", form("/projects", fields, "Create project", "create-project"), w.nav,
                status=status, flash=flash)


def create_project(w: WebRequest) -> Response:
    """``POST /projects``: the API's project creation; back to the form with GitLab's message on an error."""
    pairs = [(k, v) for k, v in w.pairs("name", "path", "description", "visibility") if v]
    pairs.append(("initialize_with_readme", "true" if w.text("initialize_with_readme") else "false"))
    try:
        created = api.call(w.ctx, "POST", ["projects"], pairs, w.user_id)
    except ApiError as e:
        return new_project_page(w, status=e.status, flash=error_text(e))
    view: dict[str, Any] = json.loads(created.body)
    return redirect(url(*str(view["path_with_namespace"]).split("/", 1)))


def error_text(error: ApiError) -> str:
    """The message of an API error as a sentence for a page."""
    message = error.body.get("message", error.body.get("error", ""))
    if isinstance(message, dict):
        return "; ".join(f"{k} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in message.items())
    return str(message)


class WebPages:
    """The pages of one app; :meth:`answer` returns None for a path that is no page of ours."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.sessions = Sessions()

    def answer(self, method: str, segments: list[str], query: str, body: bytes, content_type: str, cookie: str,
               api_user: int | None) -> Response | None:
        """Answers a web request (GET, HEAD or a form's POST), or None when it names no emulated page."""
        session = self.sessions.user(cookie)
        token, user_id, csrf = session if session is not None else (None, api_user, None)
        params = Params(query, body if method == "POST" else b"", content_type)
        meant = (params.text("_method") or "post").upper() if method == "POST" else method
        w = WebRequest(self.ctx, meant, params, user_id, csrf)
        path = url(*segments)
        if method == "POST" and csrf is not None and segments != ["users", "sign_in"] and (
                not secrets.compare_digest(params.text(CSRF_FIELD) or "", csrf)):
            return page("Unprocessable", '<p id="error-message">Can\'t verify CSRF token authenticity.</p>', w.nav,
                        status=422, flash="Can't verify CSRF token authenticity.")
        try:
            return self._route(w, segments, token, path)
        except ApiError as e:
            if e.status == 404:
                return page("Not Found", '<p id="not-found">The page could not be found or you don\'t have '
                            'permission to view it.</p>', w.nav, status=404)
            return page("Error", f'<p id="error-message">{esc(error_text(e))}</p>'
                        f'<p><a id="go-back" href="{esc(path)}">Back</a></p>', w.nav, status=e.status,
                        flash=error_text(e))

    def _route(self, w: WebRequest, segments: list[str], token: str | None, path: str) -> Response | None:
        get = w.method in ("GET", "HEAD")
        if segments == ["users", "sign_in"]:
            return sign_in_page(w) if get else sign_in(w, self.sessions)
        if segments == ["users", "sign_out"]:
            self.sessions.end(token)
            return redirect("/users/sign_in", [("Set-Cookie", f"{SESSION_COOKIE}=; Path=/; Max-Age=0")])
        if segments in ([], ["dashboard", "projects"], ["projects"], ["projects", "new"]):
            if w.user_id is None:
                return redirect("/users/sign_in?" + urlencode({"redirect_to": path}))
            if segments == ["projects"] and w.method == "POST":
                return create_project(w)
            return new_project_page(w) if segments == ["projects", "new"] else dashboard(w) if get else None
        state = self.ctx.store.state
        if len(segments) < 2 or not any(p.namespace == segments[0] for p in state.projects):
            return None
        project = state.project(f"{segments[0]}/{segments[1]}")
        if project is None or (w.user_id is None and project.visibility != "public") or (
                w.user_id is None and not get):
            if w.user_id is None:
                return redirect("/users/sign_in?" + urlencode({"redirect_to": path}))
            return page("Not Found", '<p id="not-found">The project you were looking for could not be found.</p>',
                        w.nav, status=404)
        found = find(PROJECT_PAGES, w.method, segments[2:])
        if found is None:
            return None
        chosen, args = found
        result: Response = chosen.handler(w, project, args)
        return result

