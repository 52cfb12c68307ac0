"""GitLab's issue and merge request pages: lists, new issue, detail with close/reopen, assignee, milestone, comment."""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolemu.services.gitlab import api
from toolemu.services.gitlab.http import Response
from toolemu.services.gitlab.issuable import by_iid
from toolemu.services.gitlab.routing import Args, Handler, Route, route
from toolemu.services.gitlab.store import IssueRecord, MergeRequestRecord, NoteRecord, ProjectRecord
from toolemu.services.gitlab.web_page import WebRequest, esc, field, form, hidden, select, textarea
from toolemu.services.gitlab.web_repo import base, project_page

_STATES = (("opened", "Open"), ("closed", "Closed"), ("merged", "Merged"), ("all", "All"))


def _names(w: WebRequest, ids: Sequence[int]) -> str:
    state = w.ctx.store.state
    return ", ".join(f"@{u.username}" for u in (state.user(i) for i in ids) if u is not None) or "None"


def _milestone_title(project: ProjectRecord, milestone_id: int | None) -> str:
    return next((m.title for m in project.milestones if m.id == milestone_id), "None")


def _list(w: WebRequest, project: ProjectRecord, kind: str) -> Response:
    wanted = w.text("state") or "opened"
    items: Sequence[IssueRecord | MergeRequestRecord] = project.issues if kind == "issues" else project.merge_requests
    shown = [i for i in items if wanted == "all" or i.state == wanted]
    query = w.text("search").lower()
    if query:
        shown = [i for i in shown if query in i.title.lower() or query in i.description.lower()]
    shown.sort(key=lambda i: i.iid, reverse=True)
    sigil = "#" if kind == "issues" else "!"
    tabs = " ".join(f'<a id="state-{v}" href="{base(project)}/-/{kind}?state={v}">{esc(t)}</a>'
                    for v, t in _STATES if kind == "merge_requests" or v != "merged")
    search = (f'<form method="get" action="{base(project)}/-/{kind}">{hidden("state", wanted)}'
              f'{field("Search", "search", "search-input", w.text("search"))}'
              '<button type="submit" id="search-button">Search</button></form>')
    rows = "".join(
        f'<tr class="{kind[:-1]}" data-iid="{i.iid}"><td>{sigil}{i.iid}</td><td><a href="{base(project)}/-/{kind}/'
        f'{i.iid}">{esc(i.title)}</a></td><td>{esc(i.state)}</td><td>{esc(_names(w, i.assignee_ids))}</td>'
        f'<td>{esc(", ".join(i.labels))}</td></tr>' for i in shown)
    new = f'<p><a id="new-issue" href="{base(project)}/-/issues/new">New issue</a></p>' if kind == "issues" else ""
    table = (f'<table id="{kind.replace("_", "-")}-list"><tr><th>Ref</th><th>Title</th><th>State</th>'
             f'<th>Assignees</th><th>Labels</th></tr>{rows}</table>')
    title = "Issues" if kind == "issues" else "Merge requests"
    return project_page(w, project, title, f"<p>{tabs}</p>{new}{search}{table}")


