"""The GitLab emulator as one WSGI application: REST API v4, git smart HTTP, raw files, OAuth tokens.

Web pages (sign-in, dashboard, projects, issues, merge requests, wiki, settings) are :mod:`.web`'s. Requests the
emulator does not answer (an endpoint or web page we lack) are recorded in the episode's
:class:`~toolemu.services.base.GapLog` and answered as GitLab answers an unknown route (404), marked with the
header ``X-Toolemu-Gap: 1`` so evaluator helpers can tell a gap from a real "not found".
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolemu.services.base import GapLog
from toolemu.services.gitlab import api_projects, api_repository
from toolemu.services.gitlab.api import GLOBAL_ROUTES, PROJECT_ROUTES
from toolemu.services.gitlab.git_http import SERVICES, ensure_hooks, read_body, run_backend
from toolemu.services.gitlab.http import ApiError, Params, Request, Response, authenticated_user, status_line
from toolemu.services.gitlab.routing import Ctx, check_write, find, project_segments, split_path, visible_project
from toolemu.services.gitlab.store import Store
from toolemu.services.gitlab.web import WebPages

SERVICE = "gitlab"
GAP_HEADER = ("X-Toolemu-Gap", "1")
_DENIED = (b"HTTP Basic: Access denied. If a password was provided for Git authentication, the password was "
           b"incorrect or you're required to use a token instead of a password.\n")


@dataclass
class Streamed:
    """An answer whose body is produced while it is sent (a clone)."""

    status: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Iterable[bytes] = ()


class GitLabApp:
    """WSGI application over one state folder (see :func:`toolemu.services.gitlab.seed.seed`)."""

    def __init__(self, state_dir: Path, gaps: GapLog) -> None:
        self.ctx = Ctx(state_dir, Store(state_dir), gaps)
        self.web = WebPages(self.ctx)
        ensure_hooks(state_dir)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answers one request."""
        method = environ.get("REQUEST_METHOD", "GET").upper()
        try:
            answer: Response | Streamed = self._dispatch(environ, method)
        except ApiError as e:
            answer = Response.json(e.body, e.status, e.headers)
        if isinstance(answer, Streamed):
            start_response(answer.status, answer.headers)
            return answer.body
        body = b"" if method == "HEAD" else answer.body
        headers = [*answer.headers, ("Content-Length", str(len(body)))]
        start_response(status_line(answer.status), headers)
        return [body]

    def _gap(self, method: str, path: str, reason: str, *, api: bool) -> Response:
        self.ctx.gaps.record(SERVICE, method, path, reason)
        if api:
            return Response.json({"error": "404 Not Found"}, 404, [GAP_HEADER])
        return Response(404, b"<!DOCTYPE html><title>Not Found (404)</title>\n",
                        [("Content-Type", "text/html; charset=utf-8"), GAP_HEADER])

    def _dispatch(self, environ: dict[str, Any], method: str) -> Response | Streamed:
        raw = (environ.get("REQUEST_URI") or environ.get("RAW_URI") or "").split("?", 1)[0]
        path = raw or environ.get("PATH_INFO", "/")
        segments = split_path(raw) if raw else [s for s in path.split("/") if s]
        query = environ.get("QUERY_STRING", "")
        user_id = authenticated_user(environ, query)
        if segments[:2] == ["api", "v4"]:
            return self._api(environ, method, path, segments[2:], query, user_id)
        if segments == ["oauth", "token"] and method == "POST":
            return _oauth_token(environ, query)
        if segments[:1] == ["-"] and segments[1:] in (["health"], ["readiness"], ["liveness"]):
            return Response(200, b"GitLab OK", [("Content-Type", "text/plain")])
        if len(segments) >= 3 and (segments[-1] in SERVICES or segments[-2:] == ["info", "refs"]):
            return self._git(environ, method, path, segments, user_id)
        if len(segments) >= 5 and segments[2:4] == ["-", "raw"]:
            project = visible_project(self.ctx.store.state, "/".join(segments[:2]), user_id)
            return api_repository.web_raw(self.ctx, self._request(environ, method, path, query, user_id, b""),
                                          project, segments[4:])
        if method in ("GET", "HEAD", "POST"):
            body = read_body(environ).read() if method == "POST" else b""
            page = self.web.answer(method, segments, query, body, environ.get("CONTENT_TYPE", "") or "",
                                   environ.get("HTTP_COOKIE", "") or "", user_id)
            if page is not None:
                return page
        return self._gap(method, path, "web UI page not emulated", api=False)

    def _request(self, environ: dict[str, Any], method: str, path: str, query: str, user_id: int | None,
                 body: bytes) -> Request:
        host = environ.get("HTTP_HOST") or f"{environ.get('SERVER_NAME', 'localhost')}:{environ.get('SERVER_PORT')}"
        params = Params(query, body, environ.get("CONTENT_TYPE", "") or "")
        return Request(method, path, query, params, f"{environ.get('wsgi.url_scheme', 'http')}://{host}", user_id)

    def _api(self, environ: dict[str, Any], method: str, path: str, rest: list[str], query: str,
             user_id: int | None) -> Response:
        body = read_body(environ).read() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        if rest[:1] == ["projects"] and len(rest) >= 2:
            ident, tail = project_segments(rest[1:])
            found = find(PROJECT_ROUTES, method, tail)
            if found is None:
                return self._gap(method, path, f"API route projects/:id/{'/'.join(tail)} not emulated", api=True)
            chosen, args = found
            request = self._request(environ, method, path, query, user_id, body)
            project = visible_project(self.ctx.store.state, ident, user_id)
            check_write(chosen, request, project)
            result: Response = chosen.handler(self.ctx, request, project, args)
            return result
        found = find(GLOBAL_ROUTES, method, rest)
        if found is None:
            return self._gap(method, path, f"API route {'/'.join(rest)} not emulated", api=True)
        chosen, args = found
        request = self._request(environ, method, path, query, user_id, body)
        check_write(chosen, request, None)
        answer: Response = chosen.handler(self.ctx, request, args)
        return answer

    def _git(self, environ: dict[str, Any], method: str, path: str, segments: list[str],
             user_id: int | None) -> Response | Streamed:
        tail = 2 if segments[-2:] == ["info", "refs"] else 1
        service_path = "/".join(segments[-tail:])
        repo_part = segments[:-tail]
        name = repo_part[-1].removesuffix(".git")
        wiki = name.endswith(".wiki")
        name = name.removesuffix(".wiki")
        ident = "/".join([*repo_part[:-1], name])
        service = service_path if tail == 1 else _query_service(environ.get("QUERY_STRING", ""))
        if service not in SERVICES or (tail == 1 and method != "POST"):
            return Response(403, b"Unsupported git request\n", [("Content-Type", "text/plain")])
        pushing = service == "git-receive-pack"
        challenge = [("WWW-Authenticate", 'Basic realm="GitLab"'), ("Content-Type", "text/plain")]
        state = self.ctx.store.state
        project = state.project(ident)
        if user_id is None and (pushing or project is None or project.visibility != "public"):
            return Response(401, _DENIED, challenge)
        if project is None and pushing and not wiki and len(repo_part) == 2 and repo_part[0] == "root" and (
            api_projects.valid_project_path(name)
        ):
            project = api_projects.new_project(self.ctx, name=name, path=name, description="", visibility="private",
                                               default_branch="main", user=user_id or 1, readme=False)
        if project is None:
            return Response(404, b"The project you were looking for could not be found or you don't have "
                                 b"permission to view it.\n", [("Content-Type", "text/plain")])
        status, headers, body = run_backend(self.ctx, environ, project, wiki=wiki, service_path=service_path,
                                            user_id=user_id)
        return Streamed(status, headers, body)


def _query_service(query: str) -> str:
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key == "service":
            return value
    return ""


def _oauth_token(environ: dict[str, Any], query: str) -> Response:
    """``POST /oauth/token``: any grant with any credentials gets a bearer token (accepted like any other)."""
    body = read_body(environ).read()
    params = Params(query, body, environ.get("CONTENT_TYPE", "") or "")
    grant = params.text("grant_type")
    if grant not in ("password", "authorization_code", "refresh_token", "client_credentials"):
        return Response.json({"error": "unsupported_grant_type",
                              "error_description": "The authorization grant type is not supported."}, 400)
    return Response.json({"access_token": secrets.token_hex(32), "token_type": "Bearer", "expires_in": 7200,
                          "refresh_token": secrets.token_hex(32), "scope": params.text("scope", "api"),
                          "created_at": int(time.time())})


def make_app(state_dir: Path, gaps: GapLog) -> GitLabApp:
    """Builds the GitLab emulator over ``state_dir`` (written by ``seed``)."""
    return GitLabApp(state_dir, gaps)
