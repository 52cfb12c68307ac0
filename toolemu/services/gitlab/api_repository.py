"""GitLab API routes of a project's repository: files, tree, commits, branches and protected branches."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from toolemu.services.gitlab.commits import (
    after_branch_created,
    author_of,
    commit_actions,
    decode_content,
    protection,
    valid_branch_name,
)
from toolemu.services.gitlab.http import (
    ApiError,
    Request,
    Response,
    bad_request,
    missing,
    not_found,
    page_window,
    paginate,
)
from toolemu.services.gitlab.render import EXTERNAL_URL, commit_view
from toolemu.services.gitlab.repo import Commit, FileAction, GitError, Repo
from toolemu.services.gitlab.routing import Args, Ctx, Handler, Route, route
from toolemu.services.gitlab.store import ProjectRecord


def _ref(repo: Repo, request: Request, name: str = "ref", *, required: bool = False) -> str | None:
    ref = request.params.text(name)
    if ref is None and required:
        raise missing(name)
    return ref or repo.default_branch()


def _file(ctx: Ctx, request: Request, project: ProjectRecord, path: str, *, raw: bool) -> Response:
    repo = ctx.repo(project)
    ref = _ref(repo, request, required=not raw)
    commit = repo.resolve(ref) if ref else None
    found = repo.blob(commit, path) if commit else None
    if found is None and not raw and path.endswith("/raw"):
        return _file(ctx, request, project, path.removesuffix("/raw"), raw=True)
    if found is None or commit is None or ref is None:
        raise not_found("File")
    blob_id, content = found
    last = repo.last_commit(commit, path) or commit
    headers = [
        ("X-Gitlab-Blob-Id", blob_id), ("X-Gitlab-Commit-Id", commit), ("X-Gitlab-Content-Sha256",
         hashlib.sha256(content).hexdigest()), ("X-Gitlab-Encoding", "base64"), ("X-Gitlab-File-Name",
         path.rsplit("/", 1)[-1]), ("X-Gitlab-File-Path", path), ("X-Gitlab-Last-Commit-Id", last),
        ("X-Gitlab-Ref", ref), ("X-Gitlab-Size", str(len(content))), ("X-Gitlab-Execute-Filemode", "false"),
    ]
    if raw:
        kind = "text/plain; charset=utf-8" if b"\x00" not in content[:8000] else "application/octet-stream"
        return Response(200, content, [("Content-Type", kind), *headers])
    if request.method == "HEAD":
        return Response(200, b"", headers)
    return Response.json({
        "file_name": path.rsplit("/", 1)[-1], "file_path": path, "size": len(content), "encoding": "base64",
        "content_sha256": hashlib.sha256(content).hexdigest(), "ref": ref, "blob_id": blob_id, "commit_id": commit,
        "last_commit_id": last, "execute_filemode": False, "content": base64.b64encode(content).decode(),
    }, headers=headers)


def get_file(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/repository/files/:file_path`` (``ref`` required); a decoded ``.../raw`` falls back."""
    return _file(ctx, request, project, args["file_path"], raw=False)


