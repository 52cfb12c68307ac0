"""GitLab API routes for a project's wiki, stored as GitLab stores it: ``<slug>.<ext>`` files in ``<path>.wiki.git``.

Pages written through the API and pages pushed with git are the same files, so each sees the other's changes.
"""

from __future__ import annotations

import time

from toolemu.services.gitlab.commits import ROOT
from toolemu.services.gitlab.http import ApiError, Request, Response, bad_request, missing, not_found, paginate
from toolemu.services.gitlab.repo import FileAction, GitError, Repo, valid_file_path
from toolemu.services.gitlab.routing import Args, Ctx, Route, route
from toolemu.services.gitlab.store import ProjectRecord

FORMATS = {"md": "markdown", "markdown": "markdown", "rdoc": "rdoc", "asciidoc": "asciidoc", "adoc": "asciidoc",
           "org": "org"}
_EXTENSIONS = {"markdown": "md", "rdoc": "rdoc", "asciidoc": "asciidoc", "org": "org"}


def slug_of(title: str) -> str:
    """GitLab's page slug for a title: spaces become hyphens."""
    return "-".join(title.strip().split(" "))


def title_of(slug: str) -> str:
    """GitLab's page title for a slug: its last part, hyphens shown as spaces."""
    return slug.rsplit("/", 1)[-1].replace("-", " ")


def _pages(repo: Repo) -> dict[str, tuple[str, str]]:
    """slug -> (file path, format) of every page on the wiki's default branch."""
    branch = repo.default_branch()
    if branch is None:
        return {}
    pages: dict[str, tuple[str, str]] = {}
    for entry in repo.tree(branch, "", recursive=True) or []:
        stem, _, ext = entry.path.rpartition(".")
        if entry.type == "blob" and stem and ext.lower() in FORMATS:
            pages.setdefault(stem, (entry.path, FORMATS[ext.lower()]))
    return pages


def _view(repo: Repo, slug: str, path: str, fmt: str, *, content: bool) -> dict[str, object]:
    view: dict[str, object] = {"format": fmt, "slug": slug, "title": title_of(slug), "encoding": "UTF-8"}
    if content:
        branch = repo.default_branch() or "main"
        found = repo.blob(branch, path)
        view["content"] = found[1].decode("utf-8", "replace") if found else ""
    return view


def list_pages(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/wikis``: ``with_content=1`` adds each page's text."""
    repo = ctx.repo(project, wiki=True)
    with_content = bool(request.params.flag("with_content", False))
    pages = sorted(_pages(repo).items(), key=lambda kv: title_of(kv[0]).lower())
    views = [_view(repo, slug, path, fmt, content=with_content) for slug, (path, fmt) in pages]
    page, headers = paginate(request, views)
    return Response.json(page, headers=headers)


def get_page(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/wikis/:slug``."""
    repo = ctx.repo(project, wiki=True)
    found = _pages(repo).get(args["slug"])
    if found is None:
        raise not_found("Wiki Page")
    return Response.json(_view(repo, args["slug"], *found, content=True))


def _commit(repo: Repo, actions: list[FileAction], message: str) -> None:
    branch = repo.head_branch() or "main"
    parent = repo.branches().get(branch)
    sha = repo.write_commit(parent, actions, message, ROOT, int(time.time()))
    try:
        ref = f"refs/heads/{branch}"
        repo.update_refs([f"update {ref} {sha} {parent}" if parent else f"create {ref} {sha}"])
    except GitError as e:
        raise ApiError(400, {"message": "The wiki changed while saving; retry"}) from e


def _format(request: Request, default: str = "markdown") -> str:
    fmt = request.params.text("format", default) or default
    if fmt not in _EXTENSIONS:
        raise ApiError(400, {"error": "format does not have a valid value"})
    return fmt


def create_page(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/wikis``: title, content, format."""
    title = request.params.text("title")
    if not title:
        raise missing("title")
    content = request.params.text("content")
    if content is None:
        raise missing("content")
    fmt = _format(request)
    slug = slug_of(title)
    path = f"{slug}.{_EXTENSIONS[fmt]}"
    if not valid_file_path(path):
        raise bad_request("Invalid title")
    repo = ctx.repo(project, wiki=True)
    if slug in _pages(repo):
        raise bad_request("Duplicate page: A page with that title already exists")
    _commit(repo, [FileAction("create", path, content.encode("utf-8"))], f"Create {title}")
    return Response.json(_view(repo, slug, path, fmt, content=True), 201)


def update_page(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PUT /projects/:id/wikis/:slug``: title (renames), content, format."""
    repo = ctx.repo(project, wiki=True)
    found = _pages(repo).get(args["slug"])
    if found is None:
        raise not_found("Wiki Page")
    old_path, old_fmt = found
    fmt = _format(request, old_fmt)
    title = request.params.text("title")
    slug = slug_of(title) if title else args["slug"]
    path = f"{slug}.{_EXTENSIONS[fmt]}"
    current = repo.blob(repo.head_branch() or "main", old_path)
    content = request.params.text("content")
    data = content.encode("utf-8") if content is not None else (current[1] if current else b"")
    action = FileAction("update", path, data) if path == old_path else FileAction("move", path, data, old_path)
    _commit(repo, [action], f"Update {title_of(slug)}")
    return Response.json(_view(repo, slug, path, fmt, content=True))


def delete_page(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/wikis/:slug``."""
    repo = ctx.repo(project, wiki=True)
    found = _pages(repo).get(args["slug"])
    if found is None:
        raise not_found("Wiki Page")
    _commit(repo, [FileAction("delete", found[0])], f"Delete {title_of(args['slug'])}")
    return Response.empty(204)


PROJECT_ROUTES: tuple[Route, ...] = (
    route("GET", "wikis", list_pages),
    route("POST", "wikis", create_page),
    route("GET", "wikis/*slug", get_page),
    route("PUT", "wikis/*slug", update_page),
    route("DELETE", "wikis/*slug", delete_page),
)
