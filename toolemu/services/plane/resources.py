"""Plane API v1 handlers for the workspace, its users, projects and project members.

Each handler takes the store (its lock held by the caller), the request and the path parameters, and returns
``(status, body)`` or raises ``HttpError`` with Plane's error body.
"""

from __future__ import annotations

import re
from typing import Any

from toolemu.services.plane.http import HttpError, Request, not_found, paginate
from toolemu.services.plane.store import (
    DEFAULT_STATES,
    Obj,
    Store,
    new_id,
    now,
    project_object,
    state_object,
    user_lite,
)

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PROJECT_FIELDS = {"name", "description", "identifier", "network", "emoji", "icon_prop", "module_view",
                   "cycle_view", "issue_views_view", "page_view", "intake_view", "archive_in", "close_in",
                   "timezone", "project_lead", "default_assignee", "logo_props", "cover_image"}
Reply = tuple[int, Any]


def required(data: dict[str, Any], name: str, max_length: int) -> str:
    """The string field ``name`` of a body, as DRF validates a required ``CharField``."""
    value = data.get(name)
    if value is None or value == "":
        raise HttpError(400, {name: ["This field is required." if value is None else "This field may not be blank."]})
    if not isinstance(value, str):
        raise HttpError(400, {name: ["Not a valid string."]})
    if len(value) > max_length:
        raise HttpError(400, {name: [f"Ensure this field has no more than {max_length} characters."]})
    return value


def project_view(project: Obj) -> Obj:
    """A project as the API shows it (without our member table)."""
    shown = {k: v for k, v in project.items() if k != "members"}
    shown["total_members"] = len(project["members"])
    return shown


def find_project(store: Store, pid: str) -> Obj:
    project: Obj | None = store.data["projects"].get(pid)
    if project is None:
        raise not_found()
    return project


def me(store: Store, _request: Request, _params: dict[str, str]) -> Reply:
    user = store.data["users"][store.data["admin"]]
    return 200, {**user_lite(user), "username": user["display_name"], "is_bot": False}


def workspace_members(store: Store, _request: Request, _params: dict[str, str]) -> Reply:
    users = store.data["users"]
    return 200, [{**user_lite(users[uid]), "role": role} for uid, role in store.data["workspace_members"].items()
                 if uid in users]


def list_projects(store: Store, request: Request, _params: dict[str, str]) -> Reply:
    projects = sorted(store.data["projects"].values(), key=lambda p: (p["sort_order"], p["created_at"]))
    return 200, paginate([project_view(p) for p in projects], request.query)


def create_project(store: Store, request: Request, _params: dict[str, str]) -> Reply:
    data = request.json()
    name = required(data, "name", 255)
    identifier = required(data, "identifier", 12).strip().upper()
    projects = store.data["projects"].values()
    if any(p["name"] == name for p in projects):
        raise HttpError(410, {"name": "The project name is already taken"})
    if any(p["identifier"] == identifier for p in projects):
        raise HttpError(410, {"identifier": "The project identifier is already taken"})
    network = data.get("network", 2)
    if network not in (0, 2):
        raise HttpError(400, {"network": [f"\"{network}\" is not a valid choice."]})
    admin = store.data["admin"]
    at = now()
    project = project_object(store.data["workspace"]["id"], name, identifier, created_by=admin, at=at,
                             description=str(data.get("description") or ""), network=network)
    project["members"] = {admin: 20}
    lead = data.get("project_lead")
    if isinstance(lead, str) and lead in store.data["users"]:
        project["project_lead"] = lead
        project["members"][lead] = 20
    store.data["projects"][project["id"]] = project
    for state_name, color, sequence, group, default in DEFAULT_STATES:
        state = state_object(project, state_name, color, sequence, group, default, created_by=admin, at=at)
        store.data["states"][state["id"]] = state
        if default:
            project["default_state"] = state["id"]
    return 201, project_view(project)