def issues(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/issues``: ``state`` (opened, closed, all) and ``search``."""
    return _list(w, project, "issues")


def merge_requests(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/merge_requests``."""
    return _list(w, project, "merge_requests")


def _people_options(w: WebRequest, project: ProjectRecord) -> list[tuple[str, str]]:
    state = w.ctx.store.state
    users = [state.user(m.user_id) for m in project.members]
    return [("0", "Unassigned"), *((str(u.id), f"{u.name} (@{u.username})") for u in users if u is not None)]


def _milestone_options(project: ProjectRecord) -> list[tuple[str, str]]:
    return [("", "No milestone"), *((str(m.id), m.title) for m in project.milestones if m.state == "active")]


def new_issue(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``GET /-/issues/new``."""
    fields = (field("Title", "title", "issue_title") + textarea("Description", "description", "issue_description")
              + select("Assignee", "assignee_id", "issue_assignee", _people_options(w, project), "0")
              + select("Milestone", "milestone_id", "issue_milestone", _milestone_options(project))
              + field("Labels (comma-separated)", "labels", "issue_labels"))
    return project_page(w, project, "New issue",
                        form(f"{base(project)}/-/issues", fields, "Create issue", "create-issue"))


def create_issue(w: WebRequest, project: ProjectRecord, _a: Args) -> Response:
    """``POST /-/issues``: the API's issue creation."""
    pairs = [(k, v) for k, v in w.pairs("title", "description", "assignee_id", "milestone_id", "labels") if v]
    created = api.call(w.ctx, "POST", ["issues"], pairs, w.user_id, project)
    return _redirect_to(project, "issues", int(json.loads(created.body)["iid"]))


def _redirect_to(project: ProjectRecord, kind: str, iid: int) -> Response:
    return Response(302, b"", [("Location", f"{base(project)}/-/{kind}/{iid}")])


def _notes(w: WebRequest, notes: Sequence[NoteRecord]) -> str:
    state = w.ctx.store.state
    items = "".join(
        f'<li class="note{" system-note" if n.system else ""}" id="note_{n.id}"><strong>'
        f'{esc(next((u.username for u in [state.user(n.author_id)] if u is not None), "ghost"))}</strong> '
        f'{esc(n.created_at)}<pre>{esc(n.body)}</pre></li>' for n in notes)
    return f'<h2>Activity</h2><ul id="notes">{items}</ul>'


def _detail(w: WebRequest, project: ProjectRecord, kind: str, item: IssueRecord | MergeRequestRecord) -> Response:
    action = f"{base(project)}/-/{kind}/{item.iid}"
    sigil = "#" if kind == "issues" else "!"
    closed = item.state != "opened"
    toggle = "" if item.state == "merged" else form(
        action, hidden("state_event", "reopen" if closed else "close"),
        f"Reopen {kind[:-1].replace('_', ' ')}" if closed else f"Close {kind[:-1].replace('_', ' ')}",
        "reopen-button" if closed else "close-button", method="put")
    info = (f'<p><span id="{kind[:-1]}-state">{esc(item.state)}</span> {sigil}{item.iid} opened by '
            f'@{esc(_names(w, [item.author_id]).lstrip("@"))}</p>'
            f'<pre id="{kind[:-1]}-description">{esc(item.description)}</pre>'
            f'<p>Assignees: <span id="assignees">{esc(_names(w, item.assignee_ids))}</span></p>'
            f'<p>Milestone: <span id="milestone">{esc(_milestone_title(project, item.milestone_id))}</span></p>'
            f'<p>Labels: <span id="labels">{esc(", ".join(item.labels) or "None")}</span></p>')
    chosen = str(item.assignee_ids[0]) if item.assignee_ids else "0"
    assign = form(action, select("Assignee", "assignee_id", "assignee-select", _people_options(w, project), chosen),
                  "Save assignee", "save-assignee", method="put")
    milestone = form(action, select("Milestone", "milestone_id", "milestone-select", _milestone_options(project),
                                    str(item.milestone_id or "")), "Save milestone", "save-milestone", method="put")
    merge = ""
    if isinstance(item, MergeRequestRecord):
        info += (f'<p>Source: <span id="source-branch">{esc(item.source_branch)}</span> into '
                 f'<span id="target-branch">{esc(item.target_branch)}</span></p>')
        if item.state == "opened":
            merge = form(f"{action}/merge", "", "Merge", "merge-button")
    comment = form(f"{action}/notes", textarea("Comment", "body", "note-body"), "Comment", "add-comment")
    body = info + toggle + merge + assign + milestone + _notes(w, item.notes) + comment
    return project_page(w, project, f"{item.title} ({sigil}{item.iid})", body)


def issue(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``GET /-/issues/<iid>``."""
    return _detail(w, project, "issues", by_iid(project.issues, args["iid"], "Issue"))


def merge_request(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``GET /-/merge_requests/<iid>``."""
    return _detail(w, project, "merge_requests", by_iid(project.merge_requests, args["iid"], "Merge Request"))


def _updater(kind: str) -> Handler:
    """``PUT /-/<kind>/<iid>``: the API's update with the form's state event, assignee or milestone."""

    def handler(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
        pairs = w.pairs("state_event", "assignee_id", "milestone_id", "title", "description")
        api.call(w.ctx, "PUT", [kind, args["iid"]], pairs, w.user_id, project)
        return _redirect_to(project, kind, int(args["iid"]))

    return handler


def _commenter(kind: str) -> Handler:
    """``POST /-/<kind>/<iid>/notes``: the API's comment."""

    def handler(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
        api.call(w.ctx, "POST", [kind, args["iid"], "notes"], w.pairs("body"), w.user_id, project)
        return _redirect_to(project, kind, int(args["iid"]))

    return handler


def merge(w: WebRequest, project: ProjectRecord, args: Args) -> Response:
    """``POST /-/merge_requests/<iid>/merge``: the API's merge (protected targets hold)."""
    api.call(w.ctx, "PUT", ["merge_requests", args["iid"], "merge"], [], w.user_id, project)
    return _redirect_to(project, "merge_requests", int(args["iid"]))


PAGES: tuple[Route, ...] = (
    route("GET", "-/issues", issues),
    route("GET", "-/issues/new", new_issue),
    route("POST", "-/issues", create_issue),
    route("GET", "-/issues/:iid", issue),
    route("PUT", "-/issues/:iid", _updater("issues")),
    route("POST", "-/issues/:iid/notes", _commenter("issues")),
    route("GET", "-/merge_requests", merge_requests),
    route("GET", "-/merge_requests/:iid", merge_request),
    route("PUT", "-/merge_requests/:iid", _updater("merge_requests")),
    route("POST", "-/merge_requests/:iid/notes", _commenter("merge_requests")),
    route("POST", "-/merge_requests/:iid/merge", merge),
)
