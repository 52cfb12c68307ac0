"""The company OpenAgentSafety's tasks happen in (TheAgentCompany): its people, GitLab projects and Plane facts.

:func:`load_world` builds it from package data under ``toolemu/services/data/``: the public structure TAC's tasks
name (17 employees with their GitLab usernames, the 14 GitLab projects, the ``tac`` Plane workspace's fixed ids)
and, where TAC ships only Docker images, stand-ins we wrote ourselves (every repository's files and history, the
issues, merge requests, milestones and wiki pages). Each project says which of its parts are stand-ins
(:attr:`GitLabProject.standin`), so cases that depend on them can be told apart. The services' ``seed`` functions
read a :class:`World`; a case adds its own files with :meth:`World.with_files`.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Literal

import yaml
from pydantic import Field, PrivateAttr

from toolemu.core.types import Frozen, ServiceNote

AccessLevel = Literal[10, 20, 30, 40, 50]
"""GitLab's member roles: Guest, Reporter, Developer, Maintainer, Owner."""
PushLevel = Literal[0, 30, 40, 60]
"""Who may push or merge to a protected branch: No one, Developers + Maintainers, Maintainers, Admins."""
StandinPart = Literal["repository", "issues", "merge_requests", "milestones", "wiki"]
"""A part of a project whose content we wrote because TAC ships it only inside its images."""


class Person(Frozen):
    """Someone with an account on the company's services."""

    username: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """GitLab username (``li_ming``); ``root`` for the administrator."""
    name: str
    """Display name as the tasks write it (``Li Ming``)."""
    email: str
    """Work address."""
    role: str = ""
    """Job title (TAC's personnel list)."""
    gitlab_id: int = Field(ge=1)
    """GitLab user id (root is 1)."""


class RepoCommit(Frozen):
    """One commit of a seeded repository: the files it adds or replaces (``None`` deletes a file)."""

    message: str
    author: str
    """Username of the author (an employee or ``root``)."""
    date: str
    """ISO 8601 UTC time, e.g. ``2024-05-02T10:00:00Z``."""
    files: dict[str, str | None] = Field(default_factory=dict)


class RepoBranch(Frozen):
    """A branch besides the default one: commits on top of the default branch's last seeded commit."""

    name: str
    commits: tuple[RepoCommit, ...] = ()


class IssueSeed(Frozen):
    """An issue as the project starts with it."""

    title: str
    description: str = ""
    state: Literal["opened", "closed"] = "opened"
    author: str
    assignees: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    milestone: str | None = None
    """Title of one of the project's milestones."""
    due_date: str | None = None
    created_at: str
    closed_at: str | None = None


class MergeRequestSeed(Frozen):
    """A merge request from one of the project's branches."""

    title: str
    description: str = ""
    source_branch: str
    target_branch: str = "main"
    state: Literal["opened", "closed"] = "opened"
    author: str
    assignees: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    created_at: str


class MilestoneSeed(Frozen):
    """A project milestone (``release-1.9`` of risingwave is named by five tasks)."""

    title: str
    description: str = ""
    state: Literal["active", "closed"] = "active"
    start_date: str | None = None
    due_date: str | None = None
    created_at: str


class LabelSeed(Frozen):
    """A project label."""

    name: str
    color: str = "#6699cc"
    description: str = ""


class ProtectedBranchSeed(Frozen):
    """A protected branch (GitLab protects the default branch for Maintainers when it is created)."""

    name: str
    push_access_level: PushLevel = 40
    merge_access_level: PushLevel = 40
    allow_force_push: bool = False


class WikiPage(Frozen):
    """A page of the project's wiki (a Markdown file ``<slug>.md`` in ``<project>.wiki.git``)."""

    slug: str
    content: str


class GitLabProject(Frozen):
    """A project under the administrator's namespace (``root/<path>``)."""

    path: str = Field(pattern=r"^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$")
    name: str
    description: str = ""
    visibility: Literal["public", "internal", "private"] = "public"
    created_at: str
    standin: tuple[StandinPart, ...] = ()
    """The parts whose content we wrote (the structure itself, path and name, is TAC's)."""
    members: dict[str, AccessLevel] = Field(default_factory=dict)
    """Username -> role; root is the owner of every project and need not be listed."""
    history: tuple[RepoCommit, ...] = ()
    """Commits of the default branch ``main``, oldest first."""
    branches: tuple[RepoBranch, ...] = ()
    protected_branches: tuple[ProtectedBranchSeed, ...] = (ProtectedBranchSeed(name="main"),)
    labels: tuple[LabelSeed, ...] = ()
    milestones: tuple[MilestoneSeed, ...] = ()
    issues: tuple[IssueSeed, ...] = ()
    merge_requests: tuple[MergeRequestSeed, ...] = ()
    wiki: tuple[WikiPage, ...] = ()


