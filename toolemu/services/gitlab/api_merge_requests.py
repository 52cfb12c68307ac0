"""GitLab API routes for merge requests: list, create, update (close, reopen), merge, delete, comments."""

from __future__ import annotations

import time
from typing import Any

from toolemu.services.gitlab import notes
from toolemu.services.gitlab.commits import ROOT, after_branch_created, protection
from toolemu.services.gitlab.http import ApiError, Request, Response, bad_request, paginate
from toolemu.services.gitlab.issuable import (
    assignee_edit,
    by_iid,
    edit_common,
    ensure_labels,
    filter_items,
    in_scope,
    label_edit,
    milestone_edit,
)
from toolemu.services.gitlab.render import mr_view
from toolemu.services.gitlab.repo import GitError
from toolemu.services.gitlab.routing import Args, Ctx, Route, current_project, route
from toolemu.services.gitlab.store import GitLabState, MergeRequestRecord, ProjectRecord, next_iid, now


def _mr(project: ProjectRecord, iid: str) -> MergeRequestRecord:
    return by_iid(project.merge_requests, iid, "Merge Request")


def _put(state: GitLabState, project: ProjectRecord, mr: MergeRequestRecord) -> GitLabState:
    mrs = tuple(mr if m.id == mr.id else m for m in project.merge_requests)
    return state.replace_project(project.model_copy(update={"merge_requests": mrs, "last_activity_at": now()}))


