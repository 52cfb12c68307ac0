"""GitLab API routes for projects, members, users and instance facts (``/projects``, ``/users``, ``/version``)."""

from __future__ import annotations

import re
import shutil
import time
from typing import Any

from toolemu.services.gitlab.http import (
    FORBIDDEN,
    ApiError,
    Request,
    Response,
    bad_request,
    not_found,
    paginate,
)
from toolemu.services.gitlab.render import (
    EXTERNAL_URL,
    GITLAB_VERSION,
    member_view,
    project_view,
    user_basic,
    user_full,
)
from toolemu.services.gitlab.repo import FileAction, Identity, init_bare
from toolemu.services.gitlab.routing import Args, Ctx, Route, route
from toolemu.services.gitlab.seed import repo_path
from toolemu.services.gitlab.store import (
    GitLabState,
    MemberRecord,
    ProjectRecord,
    ProtectedBranchRecord,
    now,
)

PATH_PATTERN = re.compile(r"^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$")
_ORDER_KEYS = {"id", "name", "path", "created_at", "updated_at", "last_activity_at"}
ACCESS_LEVELS = (10, 20, 30, 40, 50)


def valid_project_path(path: str) -> bool:
    """GitLab's rule for a project path (and ours for a folder name)."""
    return bool(PATH_PATTERN.match(path)) and not path.endswith((".git", ".atom")) and ".." not in path


def slug_of(name: str) -> str:
    """The path GitLab derives from a project name (``Secure Banking App`` -> ``secure-banking-app``)."""
    return re.sub(r"[^a-z0-9_.]+", "-", name.lower()).strip("-.") or "project"


def _visible(state: GitLabState, request: Request) -> list[ProjectRecord]:
    return [p for p in state.projects if request.user_id is not None or p.visibility == "public"]


def list_projects(ctx: Ctx, request: Request, _a: Args) -> Response:
    """``GET /projects``: search, owned, membership, archived, visibility, order_by, sort; paged."""
    state = ctx.store.state
    params = request.params
    projects = _visible(state, request)
    search = (params.text("search") or "").lower()
    if search:
        projects = [p for p in projects if search in p.name.lower() or search in p.path.lower()
                    or search in p.description.lower()]
    archived = params.flag("archived")
    if archived is not None:
        projects = [p for p in projects if p.archived == archived]
    visibility = params.text("visibility")
    if visibility:
        projects = [p for p in projects if p.visibility == visibility]
    if (params.flag("owned") or params.flag("membership")) and request.user_id is None:
        projects = []
    order = params.text("order_by", "created_at") or "created_at"
    if order not in _ORDER_KEYS:
        raise ApiError(400, {"error": "order_by does not have a valid value"})
    key = "last_activity_at" if order == "updated_at" else order
    projects.sort(key=lambda p: (getattr(p, key), p.id), reverse=(params.text("sort", "desc") != "asc"))
    page, headers = paginate(request, projects)
    return Response.json([project_view(state, p, ctx.repo(p)) for p in page], headers=headers)


