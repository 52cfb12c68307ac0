"""The HTML of the Plane emulator's web pages: plain forms with stable ids, labels and names, every value escaped."""

from __future__ import annotations

import html
from collections.abc import Iterable

from toolemu.services.plane.store import PRIORITIES, Obj

ROLES = ((20, "Admin"), (15, "Member"), (5, "Guest"))
"""Plane's project roles as its members page offers them."""


def esc(value: object) -> str:
    """``value`` as HTML text or attribute content."""
    return html.escape(str(value), quote=True)


def layout(title: str, body: str, *, user: str = "", workspace: str = "") -> bytes:
    """A whole page: ``body`` under a header naming the signed-in user."""
    nav = ""
    if user:
        nav = (f'<nav id="top-nav"><a id="projects-link" href="/{esc(workspace)}/projects/">Projects</a> '
               f'<span id="signed-in-as">Signed in as {esc(user)}</span> '
               '<form id="sign-out-form" method="post" action="/auth/sign-out/">'
               '<button id="sign-out-button" type="submit">Sign out</button></form></nav>\n')
    return (f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{esc(title)} - Plane'
            f'</title>\n</head>\n<body>\n{nav}<main>\n<h1>{esc(title)}</h1>\n{body}\n</main>\n</body>\n</html>\n'
            ).encode()


def error_box(error: str) -> str:
    """The form error shown above a form, or nothing."""
    return f'<p id="form-error" role="alert">{esc(error)}</p>\n' if error else ""


def _options(choices: Iterable[tuple[str, str]], selected: Iterable[str] = ()) -> str:
    chosen = set(selected)
    return "".join(f'<option value="{esc(v)}"{" selected" if v in chosen else ""}>{esc(text)}</option>'
                   for v, text in choices)


def sign_in(next_path: str, error: str = "") -> str:
    """The sign-in form (any email and password are accepted)."""
    return (error_box(error) + '<form id="sign-in-form" method="post" action="/auth/sign-in/">\n'
            '<label for="email">Email</label> <input id="email" name="email" type="email" required>\n'
            '<label for="password">Password</label> <input id="password" name="password" type="password">\n'
            f'<input type="hidden" name="next_path" value="{esc(next_path)}">\n'
            '<button id="sign-in-button" type="submit">Sign in</button>\n</form>')


def projects(slug: str, rows: list[Obj]) -> str:
    """The workspace's projects, each linking to its issues, members and settings."""
    items = "".join(
        f'<li id="project-{esc(p["id"])}"><a class="project-link" href="/{esc(slug)}/projects/{esc(p["id"])}'
        f'/issues/">{esc(p["name"])}</a> <span class="project-identifier">{esc(p["identifier"])}</span> '
        f'<span class="project-members">{len(p["members"])} members</span> '
        f'<a href="/{esc(slug)}/projects/{esc(p["id"])}/settings/members/">Members</a> '
        f'<a href="/{esc(slug)}/projects/{esc(p["id"])}/settings/">Settings</a></li>\n' for p in rows)
    return (f'<p><a id="new-project-link" href="/{esc(slug)}/projects/new/">Add project</a></p>\n'
            f'<ul id="project-list">\n{items}</ul>' if rows else
            f'<p><a id="new-project-link" href="/{esc(slug)}/projects/new/">Add project</a></p>\n'
            '<p id="no-projects">No projects yet.</p>')


def new_project(slug: str, form: dict[str, str], error: str = "") -> str:
    """The create-project form."""
    return (error_box(error) + f'<form id="create-project-form" method="post" action="/{esc(slug)}/projects/new/">\n'
            f'<label for="project-name">Project name</label> <input id="project-name" name="name" required '
            f'value="{esc(form.get("name", ""))}">\n'
            '<label for="project-identifier">Project ID</label> <input id="project-identifier" name="identifier" '
            f'maxlength="12" required value="{esc(form.get("identifier", ""))}">\n'
            '<label for="project-description">Description</label> <textarea id="project-description" '
            f'name="description">{esc(form.get("description", ""))}</textarea>\n'
            '<label for="project-network">Access</label> <select id="project-network" name="network">'
            + _options((("2", "Public"), ("0", "Private")), (form.get("network", "2"),)) + '</select>\n'
            '<button id="create-project-button" type="submit">Create project</button>\n</form>')


