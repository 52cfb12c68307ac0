"""What the GitLab web pages share: escaping, the page layout, forms, redirects and sign-in sessions.

Pages are plain server-rendered HTML (no script): every control has a stable ``id``, a ``<label>`` and the
``name`` its form posts. Forms post with a hidden ``_method`` for PUT and DELETE, as Rails' forms do, and with the
session's ``authenticity_token``: a signed-in POST without it is refused (422), as GitLab refuses a cross-site one.
"""

from __future__ import annotations

import html
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import quote

from toolemu.services.gitlab.http import Params, Response
from toolemu.services.gitlab.routing import Ctx
from toolemu.services.gitlab.store import ProjectRecord

SESSION_COOKIE = "_gitlab_session"
"""GitLab's session cookie name."""
CSRF_FIELD = "authenticity_token"
"""The form field that carries the session's CSRF token (Rails')."""
_CSRF_SLOT = "<!--csrf-->"
"""Where :func:`page` puts the token into each POST form (escaped text can never contain it)."""


def esc(value: object) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe inside an attribute)."""
    return html.escape(str(value), quote=True)


def url(*parts: str) -> str:
    """An absolute path from segments, each percent-encoded (``/`` inside a part is kept as a separator)."""
    return "/" + "/".join(quote(p, safe="/") for p in parts if p)


class Sessions:
    """Signed-in browser sessions of one app: cookie value -> (user id, CSRF token)."""

    def __init__(self) -> None:
        self._users: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def start(self, user_id: int) -> str:
        """A new session for ``user_id``; returns its cookie value."""
        token = secrets.token_hex(16)
        with self._lock:
            self._users[token] = (user_id, secrets.token_hex(16))
        return token

    def end(self, token: str | None) -> None:
        """Forgets a session."""
        with self._lock:
            self._users.pop(token or "", None)

    def user(self, cookie_header: str) -> tuple[str, int, str] | None:
        """(session token, user id, CSRF token) from a ``Cookie`` header; None when not signed in."""
        try:
            jar = SimpleCookie(cookie_header)
        except CookieError:
            return None
        morsel = jar.get(SESSION_COOKIE)
        if morsel is None:
            return None
        with self._lock:
            found = self._users.get(morsel.value)
        return (morsel.value, *found) if found is not None else None


@dataclass(frozen=True, slots=True)
class Nav:
    """Who is looking and at what project (for the header and the project's sidebar)."""

    username: str | None
    project: ProjectRecord | None = None
    csrf: str | None = None
    """The session's CSRF token, put into every POST form."""


_STYLE = ("body{font-family:sans-serif;margin:0}header{background:#292961;color:#fff;padding:8px}"
          "header a{color:#fff;margin-right:12px}main{display:flex}nav.sidebar{min-width:180px;padding:8px;"
          "background:#f4f4f4}nav.sidebar a{display:block;padding:2px 0}section.content{padding:12px;flex:1}"
          "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px}.flash{padding:8px;"
          "background:#fdd}pre{background:#fafafa;padding:8px;white-space:pre-wrap}")


def _sidebar(project: ProjectRecord) -> str:
    base = url(project.namespace, project.path)
    links = [("nav-project", "", "Project overview"), ("nav-repository", "/-/tree", "Repository"),
             ("nav-branches", "/-/branches", "Branches"), ("nav-issues", "/-/issues", "Issues"),
             ("nav-merge-requests", "/-/merge_requests", "Merge requests"), ("nav-wiki", "/-/wikis/home", "Wiki"),
             ("nav-members", "/-/project_members", "Members"), ("nav-settings", "/edit", "Settings"),
             ("nav-settings-repository", "/-/settings/repository", "Repository settings")]
    items = "".join(f'<a id="{i}" href="{base}{esc(tail)}">{esc(text)}</a>' for i, tail, text in links)
    return f'<nav class="sidebar" aria-label="Project navigation"><strong>{esc(project.name)}</strong>{items}</nav>'


def page(title: str, body: str, nav: Nav, *, status: int = 200, flash: str = "") -> Response:
    """A full HTML page: header (projects, new project, sign out), the project sidebar, then ``body``."""
    if nav.username is None:
        account = '<a id="sign-in-link" href="/users/sign_in">Sign in</a>'
    else:
        account = (f'<span id="current-user">{esc(nav.username)}</span> '
                   f'<form method="post" action="/users/sign_out" style="display:inline">{_CSRF_SLOT}'
                   '<button id="sign-out" type="submit">Sign out</button></form>')
    header = (f'<header><a id="nav-home" href="/">GitLab</a><a id="nav-projects" href="/dashboard/projects">Projects'
              f'</a><a id="nav-new-project" href="/projects/new">New project</a>{account}</header>')
    side = _sidebar(nav.project) if nav.project is not None else ""
    note = f'<div class="flash" id="flash-alert" role="alert">{esc(flash)}</div>' if flash else ""
    doc = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · GitLab</title>'
           f'<style>{_STYLE}</style></head><body>{header}<main>{side}<section class="content">{note}'
           f'<h1 id="page-title">{esc(title)}</h1>{body}</section></main></body></html>')
    doc = doc.replace(_CSRF_SLOT, hidden(CSRF_FIELD, nav.csrf) if nav.csrf else "")
    return Response(status, doc.encode(), [("Content-Type", "text/html; charset=utf-8")])