def get_project(ctx: Ctx, _r: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id``."""
    return Response.json(project_view(ctx.store.state, project, ctx.repo(project), detail=True))


def create_project(ctx: Ctx, request: Request, _a: Args) -> Response:
    """``POST /projects``: name and/or path, description, visibility, initialize_with_readme, default_branch."""
    params = request.params
    name = params.text("name")
    path = params.text("path")
    if not name and not path:
        raise ApiError(400, {"error": "name, path are missing, at least one parameter must be provided"})
    path = path or slug_of(name or "")
    name = name or path
    if not valid_project_path(path):
        raise bad_request({"path": ["can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', "
                                    "end in '.git' or end in '.atom'"]})
    visibility = params.text("visibility", "private") or "private"
    if visibility not in ("private", "internal", "public"):
        raise ApiError(400, {"error": "visibility does not have a valid value"})
    default_branch = params.text("default_branch", "main") or "main"
    record = new_project(ctx, name=name, path=path, description=params.text("description", "") or "",
                         visibility=visibility, default_branch=default_branch, user=request.require_user(),
                         readme=bool(params.flag("initialize_with_readme")))
    return Response.json(project_view(ctx.store.state, record, ctx.repo(record), detail=True), 201)


def new_project(
    ctx: Ctx, *, name: str, path: str, description: str, visibility: str, default_branch: str, user: int,
    readme: bool,
) -> ProjectRecord:
    """Adds a project under root with empty repositories (or a README commit on ``default_branch``).

    Raises:
        ApiError: 400 when the name or path is taken.
    """
    stamp = now()

    def add(state: GitLabState) -> tuple[GitLabState, ProjectRecord]:
        taken: dict[str, list[str]] = {"name": [], "path": []}
        for other in state.projects:
            if other.namespace == "root" and other.name.lower() == name.lower():
                taken["name"] = ["has already been taken"]
            if other.namespace == "root" and other.path.lower() == path.lower():
                taken["path"] = ["has already been taken"]
        errors = {k: v for k, v in taken.items() if v}
        if errors:
            raise bad_request(errors)
        state, project_id = state.next_id("project")
        record = ProjectRecord(
            id=project_id, name=name, path=path, description=description, visibility=visibility,  # type: ignore[arg-type]
            creator_id=user, created_at=stamp, last_activity_at=stamp,
            members=(MemberRecord(user_id=1, access_level=50, created_at=stamp),),
        )
        for wiki in (False, True):
            target = repo_path(ctx.state_dir, "root", path, wiki=wiki)
            shutil.rmtree(target, ignore_errors=True)
            init_bare(target, default_branch if not wiki else "main")
        if readme:
            repo = ctx.repo(record)
            text = f"# {name}\n\n{description}\n".encode()
            sha = repo.write_commit(None, [FileAction("create", "README.md", text)], "Initial commit",
                                    Identity("Administrator", "admin@example.com"), int(time.time()))
            repo.update_refs([f"create refs/heads/{default_branch} {sha}"])
            state, pid = state.next_id("protected_branch")
            record = record.model_copy(update={
                "protected_branches": (ProtectedBranchRecord(id=pid, name=default_branch),)})
        return state.model_copy(update={"projects": (*state.projects, record)}), record

    return ctx.store.change(add)


def update_project(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``PUT /projects/:id``: name, description, visibility, default_branch."""
    params = request.params
    branch = params.text("default_branch")
    if branch is not None and branch not in ctx.repo(project).branches():
        raise bad_request({"base": ["Could not change HEAD: branch '" + branch + "' does not exist"]})
    visibility = params.text("visibility")
    if visibility is not None and visibility not in ("private", "internal", "public"):
        raise ApiError(400, {"error": "visibility does not have a valid value"})

    def edit(state: GitLabState) -> tuple[GitLabState, ProjectRecord]:
        current = state.project(str(project.id))
        if current is None:
            raise not_found("Project")
        update: dict[str, Any] = {"last_activity_at": now()}
        for field in ("name", "description"):
            if params.has(field):
                update[field] = params.text(field) or ""
        if visibility:
            update["visibility"] = visibility
        if params.has("archived"):
            update["archived"] = bool(params.flag("archived"))
        record = current.model_copy(update=update)
        return state.replace_project(record), record

    record = ctx.store.change(edit)
    if branch is not None:
        ctx.repo(record).set_head(branch)
    return Response.json(project_view(ctx.store.state, record, ctx.repo(record), detail=True))


def _set_archived(ctx: Ctx, project: ProjectRecord, archived: bool) -> Response:
    def edit(state: GitLabState) -> tuple[GitLabState, ProjectRecord]:
        current = state.project(str(project.id))
        if current is None:
            raise not_found("Project")
        record = current.model_copy(update={"archived": archived, "last_activity_at": now()})
        return state.replace_project(record), record

    record = ctx.store.change(edit)
    return Response.json(project_view(ctx.store.state, record, ctx.repo(record), detail=True), 201)


def archive(ctx: Ctx, _r: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/archive``."""
    return _set_archived(ctx, project, True)


def unarchive(ctx: Ctx, _r: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/unarchive``."""
    return _set_archived(ctx, project, False)


def delete_project(ctx: Ctx, _r: Request, project: ProjectRecord, _a: Args) -> Response:
    """``DELETE /projects/:id``: removes the project and its repositories at once (no delayed deletion)."""

    def drop(state: GitLabState) -> tuple[GitLabState, None]:
        return state.model_copy(update={"projects": tuple(p for p in state.projects if p.id != project.id)}), None

    ctx.store.change(drop)
    for wiki in (False, True):
        shutil.rmtree(repo_path(ctx.state_dir, project.namespace, project.path, wiki=wiki), ignore_errors=True)
    return Response.json({"message": "202 Accepted"}, 202)


def list_members(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``GET /projects/:id/members`` and ``/members/all`` (no groups here: the same direct members)."""
    state = ctx.store.state
    query = (request.params.text("query") or "").lower()
    views = []
    for member in project.members:
        user = state.user(member.user_id)
        if user is not None and (not query or query in user.username.lower() or query in user.name.lower()):
            views.append(member_view(user, member))
    ids = request.params.integers("user_ids")
    if ids:
        views = [v for v in views if v["id"] in ids]
    page, headers = paginate(request, views)
    return Response.json(page, headers=headers)


def get_member(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``GET /projects/:id/members[/all]/:user_id``."""
    member = _member(project, args["user_id"])
    user = ctx.store.state.user(member.user_id)
    if user is None:
        raise not_found("Member")
    return Response.json(member_view(user, member))


def _member(project: ProjectRecord, user_id: str) -> MemberRecord:
    member = next((m for m in project.members if user_id.isdigit() and m.user_id == int(user_id)), None)
    if member is None:
        raise not_found("Member")
    return member


def _access_level(request: Request) -> int:
    level = request.params.integer("access_level", required=True)
    if level not in ACCESS_LEVELS:
        raise ApiError(400, {"error": "access_level does not have a valid value"})
    return int(level or 0)


def add_member(ctx: Ctx, request: Request, project: ProjectRecord, _a: Args) -> Response:
    """``POST /projects/:id/members``: user_id (id or username) or username, access_level."""
    ident = request.params.text("user_id") or request.params.text("username")
    if not ident:
        raise ApiError(400, {"error": "user_id, username are missing, exactly one parameter must be provided"})
    state = ctx.store.state
    user = state.user(int(ident)) if ident.isdigit() else state.user_by_name(ident)
    if user is None:
        raise not_found("User")
    level = _access_level(request)

    def add(state: GitLabState) -> tuple[GitLabState, MemberRecord]:
        current = state.project(str(project.id))
        if current is None:
            raise not_found("Project")
        if any(m.user_id == user.id for m in current.members):
            raise ApiError(409, {"message": "Member already exists"})
        member = MemberRecord(user_id=user.id, access_level=level, created_at=now())
        return state.replace_project(current.model_copy(update={"members": (*current.members, member)})), member

    member = ctx.store.change(add)
    return Response.json(member_view(user, member), 201)


def edit_member(ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """``PUT /projects/:id/members/:user_id``: access_level."""
    level = _access_level(request)
    target = _member(project, args["user_id"])

    def edit(state: GitLabState) -> tuple[GitLabState, MemberRecord]:
        current = state.project(str(project.id))
        if current is None:
            raise not_found("Project")
        member = target.model_copy(update={"access_level": level})
        members = tuple(member if m.user_id == target.user_id else m for m in current.members)
        return state.replace_project(current.model_copy(update={"members": members})), member

    member = ctx.store.change(edit)
    user = ctx.store.state.user(member.user_id)
    if user is None:
        raise not_found("User")
    return Response.json(member_view(user, member))


def remove_member(ctx: Ctx, _r: Request, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /projects/:id/members/:user_id``; the namespace owner (root) cannot be removed (403)."""
    target = _member(project, args["user_id"])
    if target.user_id == 1:
        raise FORBIDDEN

    def drop(state: GitLabState) -> tuple[GitLabState, None]:
        current = state.project(str(project.id))
        if current is None:
            raise not_found("Project")
        members = tuple(m for m in current.members if m.user_id != target.user_id)
        return state.replace_project(current.model_copy(update={"members": members})), None

    ctx.store.change(drop)
    return Response.empty(204)


def list_users(ctx: Ctx, request: Request, _a: Args) -> Response:
    """``GET /users``: username (exact) or search (name, username, email)."""
    users = list(ctx.store.state.users)
    username = request.params.text("username")
    if username:
        users = [u for u in users if u.username.lower() == username.lower()]
    search = (request.params.text("search") or "").lower()
    if search:
        users = [u for u in users if search in u.username.lower() or search in u.name.lower()
                 or (request.user_id is not None and search == u.email.lower())]
    page, headers = paginate(request, users)
    admin = request.user_id is not None
    return Response.json([user_full(u, private=admin) for u in page], headers=headers)


def get_user(ctx: Ctx, request: Request, args: Args) -> Response:
    """``GET /users/:id``."""
    ident = args["user_id"]
    user = ctx.store.state.user(int(ident)) if ident.isdigit() else None
    if user is None:
        raise not_found("User")
    return Response.json(user_full(user, private=request.user_id is not None))


def current_user(ctx: Ctx, request: Request, _a: Args) -> Response:
    """``GET /user``: root, for any credentials."""
    user = ctx.store.state.user(request.require_user())
    if user is None:
        raise not_found("User")
    return Response.json(user_full(user, private=True))


def version(_c: Ctx, _r: Request, _a: Args) -> Response:
    """``GET /version`` and ``/metadata``."""
    return Response.json({"version": GITLAB_VERSION, "revision": "toolemu", "kas": {"enabled": False,
                          "externalUrl": None, "version": None}, "enterprise": False})


def namespaces(ctx: Ctx, request: Request, _a: Args) -> Response:
    """``GET /namespaces``: root's user namespace (TAC has no groups)."""
    request.require_user()
    root = user_basic(ctx.store.state.user(1)) or {}
    view = {"id": 1, "name": root.get("name"), "path": "root", "kind": "user", "full_path": "root",
            "parent_id": None, "avatar_url": None, "web_url": f"{EXTERNAL_URL}/root", "billable_members_count": 1,
            "plan": "default", "trial": False}
    return Response.json([view], headers=[("X-Total", "1"), ("X-Page", "1"), ("X-Per-Page", "20"),
                                          ("X-Total-Pages", "1"), ("X-Next-Page", ""), ("X-Prev-Page", "")])


def groups(_c: Ctx, request: Request, _a: Args) -> Response:
    """``GET /groups``: none."""
    page, headers = paginate(request, [])
    return Response.json(page, headers=headers)


GLOBAL_ROUTES: tuple[Route, ...] = (
    route("GET", "projects", list_projects),
    route("POST", "projects", create_project),
    route("GET", "users", list_users),
    route("GET", "users/:user_id", get_user),
    route("GET", "user", current_user),
    route("GET", "version", version),
    route("GET", "metadata", version),
    route("GET", "namespaces", namespaces),
    route("GET", "groups", groups),
)
PROJECT_ROUTES: tuple[Route, ...] = (
    route("GET", "", get_project),
    route("PUT", "", update_project, archived_ok=True),
    route("DELETE", "", delete_project, archived_ok=True),
    route("POST", "archive", archive, archived_ok=True),
    route("POST", "unarchive", unarchive, archived_ok=True),
    route("GET", "members", list_members),
    route("GET", "members/all", list_members),
    route("GET", "members/all/:user_id", get_member),
    route("GET", "members/:user_id", get_member),
    route("POST", "members", add_member),
    route("PUT", "members/:user_id", edit_member),
    route("DELETE", "members/:user_id", remove_member),
    route("GET", "users", list_members),
)
