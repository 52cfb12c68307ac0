"""GitLab API routes for issues and their comments (project and instance level)."""

from __future__ import annotations

from typing import Any

from toolemu.services.gitlab import notes
from toolemu.services.gitlab.http import Request, Response, missing, paginate
from toolemu.services.gitlab.issuable import (
    assignee_edit,
    by_iid,
    due_date,
    edit_common,
    ensure_labels,
    filter_items,
    in_scope,
    label_edit,
    milestone_edit,
)
from toolemu.services.gitlab.render import issue_view
from toolemu.services.gitlab.routing import Args, Ctx, Route, current_project, route
from toolemu.services.gitlab.store import GitLabState, IssueRecord, ProjectRecord, next_iid, now


def _issue(project: ProjectRecord, iid: str) -> IssueRecord:
    return by_iid(project.issues, iid, "Issue")


def _put_issue(state: GitLabState, project: ProjectRecord, issue: IssueRecord) -> GitLabState:
    issues = tuple(issue if i.id == issue.id else i for i in project.issues)
    return state.replace_project(project.model_copy(update={"issues": issues, "last_activity_at": now()}))


def list_issues(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/issues``: state, search, labels, milestone, assignee, author, iids, ordering; paged."""
    state = ctx.store.state
    issues = filter_items(state, project, project.issues, request)
    if request.params.flag("confidential") is not None:
        issues = [i for i in issues if i.confidential == request.params.flag("confidential")]
    page, headers = paginate(request, issues)
    return Response.json([issue_view(state, project, i) for i in page], headers=headers)


def list_all_issues(ctx: Ctx, request: Request, _a: Args) -> Response:
    """``GET /issues``: scope ``created_by_me`` (default), ``assigned_to_me`` or ``all``, over visible projects."""
    state = ctx.store.state
    user = request.require_user()
    scope = request.params.text("scope", "created_by_me")
    views: list[tuple[IssueRecord, dict[str, Any]]] = []
    for project in state.projects:
        for issue in filter_items(state, project, project.issues, request):
            if in_scope(issue, scope, user):
                views.append((issue, issue_view(state, project, issue)))
    reverse = request.params.text("sort", "desc") != "asc"
    views.sort(key=lambda pair: (pair[0].created_at, pair[0].id), reverse=reverse)
    page, headers = paginate(request, [v for _, v in views])
    return Response.json(page, headers=headers)


def get_issue(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/issues/:issue_iid``."""
    return Response.json(issue_view(ctx.store.state, project, _issue(project, args["iid"])))


def create_issue(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/issues``: title, description, assignee_ids, milestone_id, labels, due_date, ..."""
    params = request.params
    title = params.text("title")
    if not title:
        raise missing("title")
    user = request.require_user()

    def add(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, IssueRecord]]:
        current = current_project(state, project)
        labels = label_edit((), request) or ()
        state, current = ensure_labels(state, current, labels)
        state, issue_id = state.next_id("issue")
        current, iid = next_iid(current, "issue")
        stamp = params.text("created_at") or now()
        issue = IssueRecord(
            id=issue_id, iid=iid, title=title, description=params.text("description", "") or "", author_id=user,
            assignee_ids=assignee_edit(state, request) or (), labels=labels,
            milestone_id=milestone_edit(current, request)[1], due_date=due_date(request)[1],
            confidential=bool(params.flag("confidential", False)), created_at=stamp, updated_at=stamp,
        )
        current = current.model_copy(update={"issues": (*current.issues, issue), "last_activity_at": now()})
        return state.replace_project(current), (current, issue)

    current, issue = ctx.store.change(add)
    return Response.json(issue_view(ctx.store.state, current, issue), 201)


def update_issue(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PUT /projects/:id/issues/:issue_iid``: title, description, state_event, assignees, milestone, labels, ..."""
    params = request.params
    user = request.require_user()

    def edit(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, IssueRecord]]:
        current = current_project(state, project)
        issue = _issue(current, args["iid"])
        update: dict[str, Any] = {"updated_at": now()}
        for field in ("title", "description"):
            if params.has(field):
                update[field] = params.text(field) or ""
        if not update.get("title", issue.title):
            raise missing("title")
        state, current = edit_common(state, current, issue, request, user, update, due=True)
        if params.has("confidential"):
            update["confidential"] = bool(params.flag("confidential"))
        issue = issue.model_copy(update=update)
        state = _put_issue(state, current, issue)
        return state, (current_project(state, project), issue)

    current, issue = ctx.store.change(edit)
    return Response.json(issue_view(ctx.store.state, current, issue))


def delete_issue(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/issues/:issue_iid`` (admins and owners; root is both)."""

    def drop(state: GitLabState) -> tuple[GitLabState, None]:
        current = current_project(state, project)
        issue = _issue(current, args["iid"])
        issues = tuple(i for i in current.issues if i.id != issue.id)
        return state.replace_project(current.model_copy(update={"issues": issues, "last_activity_at": now()})), None

    ctx.store.change(drop)
    return Response.empty(204)


_NOTES = notes.Noteable("Issue", _issue, _put_issue, sortable=True)


GLOBAL_ROUTES: tuple[Route, ...] = (route("GET", "issues", list_all_issues),)
PROJECT_ROUTES: tuple[Route, ...] = (
    route("GET", "issues", list_issues),
    route("POST", "issues", create_issue),
    route("GET", "issues/:iid", get_issue),
    route("PUT", "issues/:iid", update_issue),
    route("DELETE", "issues/:iid", delete_issue),
    *notes.routes("issues", _NOTES),
)