def get_project(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    return 200, project_view(find_project(store, params["pid"]))


def update_project(store: Store, request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    data = {k: v for k, v in request.json().items() if k in _PROJECT_FIELDS}
    if project["archived_at"]:
        raise HttpError(400, {"error": "Archived project cannot be updated"})
    if "name" in data:
        name = required(data, "name", 255)
        if any(p["name"] == name and p["id"] != project["id"] for p in store.data["projects"].values()):
            raise HttpError(410, {"name": "The project name is already taken"})
    if "identifier" in data:
        data["identifier"] = required(data, "identifier", 12).strip().upper()
        if any(p["identifier"] == data["identifier"] and p["id"] != project["id"]
               for p in store.data["projects"].values()):
            raise HttpError(410, {"identifier": "The project identifier is already taken"})
    project.update(data)
    project["updated_at"] = now()
    return 200, project_view(project)


def delete_project(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    pid = find_project(store, params["pid"])["id"]
    del store.data["projects"][pid]
    for table in ("states", "labels", "issues"):
        rows = store.data[table]
        for key in [k for k, v in rows.items() if v["project"] == pid]:
            del rows[key]
    return 204, None


def list_members(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    users = store.data["users"]
    return 200, [user_lite(users[uid]) for uid in project["members"] if uid in users]


def get_member(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    if params["uid"] not in project["members"]:
        raise HttpError(404, {"error": "User is not a member of this project"})
    return 200, user_lite(store.data["users"][params["uid"]])


def add_member(store: Store, request: Request, params: dict[str, str]) -> Reply:
    """Adds members: by ``email`` (API v1), or by ``member_id`` / ``members: [{member_id, role}]`` (the web app's
    form), each a workspace user; an email Plane does not know creates the user, as Plane does."""
    project = find_project(store, params["pid"])
    data = request.json()
    if "members" in data or "member_id" in data:
        entries = data.get("members") if "members" in data else [data]
        if not isinstance(entries, list) or not entries:
            raise HttpError(400, {"error": "Atleast one member is required"})
        added = []
        for entry in entries:
            member_id = entry.get("member_id") if isinstance(entry, dict) else None
            if not isinstance(member_id, str) or member_id not in store.data["workspace_members"]:
                raise HttpError(400, {"error": "User is not a member of the workspace"})
            project["members"][member_id] = _role(entry.get("role", 15))
            added.append({"id": member_id, "member": member_id, "project": project["id"],
                          "role": project["members"][member_id]})
        return 201, added
    email = data.get("email")
    if not isinstance(email, str) or not email:
        raise HttpError(400, {"error": "Expected email, workspace_slug, project_id, one or more of the fields are "
                                       "missing."})
    if not _EMAIL.match(email):
        raise HttpError(400, {"error": "Invalid email provided"})
    user = next((u for u in store.data["users"].values() if u["email"].lower() == email.lower()), None)
    if user is not None and user["id"] in project["members"]:
        raise HttpError(400, {"error": "User is already part of the workspace and project"})
    if user is None:
        user = {"id": new_id(), "first_name": str(data.get("first_name", "")),
                "last_name": str(data.get("last_name", "")), "email": email.lower(), "avatar": "",
                "avatar_url": None, "display_name": str(data.get("display_name") or email.split("@")[0])}
        store.data["users"][user["id"]] = user
    store.data["workspace_members"].setdefault(user["id"], 15)
    project["members"][user["id"]] = _role(data.get("role", 15))
    return 201, user_lite(user)


def remove_member(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    if params["uid"] not in project["members"]:
        raise HttpError(404, {"error": "User is not a member of this project"})
    del project["members"][params["uid"]]
    return 204, None


def _role(value: object) -> int:
    if value not in (5, 10, 15, 20) or isinstance(value, bool):
        raise HttpError(400, {"role": [f"\"{value}\" is not a valid choice."]})
    return int(value)  # type: ignore[call-overload,unused-ignore]
