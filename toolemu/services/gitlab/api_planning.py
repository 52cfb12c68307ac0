"""GitLab API routes for a project's milestones and labels."""

from __future__ import annotations

from typing import Any

from toolemu.services.gitlab.http import ApiError, Request, Response, bad_request, missing, not_found, paginate
from toolemu.services.gitlab.issuable import due_date
from toolemu.services.gitlab.render import issue_view, label_view, milestone_view, mr_view
from toolemu.services.gitlab.routing import Args, Ctx, Route, current_project, route
from toolemu.services.gitlab.store import GitLabState, LabelRecord, MilestoneRecord, ProjectRecord, next_iid, now


def _milestone(project: ProjectRecord, ident: str) -> MilestoneRecord:
    ms = next((m for m in project.milestones if ident.isdigit() and m.id == int(ident)), None)
    if ms is None:
        raise not_found("Milestone")
    return ms


def list_milestones(_c: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/milestones``: state, title, search, iids; paged."""
    params = request.params
    items = list(project.milestones)
    state = params.text("state")
    if state in ("active", "closed"):
        items = [m for m in items if m.state == state]
    title = params.text("title")
    if title:
        items = [m for m in items if m.title == title]
    search = (params.text("search") or "").lower()
    if search:
        items = [m for m in items if search in m.title.lower() or search in m.description.lower()]
    iids = params.integers("iids")
    if iids:
        items = [m for m in items if m.iid in iids]
    items.sort(key=lambda m: (m.due_date is None, m.due_date or "", m.title))
    page, headers = paginate(request, items)
    return Response.json([milestone_view(project, m) for m in page], headers=headers)


def get_milestone(_c: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/milestones/:milestone_id``."""
    return Response.json(milestone_view(project, _milestone(project, args["milestone_id"])))


def create_milestone(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/milestones``: title, description, due_date, start_date."""
    title = request.params.text("title")
    if not title:
        raise missing("title")
    start = request.params.text("start_date")
    due = due_date(request)[1]

    def add(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, MilestoneRecord]]:
        current = current_project(state, project)
        if any(m.title == title for m in current.milestones):
            raise bad_request({"title": ["already being used for another group or project milestone."]})
        state, mid = state.next_id("milestone")
        current, iid = next_iid(current, "milestone")
        stamp = now()
        ms = MilestoneRecord(id=mid, iid=iid, title=title, description=request.params.text("description", "") or "",
                             start_date=start, due_date=due, created_at=stamp, updated_at=stamp)
        current = current.model_copy(update={"milestones": (*current.milestones, ms)})
        return state.replace_project(current), (current, ms)

    current, ms = ctx.store.change(add)
    return Response.json(milestone_view(current, ms), 201)


def update_milestone(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PUT /projects/:id/milestones/:milestone_id``: title, description, dates, state_event activate/close."""
    params = request.params

    def edit(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, MilestoneRecord]]:
        current = current_project(state, project)
        ms = _milestone(current, args["milestone_id"])
        update: dict[str, Any] = {"updated_at": now()}
        for field in ("title", "description", "start_date"):
            if params.has(field):
                update[field] = params.text(field) or ("" if field != "start_date" else None)
        given, due = due_date(request)
        if given:
            update["due_date"] = due
        event = params.text("state_event")
        if event in ("close", "activate"):
            update["state"] = "closed" if event == "close" else "active"
        ms = ms.model_copy(update=update)
        milestones = tuple(ms if m.id == ms.id else m for m in current.milestones)
        current = current.model_copy(update={"milestones": milestones})
        return state.replace_project(current), (current, ms)

    current, ms = ctx.store.change(edit)
    return Response.json(milestone_view(current, ms))


def delete_milestone(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/milestones/:milestone_id``: its issues and MRs lose it."""

    def drop(state: GitLabState) -> tuple[GitLabState, None]:
        current = current_project(state, project)
        ms = _milestone(current, args["milestone_id"])
        issues = tuple(i.model_copy(update={"milestone_id": None}) if i.milestone_id == ms.id else i
                       for i in current.issues)
        mrs = tuple(m.model_copy(update={"milestone_id": None}) if m.milestone_id == ms.id else m
                    for m in current.merge_requests)
        milestones = tuple(m for m in current.milestones if m.id != ms.id)
        current = current.model_copy(update={"milestones": milestones, "issues": issues, "merge_requests": mrs})
        return state.replace_project(current), None

    ctx.store.change(drop)
    return Response.empty(204)


def milestone_issues(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/milestones/:milestone_id/issues``."""
    ms = _milestone(project, args["milestone_id"])
    page, headers = paginate(request, [i for i in project.issues if i.milestone_id == ms.id])
    return Response.json([issue_view(ctx.store.state, project, i) for i in page], headers=headers)


def milestone_mrs(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/milestones/:milestone_id/merge_requests``."""
    ms = _milestone(project, args["milestone_id"])
    page, headers = paginate(request, [m for m in project.merge_requests if m.milestone_id == ms.id])
    repo = ctx.repo(project)
    return Response.json([mr_view(ctx.store.state, project, m, repo) for m in page], headers=headers)


def _label(project: ProjectRecord, ident: str) -> LabelRecord:
    label = next((x for x in project.labels if (ident.isdigit() and x.id == int(ident)) or x.name == ident), None)
    if label is None:
        raise not_found("Label")
    return label


def list_labels(_c: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/labels``: search; paged."""
    search = (request.params.text("search") or "").lower()
    labels = sorted((x for x in project.labels if search in x.name.lower()), key=lambda x: x.name.lower())
    page, headers = paginate(request, labels)
    return Response.json([label_view(x, project) for x in page], headers=headers)


def get_label(_c: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/labels/:label_id`` (id or name)."""
    return Response.json(label_view(_label(project, args["label_id"]), project))


def create_label(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/labels``: name, color, description."""
    name = request.params.text("name", required=True) or ""
    color = request.params.text("color", required=True) or ""

    def add(state: GitLabState) -> tuple[GitLabState, tuple[ProjectRecord, LabelRecord]]:
        current = current_project(state, project)
        if any(x.name == name for x in current.labels):
            raise ApiError(409, {"message": "Label already exists"})
        state, lid = state.next_id("label")
        label = LabelRecord(id=lid, name=name, color=color, description=request.params.text("description", "") or "")
        current = current.model_copy(update={"labels": (*current.labels, label)})
        return state.replace_project(current), (current, label)

    current, label = ctx.store.change(add)
    return Response.json(label_view(label, current), 201)


def delete_label(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/labels/:label_id``: issues and MRs lose it."""

    def drop(state: GitLabState) -> tuple[GitLabState, None]:
        current = current_project(state, project)
        label = _label(current, args["label_id"])
        issues = tuple(i.model_copy(update={"labels": tuple(x for x in i.labels if x != label.name)})
                       for i in current.issues)
        labels = tuple(x for x in current.labels if x.id != label.id)
        return state.replace_project(current.model_copy(update={"labels": labels, "issues": issues})), None

    ctx.store.change(drop)
    return Response.empty(204)


PROJECT_ROUTES: tuple[Route, ...] = (
    route("GET", "milestones", list_milestones),
    route("POST", "milestones", create_milestone),
    route("GET", "milestones/:milestone_id", get_milestone),
    route("PUT", "milestones/:milestone_id", update_milestone),
    route("DELETE", "milestones/:milestone_id", delete_milestone),
    route("GET", "milestones/:milestone_id/issues", milestone_issues),
    route("GET", "milestones/:milestone_id/merge_requests", milestone_mrs),
    route("GET", "labels", list_labels),
    route("POST", "labels", create_label),
    route("GET", "labels/:label_id", get_label),
    route("DELETE", "labels/:label_id", delete_label),
)
