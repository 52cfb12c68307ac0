"""GitLab API routes for a project's protected branches (who may push, merge, force-push, unprotect)."""

from __future__ import annotations

from toolemu.services.gitlab.http import ApiError, Request, Response, not_found, paginate
from toolemu.services.gitlab.render import protected_branch_view
from toolemu.services.gitlab.routing import Args, Ctx, Route, route
from toolemu.services.gitlab.store import GitLabState, ProjectRecord, ProtectedBranchRecord


def list_protected(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/protected_branches``: search; paged."""
    search = (request.params.text("search") or "").lower()
    rules = [protected_branch_view(p) for p in project.protected_branches if search in p.name.lower()]
    page, headers = paginate(request, rules)
    return Response.json(page, headers=headers)


def get_protected(_c: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/protected_branches/:name``."""
    rule = next((p for p in project.protected_branches if p.name == args["name"]), None)
    if rule is None:
        raise not_found()
    return Response.json(protected_branch_view(rule))


def _levels(request: Request, single: str, many: str, default: int | None) -> int | None:
    value = request.params.integer(single)
    entries = request.params.raw(many)
    if isinstance(entries, list):
        levels = [int(e["access_level"]) for e in entries if isinstance(e, dict) and "access_level" in e]
        value = min(levels) if levels else value
    if value is not None and value not in (0, 30, 40, 60):
        raise ApiError(400, {"error": f"{single} does not have a valid value"})
    return default if value is None else value


def protect(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/protected_branches``: name, push/merge/unprotect_access_level, allow_force_push."""
    name = request.params.text("name", required=True) or ""
    push = _levels(request, "push_access_level", "allowed_to_push", 40) or 0
    merge = _levels(request, "merge_access_level", "allowed_to_merge", 40) or 0
    unprotect = _levels(request, "unprotect_access_level", "allowed_to_unprotect", 40) or 40
    force = bool(request.params.flag("allow_force_push", False))

    def add(state: GitLabState) -> tuple[GitLabState, ProtectedBranchRecord]:
        current = state.project(str(project.id))
        if current is None:
            raise not_found("Project")
        if any(p.name == name for p in current.protected_branches):
            raise ApiError(409, {"message": f"Protected branch '{name}' already exists"})
        state, pid = state.next_id("protected_branch")
        rule = ProtectedBranchRecord(id=pid, name=name, push_access_level=push, merge_access_level=merge,
                                     unprotect_access_level=unprotect, allow_force_push=force)
        record = current.model_copy(update={"protected_branches": (*current.protected_branches, rule)})
        return state.replace_project(record), rule

    return Response.json(protected_branch_view(ctx.store.change(add)), 201)


def update_protected(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PATCH /projects/:id/protected_branches/:name``: allow_force_push, allowed_to_push/merge/unprotect."""

    def edit(state: GitLabState) -> tuple[GitLabState, ProtectedBranchRecord]:
        current = state.project(str(project.id))
        rule = next((p for p in current.protected_branches if p.name == args["name"]), None) if current else None
        if current is None or rule is None:
            raise not_found()
        new = rule.model_copy(update={
            "push_access_level": _levels(request, "push_access_level", "allowed_to_push", rule.push_access_level),
            "merge_access_level": _levels(request, "merge_access_level", "allowed_to_merge", rule.merge_access_level),
            "unprotect_access_level": _levels(request, "unprotect_access_level", "allowed_to_unprotect",
                                              rule.unprotect_access_level),
            "allow_force_push": request.params.flag("allow_force_push", rule.allow_force_push),
        })
        rules = tuple(new if p.id == rule.id else p for p in current.protected_branches)
        return state.replace_project(current.model_copy(update={"protected_branches": rules})), new

    return Response.json(protected_branch_view(ctx.store.change(edit)))


def unprotect(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/protected_branches/:name``."""

    def drop(state: GitLabState) -> tuple[GitLabState, None]:
        current = state.project(str(project.id))
        if current is None or not any(p.name == args["name"] for p in current.protected_branches):
            raise not_found()
        rules = tuple(p for p in current.protected_branches if p.name != args["name"])
        return state.replace_project(current.model_copy(update={"protected_branches": rules})), None

    ctx.store.change(drop)
    return Response.empty(204)


ROUTES: tuple[Route, ...] = (
    route("GET", "protected_branches", list_protected),
    route("POST", "protected_branches", protect),
    route("GET", "protected_branches/*name", get_protected),
    route("PATCH", "protected_branches/*name", update_protected),
    route("DELETE", "protected_branches/*name", unprotect),
)