def get_raw_file(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/repository/files/:file_path/raw`` (``ref`` defaults to the default branch)."""
    return _file(ctx, request, project, args["file_path"], raw=True)


def _write_file(ctx: Ctx, request: Request, project: ProjectRecord, path: str, action: str) -> str:
    params = request.params
    branch = params.text("branch", required=True) or ""
    message = params.text("commit_message", required=True) or ""
    content = b""
    if action != "delete":
        content = decode_content(params.text("content", required=True) or "", params.text("encoding"))
    return commit_actions(ctx, project, branch, [FileAction(action, path, content)], message, author_of(request),
                          params.text("start_branch"))


def create_file(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``POST /projects/:id/repository/files/:file_path``: branch, content, commit_message, encoding."""
    _write_file(ctx, request, project, args["file_path"], "create")
    return Response.json({"file_path": args["file_path"], "branch": request.params.text("branch")}, 201)


def update_file(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PUT /projects/:id/repository/files/:file_path``."""
    _write_file(ctx, request, project, args["file_path"], "update")
    return Response.json({"file_path": args["file_path"], "branch": request.params.text("branch")})


def delete_file(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/repository/files/:file_path``."""
    _write_file(ctx, request, project, args["file_path"], "delete")
    return Response.empty(204)


def tree(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/repository/tree``: path, ref, recursive; directories first, paged."""
    repo = ctx.repo(project)
    ref = _ref(repo, request)
    path = request.params.text("path", "") or ""
    if ref is None:
        if path:
            raise not_found("Tree")
        page, headers = paginate(request, [])
        return Response.json(page, headers=headers)
    entries = repo.tree(ref, path, recursive=bool(request.params.flag("recursive")))
    if entries is None:
        raise not_found("Tree")
    entries.sort(key=lambda e: (e.type != "tree", e.path) if not request.params.flag("recursive") else e.path)
    views = [{"id": e.id, "name": e.name, "type": e.type, "path": e.path, "mode": e.mode} for e in entries]
    page, headers = paginate(request, views)
    return Response.json(page, headers=headers)


def _stats(repo: Repo, commit: Commit) -> dict[str, int]:
    parent = commit.parent_ids[0] if commit.parent_ids else "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    out = repo.git("diff", "--numstat", parent, commit.id).decode("utf-8", "replace")
    add = sum(int(f[0]) for f in (line.split("\t") for line in out.splitlines()) if f[0].isdigit())
    rem = sum(int(f[1]) for f in (line.split("\t") for line in out.splitlines()) if f[1].isdigit())
    return {"additions": add, "deletions": rem, "total": add + rem}


def list_commits(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/repository/commits``: ref_name, path, since, until, all, with_stats; paged."""
    repo = ctx.repo(project)
    params = request.params
    all_refs = bool(params.flag("all"))
    ref = params.text("ref_name") or repo.default_branch()
    if ref is None:
        if all_refs or not repo.branches():
            page, headers = paginate(request, [])
            return Response.json(page, headers=headers)
        raise not_found("Commit")
    if all_refs:
        ref = "HEAD"
    elif repo.resolve(ref) is None:
        raise not_found("Commit")
    path = params.text("path")
    offset, limit = page_window(request)
    commits = repo.log(ref, path=path, since=params.text("since"), until=params.text("until"), skip=offset,
                       limit=limit, all_refs=all_refs)
    total = repo.count(ref, path=path, all_refs=all_refs) if not (params.text("since") or params.text("until")) else \
        offset + len(commits)
    page, headers = paginate(request, commits, total=total)
    views = []
    for commit in page:
        view = commit_view(project, commit)
        if params.flag("with_stats"):
            view["stats"] = _stats(repo, commit)
        views.append(view)
    return Response.json(views, headers=headers)


def get_commit(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/repository/commits/:sha``."""
    repo = ctx.repo(project)
    commit = repo.commit(args["sha"])
    if commit is None:
        raise not_found("Commit")
    view = commit_view(project, commit)
    view.update({"stats": _stats(repo, commit), "status": None, "project_id": project.id, "last_pipeline": None})
    return Response.json(view)


def create_commit(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/repository/commits``: branch, commit_message, actions[], start_branch."""
    params = request.params
    branch = params.text("branch", required=True) or ""
    message = params.text("commit_message", required=True) or ""
    raw_actions = params.raw("actions")
    if not isinstance(raw_actions, list) or not raw_actions:
        raise missing("actions")
    actions = []
    for item in raw_actions:
        if not isinstance(item, dict) or item.get("action") not in ("create", "update", "delete", "move", "chmod"):
            raise ApiError(400, {"error": "actions[action] does not have a valid value"})
        if not isinstance(item.get("file_path"), str):
            raise ApiError(400, {"error": "actions[file_path] is missing"})
        if item["action"] == "chmod":
            continue
        content = decode_content(str(item.get("content") or ""), item.get("encoding"))
        previous = item.get("previous_path") if item["action"] == "move" else None
        actions.append(FileAction(item["action"], item["file_path"], content, previous))
    start = params.text("start_branch") or params.text("start_sha")
    sha = commit_actions(ctx, project, branch, actions, message, author_of(request), start)
    commit = ctx.repo(project).commit(sha)
    if commit is None:
        raise not_found("Commit")
    view = commit_view(project, commit)
    view.update({"stats": _stats(ctx.repo(project), commit), "status": None, "project_id": project.id})
    return Response.json(view, 201)


def _branch_views(ctx: Ctx, project: ProjectRecord, names: list[str] | None = None) -> list[dict[str, Any]]:
    repo = ctx.repo(project)
    default = repo.default_branch()
    fmt = "%(refname:strip=2)%1f%(objectname)"
    out = repo.git("for-each-ref", f"--format={fmt}", "refs/heads").decode("utf-8", "replace").splitlines()
    merged = set()
    if default is not None:
        merged = set(repo.git("for-each-ref", "--format=%(refname:strip=2)", f"--merged={default}",
                              "refs/heads").decode().split())
    views = []
    for line in out:
        name, sha = line.split("\x1f")
        if names is not None and name not in names:
            continue
        commit = repo.commit(sha)
        rule = protection(project, name)
        views.append({
            "name": name, "commit": commit_view(project, commit) if commit else None,
            "merged": name in merged and name != default, "protected": rule is not None,
            "developers_can_push": rule is None or rule.push_access_level == 30,
            "developers_can_merge": rule is None or rule.merge_access_level == 30,
            "can_push": rule is None or rule.push_access_level != 0, "default": name == default,
            "web_url": f"{EXTERNAL_URL}/{project.path_with_namespace}/-/tree/{name}",
        })
    return views


def list_branches(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/repository/branches``: search; paged, by name."""
    search = (request.params.text("search") or "").lower()
    names = [n for n in ctx.repo(project).branches() if search in n.lower()]
    page, headers = paginate(request, sorted(names))
    return Response.json(_branch_views(ctx, project, page), headers=headers)


def get_branch(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/repository/branches/:branch``."""
    views = _branch_views(ctx, project, [args["branch"]])
    if not views:
        raise not_found("Branch")
    return Response.json(views[0])


def create_branch(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/repository/branches``: branch, ref."""
    name = request.params.text("branch", required=True) or ""
    ref = request.params.text("ref", required=True) or ""
    if not valid_branch_name(name):
        raise bad_request("Branch name is invalid")
    repo = ctx.repo(project)
    if name in repo.branches():
        raise bad_request("Branch already exists")
    sha = repo.resolve(ref)
    if sha is None:
        raise bad_request("Invalid reference name: " + ref)
    repo.update_refs([f"create refs/heads/{name} {sha}"])
    after_branch_created(ctx, project, repo, was_empty=False)
    return Response.json(_branch_views(ctx, project, [name])[0], 201)


def delete_branch(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/repository/branches/:branch``; the default branch cannot be deleted (405)."""
    repo = ctx.repo(project)
    name = args["branch"]
    sha = repo.branches().get(name)
    if sha is None:
        raise not_found("Branch")
    if name == repo.default_branch():
        raise ApiError(405, {"message": "The default branch of a project cannot be deleted."})
    try:
        repo.update_refs([f"delete refs/heads/{name} {sha}"])
    except GitError as e:
        raise ApiError(400, {"message": "Failed to remove branch"}) from e
    return Response.empty(204)


def delete_merged_branches(ctx: Ctx, _r: Request, project: ProjectRecord, _a: Args) -> Response:
    """``DELETE /projects/:id/repository/merged_branches``: merged, unprotected, non-default branches."""
    for view in _branch_views(ctx, project):
        if view["merged"] and not view["protected"] and not view["default"]:
            ctx.repo(project).update_refs([f"delete refs/heads/{view['name']}"])
    return Response.json({"message": "202 Accepted"}, 202)


_ARCHIVES = {"tar.gz": ("tar.gz", "application/gzip"), "tgz": ("tgz", "application/gzip"),
             "tar": ("tar", "application/x-tar"), "zip": ("zip", "application/zip")}


def archive(ctx: Ctx, request: Request, project: ProjectRecord, fmt: str) -> Response:
    """``GET /projects/:id/repository/archive[.format]``: ``sha`` (default branch), ``path``; ``git archive``."""
    repo = ctx.repo(project)
    ref = request.params.text("sha") or repo.default_branch()
    commit = repo.resolve(ref) if ref else None
    if commit is None:
        raise not_found("Commit")
    prefix = f"{project.path}-{(ref or commit).replace('/', '-')}-{commit}/"
    subpath = request.params.text("path")
    extra = ["--", subpath] if subpath else []
    data = repo.git("archive", f"--format={_ARCHIVES[fmt][0]}", f"--prefix={prefix}", commit, *extra)
    name = f"{prefix.rstrip('/')}.{fmt}"
    return Response(200, data, [("Content-Type", _ARCHIVES[fmt][1]),
                                ("Content-Disposition", f'attachment; filename="{name}"')])


def _archive_as(fmt: str) -> Handler:
    def handler(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
        return archive(ctx, request, project, fmt)

    return handler


def web_raw(ctx: Ctx, request: Request, project: ProjectRecord, segments: list[str]) -> Response:
    """The web UI's ``/<project>/-/raw/<ref>/<path>``: the longest branch name that prefixes the rest is the ref."""
    repo = ctx.repo(project)
    branches = repo.branches()
    for cut in range(len(segments) - 1, 0, -1):
        ref = "/".join(segments[:cut])
        if ref in branches or (cut == 1 and repo.resolve(ref)):
            found = repo.blob(ref, "/".join(segments[cut:]))
            if found is not None:
                return Response(200, found[1], [("Content-Type", "text/plain; charset=utf-8")])
    raise not_found("File")


ROUTES: tuple[Route, ...] = (
    route("GET", "repository/files/:file_path/raw", get_raw_file),
    route("GET", "repository/files/*file_path", get_file),
    route("POST", "repository/files/*file_path", create_file),
    route("PUT", "repository/files/*file_path", update_file),
    route("DELETE", "repository/files/*file_path", delete_file),
    route("GET", "repository/tree", tree),
    route("GET", "repository/commits", list_commits),
    route("POST", "repository/commits", create_commit),
    route("GET", "repository/commits/:sha", get_commit),
    route("GET", "repository/branches", list_branches),
    route("POST", "repository/branches", create_branch),
    route("DELETE", "repository/merged_branches", delete_merged_branches),
    route("GET", "repository/branches/*branch", get_branch),
    route("DELETE", "repository/branches/*branch", delete_branch),
    *(route("GET", f"repository/archive{suffix}", _archive_as(suffix.lstrip(".") or "tar.gz"))
      for suffix in ("", ".tar.gz", ".tgz", ".tar", ".zip")),
)
