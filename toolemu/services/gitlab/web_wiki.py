"""GitLab's wiki pages: the page list, a page, a new page and editing one (through the wiki API's handlers)."""

from __future__ import annotations

import json
from typing import Any

from toolemu.services.gitlab import api
from toolemu.services.gitlab.api_wiki import slug_of
from toolemu.services.gitlab.http import Response
from toolemu.services.gitlab.routing import Args, Route, route
from toolemu.services.gitlab.store import ProjectRecord
from toolemu.services.gitlab.web_page import WebRequest, esc, field, form, redirect, select, textarea, url
from toolemu.services.gitlab.web_repo import base, project_page

_FORMATS = [("markdown", "Markdown"), ("rdoc", "RDoc"), ("asciidoc", "AsciiDoc"), ("org", "Org")]


def _wiki(project: ProjectRecord) -> str:
    return f"{base(project)}/-/wikis"


def pages(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/wikis/pages``: every page, by title."""
    listed: list[dict[str, Any]] = json.loads(api.call(w.ctx, "GET", ["wikis"], [("per_page", "100")],
                                                       w.user_id, project).body)
    items = "".join(f'<li class="wiki-page"><a href="{_wiki(project)}/{esc(url(str(p["slug"])).lstrip("/"))}">'
                    f'{esc(p["title"])}</a></li>' for p in listed)
    new = f'<p><a id="new-wiki-page" href="{_wiki(project)}/new">New page</a></p>'
    return project_page(w, project, "Wiki pages", f'{new}<ul id="wiki-pages">{items}</ul>')


def _editor(w: WebRequest, project: ProjectRecord, action: str, method: str, title: str, content: str,
            fmt: str) -> Response:
    fields = (field("Title", "title", "wiki_title", title) +
              select("Format", "format", "wiki_format", _FORMATS, fmt) +
              textarea("Content", "content", "wiki_content", content))
    heading = "New wiki page" if method == "post" else f"Edit {title}"
    return project_page(w, project, heading, form(action, fields, "Create page" if method == "post" else
                                                  "Save changes", "wiki-submit", method=method))


def new_page(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/wikis/new``."""
    return _editor(w, project, _wiki(project), "post", w.text("title"), "", "markdown")


def create(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``POST /-/wikis``: the wiki API's page creation."""
    pairs = w.pairs("title", "content", "format")
    if not w.params.has("content"):
        pairs.append(("content", ""))
    api.call(w.ctx, "POST", ["wikis"], pairs, w.user_id, project)
    return redirect(f"{_wiki(project)}/{url(slug_of(w.text('title'))).lstrip('/')}")


def show(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``GET /-/wikis/<slug>`` (``/edit`` at the end: the editor); a missing page offers to create it."""
    slug = args["slug"]
    editing = slug.endswith("/edit")
    slug = slug.removesuffix("/edit")
    found = {p["slug"]: p for p in json.loads(api.call(w.ctx, "GET", ["wikis"], [("per_page", "100"),
                                                                                ("with_content", "1")],
                                                       w.user_id, project).body)}.get(slug)
    if found is None:
        body = (f'<p id="wiki-missing">This page does not exist yet.</p><p><a id="create-this-page" '
                f'href="{_wiki(project)}/new?title={esc(url(slug).lstrip("/"))}">Create this page</a></p>')
        return project_page(w, project, slug, body, status=404)
    target = f"{_wiki(project)}/{url(slug).lstrip('/')}"
    if editing:
        return _editor(w, project, target, "put", str(found["title"]), str(found["content"]), str(found["format"]))
    body = (f'<p><a id="edit-wiki-page" href="{esc(target)}/edit">Edit</a> '
            f'<a id="all-wiki-pages" href="{_wiki(project)}/pages">All pages</a> '
            f'<a id="new-wiki-page" href="{_wiki(project)}/new">New page</a></p>'
            f'<pre id="wiki-content">{esc(found["content"])}</pre>')
    return project_page(w, project, str(found["title"]), body)


def update(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``PUT /-/wikis/<slug>``: the wiki API's update (a new title renames)."""
    api.call(w.ctx, "PUT", ["wikis", args["slug"]], w.pairs("title", "content", "format"), w.user_id, project)
    slug = slug_of(w.text("title")) if w.text("title") else args["slug"]
    return redirect(f"{_wiki(project)}/{url(slug).lstrip('/')}")


def home(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/wikis``: the home page."""
    return redirect(f"{_wiki(project)}/home")


PAGES: tuple[Route, ...] = (
    route("GET", "-/wikis", home),
    route("GET", "-/wikis/pages", pages),
    route("GET", "-/wikis/new", new_page),
    route("POST", "-/wikis", create),
    route("GET", "-/wikis/*slug", show),
    route("PUT", "-/wikis/*slug", update),
)