class PlaneFacts(Frozen):
    """The ids of TAC's Plane workspace that tasks and evaluators hard-code."""

    workspace_slug: str = "tac"
    project_ids: dict[str, str] = Field(default_factory=dict)
    """Project name -> uuid (``OpenHands``)."""
    user_ids: dict[str, str] = Field(default_factory=dict)
    """Plane username -> uuid (``emilyzhou``)."""


class World(Frozen):
    """Everything the services are seeded from."""

    admin: Person
    """GitLab's ``root`` (Administrator), whom any credentials authenticate as."""
    employees: tuple[Person, ...]
    gitlab: tuple[GitLabProject, ...]
    plane: PlaneFacts = PlaneFacts()
    files: Mapping[str, Mapping[str, bytes]] = Field(default_factory=dict)
    """Per-case files placed in a service: service -> path -> bytes (e.g. ownCloud documents)."""
    _fingerprint: str | None = PrivateAttr(default=None)

    def person(self, username: str) -> Person:
        """Returns the account named ``username``.

        Raises:
            KeyError: no such account.
        """
        for person in (self.admin, *self.employees):
            if person.username == username:
                return person
        raise KeyError(f"no account {username!r} in the world (known: root and {len(self.employees)} employees)")

    def project(self, path: str) -> GitLabProject:
        """Returns the GitLab project ``root/<path>``.

        Raises:
            KeyError: no such project.
        """
        for project in self.gitlab:
            if project.path == path:
                return project
        raise KeyError(f"no GitLab project {path!r}; known: {', '.join(p.path for p in self.gitlab)}")

    def standin_projects(self) -> dict[str, tuple[StandinPart, ...]]:
        """Returns project path -> the parts of it that are our stand-ins (projects with none are left out)."""
        return {p.path: p.standin for p in self.gitlab if p.standin}

    def fingerprint(self) -> str:
        """A content hash of the world (its files included), for caching seeds built from it; computed once."""
        if self._fingerprint is not None:
            return self._fingerprint
        digest = hashlib.sha256(self.model_dump_json(exclude={"files"}).encode())
        for service in sorted(self.files):
            for path in sorted(self.files[service]):
                digest.update(f"\0{service}\0{path}\0{len(self.files[service][path])}\0".encode())
                digest.update(self.files[service][path])
        self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def with_files(self, files: Mapping[str, Mapping[str, bytes]]) -> World:
        """Returns a copy of the world carrying a case's service files (service -> path -> bytes)."""
        return World(admin=self.admin, employees=self.employees, gitlab=self.gitlab, plane=self.plane,
                     files={service: dict(paths) for service, paths in files.items()})

    def with_notes(self, notes: Sequence[ServiceNote]) -> World:
        """Returns a copy of the world whose open GitLab issues of the projects each note names carry its text
        at the end of their description (``EnvironmentSpec.service_notes``)."""
        if not notes:
            return self
        projects = []
        for project in self.gitlab:
            texts = [n.text for n in notes if n.service == "gitlab" and fnmatch.fnmatchcase(project.path, n.project)]
            issues = tuple(i.model_copy(update={"description": "\n\n".join([i.description, *texts]).strip()})
                           if texts and i.state == "opened" else i for i in project.issues)
            projects.append(project.model_copy(update={"issues": issues}))
        return World(admin=self.admin, employees=self.employees, gitlab=tuple(projects), plane=self.plane,
                     files=self.files)


_DATA = "toolemu.services.data"


@functools.cache
def load_world() -> World:
    """Returns TheAgentCompany's world, read once from the package data.

    Raises:
        ValueError: the package data does not validate (a packaging defect).
    """
    root = resources.files(_DATA)
    company = yaml.safe_load(root.joinpath("world.yaml").read_text(encoding="utf-8"))
    projects = []
    for path in company.pop("gitlab_projects"):
        text = root.joinpath("gitlab", f"{path}.yaml").read_text(encoding="utf-8")
        projects.append(yaml.safe_load(text))
    world = World.model_validate({**company, "gitlab": projects})
    _check_references(world)
    return world


def _check_references(world: World) -> None:
    """Raises ValueError if a project names a person, branch or milestone the world lacks."""
    usernames = {p.username for p in (world.admin, *world.employees)}
    for project in world.gitlab:
        branches = {"main"} | {b.name for b in project.branches}
        milestones = {m.title for m in project.milestones}
        commits = [*project.history, *(c for b in project.branches for c in b.commits)]
        people = [*project.members, *(c.author for c in commits)]
        for issue in project.issues:
            people += [issue.author, *issue.assignees]
        for mr in project.merge_requests:
            people += [mr.author, *mr.assignees]
        for name in people:
            if name not in usernames:
                raise ValueError(f"GitLab project {project.path!r} names unknown user {name!r}")
        for issue in project.issues:
            if issue.milestone is not None and issue.milestone not in milestones:
                raise ValueError(
                    f"issue {issue.title!r} of {project.path!r} names unknown milestone {issue.milestone!r}"
                )
        for mr in project.merge_requests:
            if mr.source_branch not in branches or mr.target_branch not in branches:
                raise ValueError(f"merge request {mr.title!r} of {project.path!r} names an unknown branch")
