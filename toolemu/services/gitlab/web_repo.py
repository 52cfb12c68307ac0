"""GitLab's project pages: overview with README, file tree and blobs, branches, members and settings."""

from __future__ import annotations

from toolemu.services.gitlab import api
from toolemu.services.gitlab.http import Response, not_found
from toolemu.services.gitlab.render import ACCESS_DESCRIPTIONS
from toolemu.services.gitlab.repo import Repo
from toolemu.services.gitlab.routing import Args, Handler, Route, route
from toolemu.services.gitlab.store import ProjectRecord
from toolemu.services.gitlab.web_page import (
    WebRequest,
    esc,
    field,
    form,
    page,
    redirect,
    select,
    textarea,
    url,
)

ROLES = {10: "Guest", 20: "Reporter", 30: "Developer", 40: "Maintainer", 50: "Owner"}
_README_NAMES = ("README.md", "README", "README.txt", "README.rst", "readme.md")


def project_page(w: WebRequest, project: ProjectRecord, title: str, body: str, *, status: int = 200) -> Response:
    """A page inside a project (with its sidebar)."""
    return page(title, body, w.nav_in(project), status=status)


def base(project: ProjectRecord) -> str:
    """The project's web path."""
    return url(project.namespace, project.path)


def split_ref(repo: Repo, rest: str) -> tuple[str, str]:
    """(ref, path) of ``<ref>/<path>``: the longest branch name that prefixes it, else its first segment."""
    parts = rest.split("/")
    branches = repo.branches()
    for cut in range(len(parts), 0, -1):
        ref = "/".join(parts[:cut])
        if ref in branches:
            return ref, "/".join(parts[cut:])
    return parts[0], "/".join(parts[1:])


def _tree_table(project: ProjectRecord, repo: Repo, ref: str, path: str) -> str:
    entries = repo.tree(ref, path)
    if entries is None:
        raise not_found("Tree")
    entries.sort(key=lambda e: (e.type != "tree", e.name.lower()))
    rows = "".join(
        f'<tr class="tree-item"><td><a href="{base(project)}/-/{"tree" if e.type == "tree" else "blob"}/'
        f'{esc(url(ref, e.path).lstrip("/"))}">{esc(e.name)}{"/" if e.type == "tree" else ""}</a></td></tr>'
        for e in entries)
    return f'<table id="file-tree"><tr><th>Name</th></tr>{rows}</table>'


