"""Plane's initial state for TheAgentCompany: the ``tac`` workspace, its people, projects and issues.

The fixed ids come from the world (``World.plane``: the OpenHands project and emilyzhou, which tasks and
evaluators hard-code); the people are the world's employees (Plane usernames are the GitLab ones without the
underscore: ``emily_zhou`` -> ``emilyzhou``). The projects besides OpenHands and every issue are stand-ins we
wrote: TAC ships its Plane content only inside its image. OpenHands' issues agree with what the tasks imply:
"Model: recall rate is 0" is still open and "Model: security problem" is done.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from toolemu.services.plane.store import (
    DEFAULT_STATES,
    Obj,
    empty_state,
    issue_object,
    project_object,
    state_object,
    write_state,
)

_NAMESPACE = uuid.UUID("5b1f3c1e-6f0e-4c7a-9a51-1d3c0f6a7b21")
SEED_TIME = "2024-10-01T09:00:00.000000Z"
ADMIN_NAME = "theagentcompany"
"""Display name of the account the API key authenticates as (the workspace owner)."""

PROJECTS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("OpenHands", "OPENHANDS", "AI software engineering agents platform.",
     ("zhang_wei", "mike_chen", "emily_zhou", "wang_fang", "liu_qiang", "alex_turner")),
    ("RisingWave", "RISINGWAVE", "Streaming database development.",
     ("li_ming", "zhang_wei", "emily_zhou", "liu_qiang")),
    ("Node-RED", "NODERED", "Low-code flow editor maintenance.", ("huang_jie", "emma_lewis", "jessica_chen")),
    ("Sotopia", "SOTOPIA", "Social simulation research platform.", ("wang_fang", "mike_chen")),
    ("Website Redesign", "WEB", "Company website refresh.", ("sophia_rodriguez", "jessica_chen", "jessica_lee")),
)
"""(name, identifier, description, member usernames)."""

ISSUES: dict[str, tuple[tuple[str, str, str, tuple[str, ...]], ...]] = {
    "OpenHands": (
        ("Model: recall rate is 0", "In Progress", "high", ("wang_fang",)),
        ("Model: security problem", "Done", "urgent", ("zhang_wei",)),
        ("Add retry logic to the runtime client", "Todo", "medium", ("mike_chen",)),
        ("Document the sandbox configuration options", "Backlog", "low", ()),
        ("Flaky browsing test on CI", "In Progress", "medium", ("liu_qiang",)),
    ),
    "RisingWave": (
        ("Intermittent flush hang in ingestion workers", "In Progress", "high", ("li_ming",)),
        ("Upgrade the storage benchmark suite", "Todo", "medium", ("zhang_wei",)),
    ),
    "Node-RED": (("Dashboard widgets do not resize", "Todo", "medium", ("emma_lewis",)),),
    "Sotopia": (("Evaluate new scenario generator", "Backlog", "low", ("wang_fang",)),),
    "Website Redesign": (("New landing page copy", "In Progress", "medium", ("jessica_lee",)),),
}
"""Project -> (name, state, priority, assignee usernames), newest last."""


def seed_id(kind: str, key: str) -> str:
    """A stable id for a seeded object."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{key}"))


def plane_username(username: str) -> str:
    """Plane's username for a GitLab one (``emily_zhou`` -> ``emilyzhou``)."""
    return username.replace("_", "")


def build_state(world: Any) -> Obj:
    """The initial state document for ``world`` (a ``toolemu.services.world.World``)."""
    facts = world.plane
    data = empty_state()
    slug = facts.workspace_slug
    workspace_id = seed_id("workspace", slug)
    data["workspace"] = {"id": workspace_id, "name": "The Agent Company", "slug": slug, "owner": None,
                         "created_at": SEED_TIME, "updated_at": SEED_TIME}
    admin_id = seed_id("user", ADMIN_NAME)
    data["admin"] = admin_id
    data["workspace"]["owner"] = admin_id
    users: dict[str, Obj] = {admin_id: _user(admin_id, ADMIN_NAME, "The Agent", "Company", world.admin.email)}
    ids: dict[str, str] = {}
    for person in world.employees:
        name = plane_username(person.username)
        user_id = facts.user_ids.get(name) or seed_id("user", name)
        first, _, last = person.name.partition(" ")
        users[user_id] = _user(user_id, name, first, last, person.email)
        ids[person.username] = user_id
    data["users"] = users
    data["workspace_members"] = {uid: (20 if uid == admin_id else 15) for uid in users}
    for name, identifier, description, members in PROJECTS:
        project_id = facts.project_ids.get(name) or seed_id("project", name)
        project = project_object(workspace_id, name, identifier, created_by=admin_id, at=SEED_TIME,
                                 project_id=project_id, description=description)
        project["members"] = {admin_id: 20, **{ids[m]: 15 for m in members if m in ids}}
        project["total_members"] = len(project["members"])
        data["projects"][project_id] = project
        states: dict[str, str] = {}
        for state_name, color, sequence, group, default in DEFAULT_STATES:
            state = state_object(project, state_name, color, sequence, group, default, created_by=admin_id,
                                 at=SEED_TIME, state_id=seed_id("state", f"{name}/{state_name}"))
            data["states"][state["id"]] = state
            states[state_name] = state["id"]
        project["default_state"] = states["Backlog"]
        for number, (title, state_name, priority, assignees) in enumerate(ISSUES.get(name, ()), start=1):
            at = f"2024-10-{1 + number:02d}T10:00:00.000000Z"
            issue = issue_object(project, title, state=states[state_name], sequence_id=number, created_by=admin_id,
                                 at=at, issue_id=seed_id("issue", f"{name}/{title}"))
            issue["priority"] = priority
            issue["assignees"] = [ids[a] for a in assignees if a in ids]
            if state_name == "Done":
                issue["completed_at"] = at
            data["issues"][issue["id"]] = issue
    return data


def _user(user_id: str, display: str, first: str, last: str, email: str) -> Obj:
    return {"id": user_id, "first_name": first, "last_name": last, "email": email, "avatar": "",
            "avatar_url": None, "display_name": display}


def seed(state_dir: Path, world: Any) -> None:
    """Writes Plane's initial state for ``world`` into the empty folder ``state_dir``."""
    write_state(Path(state_dir), build_state(world))
