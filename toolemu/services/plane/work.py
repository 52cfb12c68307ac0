"""Plane API v1 handlers for a project's states, labels and issues (work items)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from toolemu.services.plane.http import HttpError, Request, not_found, paginate
from toolemu.services.plane.resources import Reply, find_project, required
from toolemu.services.plane.store import (
    PRIORITIES,
    Obj,
    Store,
    is_uuid,
    issue_object,
    new_id,
    now,
    state_object,
    user_lite,
)

_GROUPS = ("backlog", "unstarted", "started", "completed", "cancelled", "triage")


def _child(store: Store, table: str, params: dict[str, str], key: str) -> Obj:
    project = find_project(store, params["pid"])
    row: Obj | None = store.data[table].get(params[key])
    if row is None or row["project"] != project["id"]:
        raise not_found()
    return row


# ---- states ----


def list_states(store: Store, request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    return 200, paginate(store.project_states(project["id"]), request.query)


def create_state(store: Store, request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    data = request.json()
    name = required(data, "name", 255)
    color = required(data, "color", 255)
    group = _group(data.get("group", "backlog"))
    existing = next((s for s in store.project_states(project["id"]) if s["name"] == name), None)
    if existing is not None:
        raise HttpError(409, {"error": "State with the same name already exists in the project",
                              "id": existing["id"]})
    sequence = max((s["sequence"] for s in store.project_states(project["id"])), default=0.0) + 10000.0
    state = state_object(project, name, color, sequence, group, False, created_by=store.data["admin"], at=now())
    state["description"] = str(data.get("description") or "")
    store.data["states"][state["id"]] = state
    return 201, state


def _group(group: Any) -> str:
    """A state's group, checked against Plane's choices."""
    if group not in _GROUPS:
        raise HttpError(400, {"group": [f"\"{group}\" is not a valid choice."]})
    return str(group)


def get_state(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    return 200, _child(store, "states", params, "sid")


def update_state(store: Store, request: Request, params: dict[str, str]) -> Reply:
    state = _child(store, "states", params, "sid")
    data = request.json()
    for key in ("name", "color", "description"):
        if key in data:
            state[key] = required(data, key, 255) if key != "description" else str(data[key] or "")
    if "group" in data:
        state["group"] = _group(data["group"])
    state["updated_at"] = now()
    return 200, state


def delete_state(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    state = _child(store, "states", params, "sid")
    if state["default"]:
        raise HttpError(400, {"error": "Default state cannot be deleted"})
    if any(i["state"] == state["id"] for i in store.data["issues"].values()):
        raise HttpError(400, {"error": "The state is not empty, only empty states can be deleted"})
    del store.data["states"][state["id"]]
    return 204, None


# ---- labels ----


def list_labels(store: Store, request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    labels = sorted((x for x in store.data["labels"].values() if x["project"] == project["id"]),
                    key=lambda x: x["created_at"])
    return 200, paginate(labels, request.query)


def create_label(store: Store, request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    data = request.json()
    name = required(data, "name", 255)
    existing = next((x for x in store.data["labels"].values() if x["project"] == project["id"] and x["name"] == name),
                    None)
    if existing is not None:
        raise HttpError(409, {"error": "Label with the same name already exists in the project", "id": existing["id"]})
    at = now()
    label = {"id": new_id(), "created_at": at, "updated_at": at, "deleted_at": None, "name": name,
             "description": str(data.get("description") or ""), "color": str(data.get("color") or ""),
             "sort_order": 65535.0, "external_source": None, "external_id": None,
             "created_by": store.data["admin"], "updated_by": None, "workspace": project["workspace"],
             "project": project["id"], "parent": None}
    store.data["labels"][label["id"]] = label
    return 201, label


def get_label(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    return 200, _child(store, "labels", params, "lid")


def update_label(store: Store, request: Request, params: dict[str, str]) -> Reply:
    label = _child(store, "labels", params, "lid")
    data = request.json()
    if "name" in data:
        label["name"] = required(data, "name", 255)
    for key in ("color", "description"):
        if key in data:
            label[key] = str(data[key] or "")
    label["updated_at"] = now()
    return 200, label


def delete_label(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    label = _child(store, "labels", params, "lid")
    del store.data["labels"][label["id"]]
    for issue in store.data["issues"].values():
        if label["id"] in issue["labels"]:
            issue["labels"].remove(label["id"])
    return 204, None


# ---- issues ----


def _expand(store: Store, issue: Obj, request: Request) -> Obj:
    wanted = {e for e in request.query.get("expand", "").split(",") if e}
    shown = dict(issue)
    if "assignees" in wanted:
        shown["assignees"] = [user_lite(store.data["users"][u]) for u in issue["assignees"] if u in store.data["users"]]
    if "labels" in wanted:
        shown["labels"] = [{k: store.data["labels"][x][k] for k in ("id", "name", "color")}
                           for x in issue["labels"] if x in store.data["labels"]]
    if "state" in wanted and issue["state"] in store.data["states"]:
        state = store.data["states"][issue["state"]]
        shown["state"] = {k: state[k] for k in ("id", "name", "color", "group")}
    return shown


def _pk_list(store: Store, data: dict[str, Any], key: str, table: str) -> list[str]:
    values = data.get(key, [])
    if not isinstance(values, list):
        raise HttpError(400, {key: [f"Expected a list of items but got type \"{type(values).__name__}\"."]})
    for index, value in enumerate(values):
        if not isinstance(value, str) or not is_uuid(value) or value not in store.data[table]:
            raise HttpError(400, {key: {str(index): [f"Invalid pk \"{value}\" - object does not exist."]}})
    return list(dict.fromkeys(values))


def _date(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value in (None, ""):
        return None
    try:
        return dt.date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise HttpError(400, {key: ["Date has wrong format. Use one of these formats instead: YYYY-MM-DD."]}) from None


def _apply(store: Store, project: Obj, issue: Obj, data: dict[str, Any]) -> None:
    """Validates and applies the writable fields present in ``data`` (as Plane's ``IssueSerializer``)."""
    if "name" in data:
        issue["name"] = required(data, "name", 255)
    if "priority" in data:
        if data["priority"] not in PRIORITIES:
            raise HttpError(400, {"priority": [f"\"{data['priority']}\" is not a valid choice."]})
        issue["priority"] = data["priority"]
    if "state" in data:
        state = data["state"]
        if not isinstance(state, str) or state not in store.data["states"]:
            raise HttpError(400, {"state": [f"Invalid pk \"{state}\" - object does not exist."]})
        if store.data["states"][state]["project"] != project["id"]:
            raise HttpError(400, {"non_field_errors": ["State is not valid please pass a valid state_id"]})
        issue["state"] = state
        done = store.data["states"][state]["group"] == "completed"
        issue["completed_at"] = (issue["completed_at"] or now()) if done else None
    for key in ("start_date", "target_date"):
        if key in data:
            issue[key] = _date(data, key)
    if issue["start_date"] and issue["target_date"] and issue["start_date"] > issue["target_date"]:
        raise HttpError(400, {"non_field_errors": ["Start date cannot exceed target date"]})
    if "description_html" in data:
        issue["description_html"] = str(data["description_html"] or "<p></p>")
    if "assignees" in data:  # only the project's members can be assigned; others are dropped, as Plane does
        issue["assignees"] = [u for u in _pk_list(store, data, "assignees", "users") if u in project["members"]]
    if "labels" in data:
        issue["labels"] = [x for x in _pk_list(store, data, "labels", "labels")
                           if store.data["labels"][x]["project"] == project["id"]]


def list_issues(store: Store, request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    issues = [_expand(store, i, request) for i in store.project_issues(project["id"])]
    return 200, paginate(issues, request.query)


def create_issue(store: Store, request: Request, params: dict[str, str]) -> Reply:
    project = find_project(store, params["pid"])
    data = request.json()
    required(data, "name", 255)
    sequence = max((i["sequence_id"] for i in store.data["issues"].values() if i["project"] == project["id"]),
                   default=0) + 1
    issue = issue_object(project, "", state=project["default_state"] or "", sequence_id=sequence,
                         created_by=store.data["admin"], at=now())
    _apply(store, project, issue, data)
    if not issue["assignees"] and project["default_assignee"]:
        issue["assignees"] = [project["default_assignee"]]
    store.data["issues"][issue["id"]] = issue
    return 201, _expand(store, issue, request)


def get_issue(store: Store, request: Request, params: dict[str, str]) -> Reply:
    return 200, _expand(store, _child(store, "issues", params, "iid"), request)


def update_issue(store: Store, request: Request, params: dict[str, str]) -> Reply:
    issue = _child(store, "issues", params, "iid")
    project = store.data["projects"][issue["project"]]
    updated = dict(issue, assignees=list(issue["assignees"]), labels=list(issue["labels"]))
    _apply(store, project, updated, request.json())  # validated on a copy: a refused update changes nothing
    updated["updated_at"] = now()
    issue.update(updated)
    return 200, _expand(store, issue, request)


def delete_issue(store: Store, _request: Request, params: dict[str, str]) -> Reply:
    issue = _child(store, "issues", params, "iid")
    del store.data["issues"][issue["id"]]
    return 204, None