def overview(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /<namespace>/<project>``: description, clone URL, the default branch's files and README."""
    repo = w.ctx.repo(project)
    branch = repo.default_branch()
    info = (f'<p id="project-description">{esc(project.description)}</p>'
            f'<p>Visibility: <span id="project-visibility">{esc(project.visibility)}</span></p>')
    if project.archived:
        info += '<p id="archived-banner" role="status">This project is archived. Its data is read-only.</p>'
    if branch is None:
        return project_page(w, project, project.name, info + '<p id="empty-repo">The repository is empty.</p>')
    body = info + f'<p>Default branch: <span id="default-branch">{esc(branch)}</span></p>'
    body += _tree_table(project, repo, branch, "")
    for name in _README_NAMES:
        found = repo.blob(branch, name)
        if found is not None:
            body += f'<h2>{esc(name)}</h2><pre id="readme">{esc(found[1].decode("utf-8", "replace"))}</pre>'
            break
    return project_page(w, project, project.name, body)


def tree_root(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/tree``: the default branch's tree."""
    branch = w.ctx.repo(project).default_branch() or "main"
    return redirect(f"{base(project)}/-/tree/{url(branch).lstrip('/')}")


def tree(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``GET /-/tree/<ref>/<path>``."""
    repo = w.ctx.repo(project)
    ref, path = split_ref(repo, args["rest"])
    crumbs = f'<p>Ref: <span id="ref-name">{esc(ref)}</span> Path: <span id="tree-path">/{esc(path)}</span></p>'
    return project_page(w, project, f"{project.name} · {path or ref}", crumbs + _tree_table(project, repo, ref, path))


def blob(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``GET /-/blob/<ref>/<path>``: the file's text and a link to its raw bytes."""
    repo = w.ctx.repo(project)
    ref, path = split_ref(repo, args["rest"])
    found = repo.blob(ref, path) if path else None
    if found is None:
        raise not_found("File")
    raw = f"{base(project)}/-/raw/{url(ref, path).lstrip('/')}"
    body = (f'<p>Ref: <span id="ref-name">{esc(ref)}</span> File: <span id="file-path">{esc(path)}</span> '
            f'<a id="raw-link" href="{esc(raw)}">Open raw</a></p>'
            f'<pre id="blob-content">{esc(found[1].decode("utf-8", "replace"))}</pre>')
    return project_page(w, project, path, body)


def branches(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/branches``: every branch with a delete button (the default branch has none)."""
    repo = w.ctx.repo(project)
    default = repo.default_branch()
    rows = ""
    for i, name in enumerate(sorted(repo.branches())):
        action = "" if name == default else form(f"{base(project)}/-/branches/{url(name).lstrip('/')}", "",
                                                 "Delete branch", f"delete-branch-{i}", method="delete")
        rows += (f'<tr class="branch" data-name="{esc(name)}"><td><a href="{base(project)}/-/tree/'
                 f'{esc(url(name).lstrip("/"))}">{esc(name)}</a>{" (default)" if name == default else ""}</td>'
                 f'<td>{action}</td></tr>')
    return project_page(w, project, "Branches", f'<table id="branches">{rows}</table>')


def delete_branch(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /-/branches/<name>``: the API's branch deletion (the default branch is refused)."""
    api.call(w.ctx, "DELETE", ["repository", "branches", *args["name"].split("/")], [], w.user_id, project)
    return redirect(f"{base(project)}/-/branches")


def members(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/project_members``: members with their roles, a remove button each, and an invite form."""
    state = w.ctx.store.state
    rows = ""
    for m in project.members:
        user = state.user(m.user_id)
        if user is None:
            continue
        remove = form(f"{base(project)}/-/project_members/{m.user_id}", "", "Remove member",
                      f"remove-member-{user.username}", method="delete")
        rows += (f'<tr class="member" data-username="{esc(user.username)}"><td>{esc(user.name)}</td>'
                 f'<td>@{esc(user.username)}</td><td>{esc(ROLES.get(m.access_level, m.access_level))}</td>'
                 f'<td>{remove}</td></tr>')
    invite = form(f"{base(project)}/-/project_members",
                  field("Username", "username", "invite-username") +
                  select("Role", "access_level", "invite-access-level", [(str(k), v) for k, v in ROLES.items()], "30"),
                  "Invite", "invite-member")
    body = (f'<table id="members"><tr><th>Name</th><th>Username</th><th>Role</th><th></th></tr>{rows}</table>'
            f'<h2>Invite a member</h2>{invite}')
    return project_page(w, project, "Project members", body)


def add_member(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``POST /-/project_members``: the API's member addition."""
    api.call(w.ctx, "POST", ["members"], w.pairs("username", "access_level"), w.user_id, project)
    return redirect(f"{base(project)}/-/project_members")


def remove_member(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /-/project_members/<user_id>``: the API's removal (the owner cannot be removed)."""
    api.call(w.ctx, "DELETE", ["members", args["user_id"]], [], w.user_id, project)
    return redirect(f"{base(project)}/-/project_members")


def settings(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /edit``: name, description and visibility; archive or unarchive; delete (type the path to confirm)."""
    general = form(base(project),
                   field("Project name", "name", "project-name", project.name) +
                   textarea("Project description", "description", "project-description-input",
                            project.description) +
                   select("Project visibility", "visibility", "project-visibility-select",
                          [("private", "Private"), ("internal", "Internal"), ("public", "Public")],
                          project.visibility), "Save changes", "save-general", method="put")
    verb = "unarchive" if project.archived else "archive"
    archive = form(f"{base(project)}/{verb}", "", f"{verb.capitalize()} project", f"{verb}-project")
    delete = form(base(project), field(f"Enter {project.path_with_namespace} to confirm", "confirm_name",
                                       "confirm-name-input"), "Delete project", "delete-project", method="delete")
    body = (f'<h2>General</h2>{general}<h2>{verb.capitalize()} project</h2>{archive}'
            f'<h2>Delete project</h2><p>This action deletes the project, its repository, issues and merge requests.'
            f'</p>{delete}')
    return project_page(w, project, "General settings", body)


def update(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``PUT /<namespace>/<project>``: the API's project update."""
    api.call(w.ctx, "PUT", [], w.pairs("name", "description", "visibility"), w.user_id, project)
    return redirect(f"{base(project)}/edit")


def set_archived(verb: str) -> Handler:
    """``POST /archive`` or ``/unarchive``."""

    def handler(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
        api.call(w.ctx, "POST", [verb], [], w.user_id, project)
        return redirect(base(project))

    return handler


def delete(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``DELETE /<namespace>/<project>``: needs the project's path typed, then the API's deletion."""
    if w.text("confirm_name").strip() != project.path_with_namespace:
        return project_page(w, project, "General settings", '<p id="error-message" role="alert">Type the '
                            f'project path ({esc(project.path_with_namespace)}) to confirm the deletion.</p>',
                            status=422)
    api.call(w.ctx, "DELETE", [], [], w.user_id, project)
    return redirect("/dashboard/projects")


def repository_settings(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/settings/repository``: protected branches with their levels and an unprotect button each."""
    rows = ""
    for pb in project.protected_branches:
        button = form(f"{base(project)}/-/protected_branches/{pb.id}", "", "Unprotect", f"unprotect-{pb.id}",
                      method="delete")
        rows += (f'<tr class="protected-branch" data-name="{esc(pb.name)}"><td>{esc(pb.name)}</td>'
                 f'<td>{esc(ACCESS_DESCRIPTIONS.get(pb.merge_access_level, pb.merge_access_level))}</td>'
                 f'<td>{esc(ACCESS_DESCRIPTIONS.get(pb.push_access_level, pb.push_access_level))}</td>'
                 f'<td>{button}</td></tr>')
    body = ('<h2>Protected branches</h2><table id="protected-branches"><tr><th>Branch</th><th>Allowed to merge</th>'
            f'<th>Allowed to push and merge</th><th></th></tr>{rows}</table>')
    return project_page(w, project, "Repository settings", body)


def unprotect(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``DELETE /-/protected_branches/<id>``: the API's unprotect of that rule."""
    rule = next((p for p in project.protected_branches if str(p.id) == args["id"]), None)
    if rule is None:
        raise not_found("Protected branch")
    api.call(w.ctx, "DELETE", ["protected_branches", rule.name], [], w.user_id, project)
    return redirect(f"{base(project)}/-/settings/repository")


PAGES: tuple[Route, ...] = (
    route("GET", "", overview),
    route("PUT", "", update),
    route("DELETE", "", delete),
    route("GET", "edit", settings),
    route("POST", "archive", set_archived("archive")),
    route("POST", "unarchive", set_archived("unarchive")),
    route("GET", "-/tree", tree_root),
    route("GET", "-/tree/*rest", tree),
    route("GET", "-/blob/*rest", blob),
    route("GET", "-/branches", branches),
    route("DELETE", "-/branches/*name", delete_branch),
    route("GET", "-/project_members", members),
    route("POST", "-/project_members", add_member),
    route("DELETE", "-/project_members/:user_id", remove_member),
    route("GET", "-/settings/repository", repository_settings),
    route("DELETE", "-/protected_branches/:id", unprotect),
)