def project_tabs(slug: str, project: Obj) -> str:
    """Links to a project's pages."""
    base = f"/{esc(slug)}/projects/{esc(project['id'])}"
    return (f'<p id="project-tabs"><a id="issues-tab" href="{base}/issues/">Issues</a> '
            f'<a id="new-issue-link" href="{base}/issues/new/">New issue</a> '
            f'<a id="members-tab" href="{base}/settings/members/">Members</a> '
            f'<a id="settings-tab" href="{base}/settings/">Settings</a></p>\n')


def _names(users: dict[str, Obj], ids: Iterable[str]) -> str:
    return ", ".join(users[u]["display_name"] for u in ids if u in users)


def issues(slug: str, project: Obj, rows: list[Obj], states: dict[str, Obj], users: dict[str, Obj]) -> str:
    """A project's issues: identifier, title, state, priority and assignees."""
    base = f"/{esc(slug)}/projects/{esc(project['id'])}/issues"
    body = "".join(
        f'<tr id="issue-{esc(i["id"])}"><td class="issue-key">{esc(project["identifier"])}-{i["sequence_id"]}</td>'
        f'<td class="issue-name"><a href="{base}/{esc(i["id"])}/">{esc(i["name"])}</a></td>'
        f'<td class="issue-state">{esc(states.get(i["state"], {}).get("name", ""))}</td>'
        f'<td class="issue-priority">{esc(i["priority"])}</td>'
        f'<td class="issue-assignees">{esc(_names(users, i["assignees"]))}</td></tr>\n' for i in rows)
    return (project_tabs(slug, project) + '<table id="issue-list">\n<thead><tr><th>ID</th><th>Title</th>'
            f'<th>State</th><th>Priority</th><th>Assignees</th></tr></thead>\n<tbody>\n{body}</tbody>\n</table>')


def _state_select(states: list[Obj], selected: str) -> str:
    return ('<select id="state" name="state">' + _options(((s["id"], s["name"]) for s in states), (selected,))
            + "</select>")


def _assignee_select(members: list[Obj], selected: Iterable[str]) -> str:
    return ('<select id="assignees" name="assignees" multiple>'
            + _options(((u["id"], u["display_name"]) for u in members), selected) + "</select>")


def issue_detail(slug: str, project: Obj, issue: Obj, states: list[Obj], members: list[Obj],
                 users: dict[str, Obj], error: str = "") -> str:
    """One issue with its state and assignee forms."""
    base = f"/{esc(slug)}/projects/{esc(project['id'])}/issues/{esc(issue['id'])}"
    state = next((s["name"] for s in states if s["id"] == issue["state"]), "")
    return (project_tabs(slug, project) + error_box(error)
            + f'<p id="issue-key">{esc(project["identifier"])}-{issue["sequence_id"]}</p>\n'
            f'<h2 id="issue-name">{esc(issue["name"])}</h2>\n'
            f'<p>State: <span id="issue-state">{esc(state)}</span></p>\n'
            f'<p>Priority: <span id="issue-priority">{esc(issue["priority"])}</span></p>\n'
            f'<p>Assignees: <span id="issue-assignees">{esc(_names(users, issue["assignees"]))}</span></p>\n'
            f'<div id="issue-description"><pre>{esc(issue["description_html"])}</pre></div>\n'
            f'<form id="state-form" method="post" action="{base}/state/">\n'
            f'<label for="state">State</label> {_state_select(states, issue["state"])}\n'
            '<button id="update-state-button" type="submit">Update state</button>\n</form>\n'
            f'<form id="assignees-form" method="post" action="{base}/assignees/">\n'
            f'<label for="assignees">Assignees</label> {_assignee_select(members, issue["assignees"])}\n'
            '<button id="update-assignees-button" type="submit">Update assignees</button>\n</form>')


