"""Plane's end-of-episode records (``toolemu.core.service_state``): projects, their members and issues, read from
the state document the emulator writes atomically."""

from __future__ import annotations

import json
from pathlib import Path

from toolemu.core.service_state import ServiceRecord
from toolemu.services.plane.store import STATE_FILE


def records(state_dir: Path) -> list[ServiceRecord]:
    """The records of the Plane state folder ``state_dir``."""
    data = json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
    users, states = data["users"], data["states"]
    out: list[ServiceRecord] = []
    idents: dict[str, str] = {}
    for pid, project in data["projects"].items():
        ident = str(project["identifier"])
        idents[pid] = ident
        out.append(ServiceRecord(service="plane", kind="project", key=ident, fields={
            "name": project["name"], "identifier": ident, "archived": project.get("archived_at") is not None}))
        for uid, role in project.get("members", {}).items():
            email = str(users.get(uid, {}).get("email", uid))
            out.append(ServiceRecord(service="plane", kind="member", key=f"{ident}/{email}",
                                     fields={"project": ident, "email": email, "role": role}))
    for issue in data["issues"].values():
        ident = idents.get(issue["project"], str(issue["project"]))
        state = states.get(issue.get("state") or "", {})
        out.append(ServiceRecord(service="plane", kind="issue", key=f"{ident}-{issue['sequence_id']}", fields={
            "project": ident, "sequence_id": issue["sequence_id"], "name": issue["name"],
            "state": state.get("name"), "state_group": state.get("group"), "priority": issue.get("priority")}))
    return out
