"""Plane's state: one JSON document in the state folder, kept in memory and written through on every change.

The document holds the workspace, its users, projects (with members), states, labels and issues, each as the
object Plane's API v1 returns (field names and value shapes as Plane serialises them), so handlers read and
write plain dicts. Only the API changes it; the folder lives outside anything the agent can write.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

STATE_FILE = "plane.json"
"""The file under the state folder."""

Obj = dict[str, Any]
"""One Plane object as the API returns it."""

DEFAULT_STATES: tuple[tuple[str, str, float, str, bool], ...] = (
    ("Backlog", "#A3A3A3", 15000.0, "backlog", True),
    ("Todo", "#3A3A3A", 25000.0, "unstarted", False),
    ("In Progress", "#F59E0B", 35000.0, "started", False),
    ("Done", "#16A34A", 45000.0, "completed", False),
    ("Cancelled", "#EF4444", 55000.0, "cancelled", False),
)
"""(name, colour, sequence, group, default): the states Plane gives every new project."""

PRIORITIES = ("urgent", "high", "medium", "low", "none")


def now() -> str:
    """The current time as Plane writes it (``2024-10-05T20:37:51.143913Z``)."""
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


def new_id() -> str:
    """A fresh object id (a UUID, as Plane's)."""
    return str(uuid.uuid4())


def is_uuid(text: str) -> bool:
    """Whether ``text`` reads as a UUID (Plane answers 404 or 400 for an id that does not)."""
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def empty_state() -> Obj:
    """A document with no workspace content."""
    return {"workspace": {}, "admin": "", "users": {}, "workspace_members": {}, "projects": {}, "states": {},
            "labels": {}, "issues": {}}


def state_object(project: Obj, name: str, color: str, sequence: float, group: str, default: bool, *,
                 created_by: str, at: str, state_id: str | None = None) -> Obj:
    """A state of ``project`` as Plane serialises it."""
    return {
        "id": state_id or new_id(), "created_at": at, "updated_at": at, "deleted_at": None, "name": name,
        "description": "", "color": color, "slug": "", "sequence": sequence, "group": group, "is_triage": False,
        "default": default, "external_source": None, "external_id": None, "created_by": created_by,
        "updated_by": None, "project": project["id"], "workspace": project["workspace"],
    }


def project_object(workspace: str, name: str, identifier: str, *, created_by: str, at: str,
                   project_id: str | None = None, description: str = "", network: int = 2) -> Obj:
    """A project as Plane's API v1 serialises it (``members`` is ours: the member ids and roles)."""
    return {
        "id": project_id or new_id(), "total_members": 0, "total_cycles": 0, "total_modules": 0, "is_member": True,
        "sort_order": 65535.0, "member_role": 20, "is_deployed": False, "cover_image_url": None,
        "created_at": at, "updated_at": at, "deleted_at": None, "name": name, "description": description,
        "description_text": None, "description_html": None, "network": network, "identifier": identifier,
        "emoji": None, "icon_prop": None, "module_view": True, "cycle_view": True, "issue_views_view": True,
        "page_view": True, "intake_view": False, "is_time_tracking_enabled": False, "is_issue_type_enabled": False,
        "guest_view_all_features": False, "cover_image": None, "archive_in": 0, "close_in": 0,
        "logo_props": {}, "archived_at": None, "timezone": "UTC", "created_by": created_by, "updated_by": None,
        "workspace": workspace, "default_assignee": None, "project_lead": None, "cover_image_asset": None,
        "estimate": None, "default_state": None, "members": {},
    }


def issue_object(project: Obj, name: str, *, state: str, sequence_id: int, created_by: str, at: str,
                 issue_id: str | None = None) -> Obj:
    """An issue as Plane's API v1 serialises it (``assignees`` and ``labels`` are id lists)."""
    return {
        "id": issue_id or new_id(), "created_at": at, "updated_at": at, "deleted_at": None, "point": None,
        "name": name, "description_html": "<p></p>", "description_binary": None, "priority": "none",
        "start_date": None, "target_date": None, "sequence_id": sequence_id, "sort_order": 65535.0,
        "completed_at": None, "archived_at": None, "is_draft": False, "external_source": None,
        "external_id": None, "created_by": created_by, "updated_by": None, "project": project["id"],
        "workspace": project["workspace"], "parent": None, "state": state, "estimate_point": None, "type": None,
        "assignees": [], "labels": [],
    }


def user_lite(user: Obj) -> Obj:
    """A user as Plane's ``UserLiteSerializer`` shows it."""
    keys = ("id", "first_name", "last_name", "email", "avatar", "avatar_url", "display_name")
    return {k: user.get(k) for k in keys}


class Store:
    """The state document of one Plane instance; callers hold :attr:`lock` around a read-modify-write."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / STATE_FILE
        self.lock = threading.Lock()
        with self.path.open(encoding="utf-8") as f:
            self.data: Obj = json.load(f)

    def save(self) -> None:
        """Writes the document (atomically: a temporary file renamed over the old one)."""
        write_state(self.path.parent, self.data)

    def project_states(self, project_id: str) -> list[Obj]:
        return sorted((s for s in self.data["states"].values() if s["project"] == project_id),
                      key=lambda s: s["sequence"])

    def project_issues(self, project_id: str) -> list[Obj]:
        return sorted((i for i in self.data["issues"].values() if i["project"] == project_id),
                      key=lambda i: i["created_at"], reverse=True)


def write_state(state_dir: Path, data: Obj) -> None:
    """Writes ``data`` as the state document of ``state_dir``."""
    fd, tmp = tempfile.mkstemp(prefix=".plane.", dir=state_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, Path(state_dir) / STATE_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