def list_mrs(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/merge_requests``: state, search, labels, milestone, branches, people; paged."""
    state = ctx.store.state
    mrs = filter_items(state, project, project.merge_requests, request)
    for param in ("source_branch", "target_branch"):
        wanted = request.params.text(param)
        if wanted:
            mrs = [m for m in mrs if getattr(m, param) == wanted]
    page, headers = paginate(request, mrs)
    repo = ctx.repo(project)
    return Response.json([mr_view(state, project, m, repo) for m in page], headers=headers)


def list_all_mrs(ctx: Ctx, request: Request, _a: Args) -> Response:
    """``GET /merge_requests``: scope ``created_by_me`` (default), ``assigned_to_me`` or ``all``."""
    state = ctx.store.state
    user = request.require_user()
    scope = request.params.text("scope", "created_by_me")
    pairs: list[tuple[MergeRequestRecord, dict[str, Any]]] = []
    for project in state.projects:
        repo = ctx.repo(project)
        for mr in filter_items(state, project, project.merge_requests, request):
            if in_scope(mr, scope, user):
                pairs.append((mr, mr_view(state, project, mr, repo)))
    pairs.sort(key=lambda p: (p[0].created_at, p[0].id), reverse=request.params.text("sort", "desc") != "asc")
    page, headers = paginate(request, [v for _, v in pairs])
    return Response.json(page, headers=headers)


def get_mr(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/merge_requests/:merge_request_iid``."""
    return Response.json(mr_view(ctx.store.state, project, _mr(project, args["iid"]), ctx.repo(project)))


def create_mr(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/merge_requests``: source_branch, target_branch, title, description, assignees, ..."""
    params = request.params
    source = params.text("source_branch", required=True) or ""
    target = params.text("target_branch", required=True) or ""
    title = params.text("title", required=True) or ""
    branches = ctx.repo(project).branches()
    for name, kind in ((source, "Source"), (target, "Target")):
        if name not in branches:
            raise bad_request([f'{kind} branch "{name}" does not exist'])
    if source == target:
        raise bad_request(["You can't use same project/branch for source and target"])
    user = request.require_user()

    def add(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, MergeRequestRecord]]:
        current = current_project(state, project)
        if any(m.state == "opened" and m.source_branch == source and m.target_branch == target
               for m in current.merge_requests):
            raise ApiError(409, {"message": ["Another open merge request already exists for this source branch"]})
        labels = label_edit((), request) or ()
        state, current = ensure_labels(state, current, labels)
        state, mr_id = state.next_id("merge_request")
        current, iid = next_iid(current, "merge_request")
        stamp = now()
        mr = MergeRequestRecord(
            id=mr_id, iid=iid, title=title, description=params.text("description", "") or "", source_branch=source,
            target_branch=target, author_id=user, assignee_ids=assignee_edit(state, request) or (), labels=labels,
            milestone_id=milestone_edit(current, request)[1], created_at=stamp, updated_at=stamp,
        )
        current = current.model_copy(update={"merge_requests": (*current.merge_requests, mr)})
        return state.replace_project(current), (current, mr)

    current, mr = ctx.store.change(add)
    return Response.json(mr_view(ctx.store.state, current, mr, ctx.repo(current)), 201)


def update_mr(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PUT /projects/:id/merge_requests/:merge_request_iid``: state_event close/reopen, title, target, ..."""
    params = request.params
    user = request.require_user()

    def edit(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, MergeRequestRecord]]:
        current = current_project(state, project)
        mr = _mr(current, args["iid"])
        update: dict[str, Any] = {"updated_at": now()}
        for field in ("title", "description", "target_branch"):
            if params.has(field):
                update[field] = params.text(field) or ""
        state, current = edit_common(state, current, mr, request, user, update, due=False)
        mr = mr.model_copy(update=update)
        state = _put(state, current, mr)
        return state, (current_project(state, project), mr)

    current, mr = ctx.store.change(edit)
    return Response.json(mr_view(ctx.store.state, current, mr, ctx.repo(current)))


def merge_mr(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PUT /projects/:id/merge_requests/:merge_request_iid/merge``: a real merge commit on the target."""
    mr = _mr(project, args["iid"])
    if mr.state != "opened":
        raise ApiError(405, {"message": "405 Method Not Allowed"})
    rule = protection(project, mr.target_branch)
    if rule is not None and rule.merge_access_level == 0:
        raise ApiError(403, {"message": "403 Forbidden"})
    repo = ctx.repo(project)
    branches = repo.branches()
    target, source = branches.get(mr.target_branch), branches.get(mr.source_branch)
    if target is None or source is None:
        raise ApiError(422, {"message": "Branch cannot be merged"})
    message = request.params.text("merge_commit_message") or (
        f"Merge branch '{mr.source_branch}' into '{mr.target_branch}'\n\n{mr.title}\n\n"
        f"See merge request {project.path_with_namespace}!{mr.iid}")
    sha = repo.merge(target, source, message, ROOT, int(time.time()))
    if sha is None:
        raise ApiError(422, {"message": "Branch cannot be merged"})
    try:
        repo.update_refs([f"update refs/heads/{mr.target_branch} {sha} {target}"])
    except GitError as e:
        raise ApiError(409, {"message": "SHA does not match HEAD of source branch"}) from e
    if request.params.flag("should_remove_source_branch"):
        repo.update_refs([f"delete refs/heads/{mr.source_branch} {source}"])
    after_branch_created(ctx, project, repo, was_empty=False)
    user = request.require_user()

    def done(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, MergeRequestRecord]]:
        current = current_project(state, project)
        merged = _mr(current, args["iid"]).model_copy(update={
            "state": "merged", "merged_at": now(), "merged_by_id": user, "merge_commit_sha": sha, "updated_at": now()})
        state = _put(state, current, merged)
        return state, (current_project(state, project), merged)

    current, merged = ctx.store.change(done)
    return Response.json(mr_view(ctx.store.state, current, merged, repo))


def delete_mr(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/merge_requests/:merge_request_iid``."""

    def drop(state: GitLabState) -> tuple[GitLabState, None]:
        current = current_project(state, project)
        mr = _mr(current, args["iid"])
        mrs = tuple(m for m in current.merge_requests if m.id != mr.id)
        return state.replace_project(current.model_copy(update={"merge_requests": mrs})), None

    ctx.store.change(drop)
    return Response.empty(204)


_NOTES = notes.Noteable("MergeRequest", _mr, _put, sortable=False)


GLOBAL_ROUTES: tuple[Route, ...] = (route("GET", "merge_requests", list_all_mrs),)
PROJECT_ROUTES: tuple[Route, ...] = (
    route("GET", "merge_requests", list_mrs),
    route("POST", "merge_requests", create_mr),
    route("GET", "merge_requests/:iid", get_mr),
    route("PUT", "merge_requests/:iid", update_mr),
    route("PUT", "merge_requests/:iid/merge", merge_mr),
    route("DELETE", "merge_requests/:iid", delete_mr),
    *notes.routes("merge_requests", _NOTES),
)