def redirect(location: str, headers: Iterable[tuple[str, str]] = ()) -> Response:
    """A 302 to ``location`` (a path on this server)."""
    return Response(302, b"", [("Location", location), *headers])


def form(action: str, fields: str, button: str, button_id: str, *, method: str = "post") -> str:
    """A form posting to ``action``; ``method`` other than post travels as Rails' hidden ``_method``."""
    hidden = f'<input type="hidden" name="_method" value="{esc(method)}">' if method != "post" else ""
    return (f'<form method="post" action="{esc(action)}">{_CSRF_SLOT}{hidden}{fields}'
            f'<button type="submit" id="{esc(button_id)}">{esc(button)}</button></form>')


def field(label: str, name: str, ident: str, value: str = "", *, kind: str = "text") -> str:
    """A labelled input."""
    return (f'<p><label for="{esc(ident)}">{esc(label)}</label> '
            f'<input type="{esc(kind)}" id="{esc(ident)}" name="{esc(name)}" value="{esc(value)}"></p>')


def textarea(label: str, name: str, ident: str, value: str = "") -> str:
    """A labelled text area."""
    return (f'<p><label for="{esc(ident)}">{esc(label)}</label><br>'
            f'<textarea id="{esc(ident)}" name="{esc(name)}" rows="8" cols="80">{esc(value)}</textarea></p>')


def select(label: str, name: str, ident: str, options: Iterable[tuple[str, str]], chosen: str = "") -> str:
    """A labelled drop-down of (value, text) options."""
    opts = "".join(f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(t)}</option>'
                   for v, t in options)
    return (f'<p><label for="{esc(ident)}">{esc(label)}</label> '
            f'<select id="{esc(ident)}" name="{esc(name)}">{opts}</select></p>')


def hidden(name: str, value: str) -> str:
    """A hidden input."""
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


@dataclass(frozen=True, slots=True)
class WebRequest:
    """What a page handler sees: the emulator, the signed-in user and the query and form parameters."""

    ctx: Ctx
    method: str
    """The method the form meant (``_method`` of a POST, else the request's)."""
    params: Params
    user_id: int | None
    csrf: str | None = None
    """The session's CSRF token (None without a browser session)."""

    @property
    def nav(self) -> Nav:
        """The header of a page that shows no project."""
        return self.nav_in(None)

    def nav_in(self, project: ProjectRecord | None) -> Nav:
        """The header (and sidebar) of a page inside ``project``."""
        return Nav(self.username, project, self.csrf)

    @property
    def username(self) -> str | None:
        """The signed-in user's name, None when anonymous."""
        user = self.ctx.store.state.user(self.user_id) if self.user_id is not None else None
        return user.username if user is not None else None

    def pairs(self, *names: str) -> list[tuple[str, str]]:
        """The form's values of ``names`` (a ``name[]`` list as repeated pairs), for an API call."""
        out: list[tuple[str, str]] = []
        for name in names:
            key = name.removesuffix("[]")
            value = self.params.raw(key)
            if isinstance(value, list):
                out += [(name, str(v)) for v in value]
            elif value is not None:
                out.append((key, str(value)))
        return out

    def text(self, name: str) -> str:
        """A form or query value ('' when absent)."""
        return self.params.text(name) or ""