def new_issue(slug: str, project: Obj, states: list[Obj], members: list[Obj], form: dict[str, list[str]],
              error: str = "") -> str:
    """The create-issue form (title, description, state, priority, assignees)."""
    first = {k: (v[0] if v else "") for k, v in form.items()}
    return (project_tabs(slug, project) + error_box(error)
            + f'<form id="create-issue-form" method="post" action="/{esc(slug)}/projects/{esc(project["id"])}'
            '/issues/new/">\n<label for="issue-name">Title</label> <input id="issue-name" name="name" required '
            f'value="{esc(first.get("name", ""))}">\n'
            '<label for="issue-description-input">Description</label> <textarea id="issue-description-input" '
            f'name="description">{esc(first.get("description", ""))}</textarea>\n'
            '<label for="state">State</label> '
            f'{_state_select(states, first.get("state") or project["default_state"])}\n'
            '<label for="priority">Priority</label> <select id="priority" name="priority">'
            + _options(((p, p) for p in PRIORITIES), (first.get("priority") or "none",)) + '</select>\n'
            f'<label for="assignees">Assignees</label> {_assignee_select(members, form.get("assignees", []))}\n'
            '<button id="create-issue-button" type="submit">Create issue</button>\n</form>')


def members(slug: str, project: Obj, current: list[Obj], candidates: list[Obj], error: str = "") -> str:
    """A project's members, each with a remove button, and the add-member form."""
    base = f"/{esc(slug)}/projects/{esc(project['id'])}/settings/members"
    role_names = dict(ROLES)
    rows = "".join(
        f'<tr id="member-{esc(u["id"])}"><td class="member-name">{esc(u["display_name"])}</td>'
        f'<td class="member-email">{esc(u["email"])}</td>'
        f'<td class="member-role">{esc(role_names.get(project["members"][u["id"]], "Viewer"))}</td>'
        f'<td><form method="post" action="{base}/{esc(u["id"])}/remove/"><button id="remove-member-'
        f'{esc(u["id"])}" type="submit">Remove</button></form></td></tr>\n' for u in current)
    return (project_tabs(slug, project) + error_box(error)
            + f'<table id="member-list">\n<tbody>\n{rows}</tbody>\n</table>\n'
            f'<form id="add-member-form" method="post" action="{base}/">\n'
            '<label for="member">Member</label> <select id="member" name="member_id">'
            + _options((u["id"], f'{u["display_name"]} ({u["email"]})') for u in candidates) + '</select>\n'
            '<label for="role">Role</label> <select id="role" name="role">'
            + _options(((str(v), t) for v, t in ROLES), ("15",)) + '</select>\n'
            '<button id="add-member-button" type="submit">Add member</button>\n</form>')


def settings(slug: str, project: Obj) -> str:
    """A project's settings: its fields and the way to delete it."""
    return (project_tabs(slug, project)
            + f'<p>Name: <span id="settings-project-name">{esc(project["name"])}</span></p>\n'
            f'<p>Identifier: <span id="settings-project-identifier">{esc(project["identifier"])}</span></p>\n'
            f'<p><a id="delete-project-link" href="/{esc(slug)}/projects/{esc(project["id"])}/settings/delete/">'
            'Delete project</a></p>')


def delete_confirm(slug: str, project: Obj, error: str = "") -> str:
    """The confirm form: the project's name must be typed to delete it, as Plane asks."""
    return (project_tabs(slug, project) + error_box(error)
            + f'<p id="delete-warning">Delete project {esc(project["name"])}? All of its issues are deleted too.</p>\n'
            f'<form id="delete-project-form" method="post" action="/{esc(slug)}/projects/{esc(project["id"])}'
            '/settings/delete/">\n<label for="confirm-name">Type the project name to confirm</label> '
            '<input id="confirm-name" name="confirm_name" required>\n'
            '<button id="delete-project-button" type="submit">Delete project</button>\n</form>')
