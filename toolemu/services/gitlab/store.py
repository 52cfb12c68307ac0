"""The GitLab emulator's records (users, projects, issues, ...) and the JSON file that holds them.

Repository contents live in bare git repositories beside the file (:mod:`toolemu.services.gitlab.repo`); this
store keeps what GitLab keeps in its database. Every change replaces the in-memory state under one lock and writes
the file atomically, so the state folder always holds the latest answerable state.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field

from toolemu.core.types import Frozen

STORE_FILE = "store.json"
"""The store's file name inside the state folder."""

T = TypeVar("T")


def now() -> str:
    """Returns the current UTC time the way GitLab writes it (``2024-05-02T10:00:00.000Z``)."""
    t = datetime.now(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class UserRecord(Frozen):
    """A GitLab account."""

    id: int
    username: str
    name: str
    email: str
    is_admin: bool = False
    created_at: str


class MemberRecord(Frozen):
    """A direct member of a project."""

    user_id: int
    access_level: int
    created_at: str


class ProtectedBranchRecord(Frozen):
    """A protected branch (name may hold ``*`` wildcards, as GitLab's)."""

    id: int
    name: str
    push_access_level: int = 40
    merge_access_level: int = 40
    unprotect_access_level: int = 40
    allow_force_push: bool = False


class LabelRecord(Frozen):
    """A project label."""

    id: int
    name: str
    color: str = "#6699cc"
    description: str = ""


class MilestoneRecord(Frozen):
    """A project milestone."""

    id: int
    iid: int
    title: str
    description: str = ""
    state: Literal["active", "closed"] = "active"
    start_date: str | None = None
    due_date: str | None = None
    created_at: str
    updated_at: str


class NoteRecord(Frozen):
    """A comment on an issue or merge request."""

    id: int
    body: str
    author_id: int
    created_at: str
    system: bool = False


class IssueRecord(Frozen):
    """An issue."""

    id: int
    iid: int
    title: str
    description: str = ""
    state: Literal["opened", "closed"] = "opened"
    author_id: int
    assignee_ids: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()
    milestone_id: int | None = None
    due_date: str | None = None
    confidential: bool = False
    created_at: str
    updated_at: str
    closed_at: str | None = None
    closed_by_id: int | None = None
    notes: tuple[NoteRecord, ...] = ()


class MergeRequestRecord(Frozen):
    """A merge request between two branches of the same project."""

    id: int
    iid: int
    title: str
    description: str = ""
    state: Literal["opened", "closed", "merged"] = "opened"
    source_branch: str
    target_branch: str
    author_id: int
    assignee_ids: tuple[int, ...] = ()
    reviewer_ids: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()
    milestone_id: int | None = None
    created_at: str
    updated_at: str
    closed_at: str | None = None
    closed_by_id: int | None = None
    merged_at: str | None = None
    merged_by_id: int | None = None
    merge_commit_sha: str | None = None
    notes: tuple[NoteRecord, ...] = ()


class ProjectRecord(Frozen):
    """A project; its repository is ``repos/<namespace>/<path>.git``, its wiki ``<path>.wiki.git``."""

    id: int
    name: str
    path: str
    namespace: str = "root"
    description: str = ""
    visibility: Literal["public", "internal", "private"] = "private"
    archived: bool = False
    creator_id: int = 1
    created_at: str
    last_activity_at: str
    members: tuple[MemberRecord, ...] = ()
    protected_branches: tuple[ProtectedBranchRecord, ...] = ()
    labels: tuple[LabelRecord, ...] = ()
    milestones: tuple[MilestoneRecord, ...] = ()
    issues: tuple[IssueRecord, ...] = ()
    merge_requests: tuple[MergeRequestRecord, ...] = ()
    iid_counters: dict[str, int] = Field(default_factory=dict)
    """Last iid handed out per kind (``issue``, ``merge_request``, ``milestone``); iids are never reused."""

    @property
    def path_with_namespace(self) -> str:
        """``root/<path>``."""
        return f"{self.namespace}/{self.path}"


class GitLabState(Frozen):
    """Everything in GitLab's database that the emulator keeps."""

    users: tuple[UserRecord, ...]
    projects: tuple[ProjectRecord, ...] = ()
    id_counters: dict[str, int] = Field(default_factory=dict)
    """Last global id handed out per kind (``project``, ``issue``, ...)."""

    def user(self, user_id: int) -> UserRecord | None:
        """Returns the user with id ``user_id``, if any."""
        return next((u for u in self.users if u.id == user_id), None)

    def user_by_name(self, username: str) -> UserRecord | None:
        """Returns the user called ``username`` (case-insensitive, as GitLab), if any."""
        return next((u for u in self.users if u.username.lower() == username.lower()), None)

    def project(self, ident: str) -> ProjectRecord | None:
        """Returns the project with this numeric id or ``namespace/path`` (case-insensitive), if any."""
        if ident.isdigit():
            return next((p for p in self.projects if p.id == int(ident)), None)
        wanted = ident.lower()
        return next((p for p in self.projects if p.path_with_namespace.lower() == wanted), None)

    def next_id(self, kind: str) -> tuple[GitLabState, int]:
        """Returns the state with ``kind``'s counter advanced, and the new id."""
        value = self.id_counters.get(kind, 0) + 1
        return self.model_copy(update={"id_counters": {**self.id_counters, kind: value}}), value

    def replace_project(self, project: ProjectRecord) -> GitLabState:
        """Returns the state with ``project`` replacing the record of the same id."""
        return self.model_copy(update={"projects": tuple(project if p.id == project.id else p for p in self.projects)})


def next_iid(project: ProjectRecord, kind: str) -> tuple[ProjectRecord, int]:
    """Returns ``project`` with its ``kind`` iid counter advanced, and the new iid."""
    value = project.iid_counters.get(kind, 0) + 1
    return project.model_copy(update={"iid_counters": {**project.iid_counters, kind: value}}), value


class Store:
    """The current :class:`GitLabState` of one state folder, changed only through :meth:`change`."""

    def __init__(self, state_dir: Path) -> None:
        self._file = state_dir / STORE_FILE
        self._lock = threading.Lock()
        self._state = GitLabState.model_validate_json(self._file.read_bytes())

    @property
    def state(self) -> GitLabState:
        """The latest state (an immutable value: read it without the lock)."""
        return self._state

    def change(self, fn: Callable[[GitLabState], tuple[GitLabState, T]]) -> T:
        """Applies ``fn`` to the current state under the lock, saves what it returns, and returns its result.

        ``fn`` may raise to leave the state as it was.
        """
        with self._lock:
            state, result = fn(self._state)
            if state is not self._state:
                write_state(self._file, state)
                self._state = state
            return result


def write_state(file: Path, state: GitLabState) -> None:
    """Writes ``state`` to ``file`` atomically (a temporary file renamed over it)."""
    tmp = file.with_name(f".{file.name}.tmp")
    tmp.write_text(state.model_dump_json(), encoding="utf-8")
    os.replace(tmp, file)
