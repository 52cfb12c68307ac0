"""Writes the GitLab emulator's initial state folder from a :class:`~toolemu.services.world.World`.

The folder holds ``store.json`` (users, projects, issues, ...) and ``repos/root/<path>.git`` plus
``<path>.wiki.git`` for every project. Commits get the world's fixed dates and authors, so the same world always
gives the same commit ids; a whole seed takes two git processes per repository.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from toolemu.services.gitlab.repo import FileAction, Identity, fast_import_commit, init_bare
from toolemu.services.gitlab.store import (
    STORE_FILE,
    GitLabState,
    IssueRecord,
    LabelRecord,
    MemberRecord,
    MergeRequestRecord,
    MilestoneRecord,
    ProjectRecord,
    ProtectedBranchRecord,
    UserRecord,
    write_state,
)
from toolemu.services.world import GitLabProject, Person, RepoCommit, World

REPOS_DIR = "repos"
"""Bare repositories live under ``<state>/repos/<namespace>/``."""
OWNER = 50
_IMPORT = ("-c", "fastimport.unpackLimit=0", "fast-import", "--quiet", "--date-format=raw")
"""One pack per repository (no loose objects): a third of the files to copy per episode."""


def repo_path(state_dir: Path, namespace: str, path: str, *, wiki: bool = False) -> Path:
    """Where the bare repository of ``namespace/path`` (or its wiki) lives in a state folder."""
    return state_dir / REPOS_DIR / namespace / (f"{path}.wiki.git" if wiki else f"{path}.git")


def epoch(iso: str) -> int:
    """Seconds since the epoch of an ISO 8601 time (``Z`` or an offset)."""
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp())


def gitlab_time(iso: str) -> str:
    """An ISO 8601 time as GitLab writes it (``2024-05-02T10:00:00.000Z``)."""
    when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def seed(state_dir: Path, world: World) -> None:
    """Writes the store and the repositories of every project of ``world`` into the empty folder ``state_dir``."""
    people = {p.username: p for p in (world.admin, *world.employees)}
    users = tuple(
        UserRecord(
            id=p.gitlab_id, username=p.username, name=p.name, email=p.email, is_admin=p is world.admin,
            created_at="2024-05-01T08:00:00.000Z",
        )
        for p in people.values()
    )
    state = GitLabState(users=users)
    for project in world.gitlab:
        state, record = _project_record(state, project, people)
        state = state.model_copy(update={"projects": (*state.projects, record)})
        _write_repo(state_dir, project, people)
    write_state(state_dir / STORE_FILE, state)


def _project_record(
    state: GitLabState, project: GitLabProject, people: dict[str, Person],
) -> tuple[GitLabState, ProjectRecord]:
    created = gitlab_time(project.created_at)
    state, project_id = state.next_id("project")
    members = [MemberRecord(user_id=1, access_level=OWNER, created_at=created)]
    members += [
        MemberRecord(user_id=people[name].gitlab_id, access_level=level, created_at=created)
        for name, level in project.members.items()
        if name != "root"
    ]
    protected = []
    for branch in project.protected_branches:
        state, pid = state.next_id("protected_branch")
        protected.append(ProtectedBranchRecord(id=pid, **branch.model_dump()))
    labels = []
    for label in project.labels:
        state, lid = state.next_id("label")
        labels.append(LabelRecord(id=lid, **label.model_dump()))
    milestones: list[MilestoneRecord] = []
    for iid, ms in enumerate(project.milestones, 1):
        state, mid = state.next_id("milestone")
        stamp = gitlab_time(ms.created_at)
        milestones.append(MilestoneRecord(
            id=mid, iid=iid, title=ms.title, description=ms.description, state=ms.state,
            start_date=ms.start_date, due_date=ms.due_date, created_at=stamp, updated_at=stamp,
        ))
    milestone_ids = {m.title: m.id for m in milestones}
    issues = []
    for iid, issue in enumerate(project.issues, 1):
        state, issue_id = state.next_id("issue")
        closed = gitlab_time(issue.closed_at) if issue.closed_at else None
        issues.append(IssueRecord(
            id=issue_id, iid=iid, title=issue.title, description=issue.description, state=issue.state,
            author_id=people[issue.author].gitlab_id, assignee_ids=tuple(people[a].gitlab_id for a in issue.assignees),
            labels=issue.labels, milestone_id=milestone_ids.get(issue.milestone or ""), due_date=issue.due_date,
            created_at=gitlab_time(issue.created_at), updated_at=closed or gitlab_time(issue.created_at),
            closed_at=closed, closed_by_id=people[issue.author].gitlab_id if closed else None,
        ))
    mrs = []
    for iid, mr in enumerate(project.merge_requests, 1):
        state, mr_id = state.next_id("merge_request")
        stamp = gitlab_time(mr.created_at)
        mrs.append(MergeRequestRecord(
            id=mr_id, iid=iid, title=mr.title, description=mr.description, state=mr.state,
            source_branch=mr.source_branch, target_branch=mr.target_branch, author_id=people[mr.author].gitlab_id,
            assignee_ids=tuple(people[a].gitlab_id for a in mr.assignees), labels=mr.labels,
            created_at=stamp, updated_at=stamp, closed_at=stamp if mr.state == "closed" else None,
        ))
    dates = [c.date for c in project.history] + [c.date for b in project.branches for c in b.commits]
    dates += [i.created_at for i in project.issues]
    record = ProjectRecord(
        id=project_id, name=project.name, path=project.path, description=project.description,
        visibility=project.visibility, created_at=created, last_activity_at=gitlab_time(max(dates, key=epoch))
        if dates else created, members=tuple(members), protected_branches=tuple(protected), labels=tuple(labels),
        milestones=tuple(milestones), issues=tuple(issues), merge_requests=tuple(mrs),
        iid_counters={"issue": len(issues), "merge_request": len(mrs), "milestone": len(milestones)},
    )
    return state, record


def _commit_stream(ref: str, parent: str | None, commit: RepoCommit, people: dict[str, Person], mark: int) -> bytes:
    author = people[commit.author]
    actions = [
        FileAction("delete", path) if content is None else FileAction("create", path, content.encode("utf-8"))
        for path, content in commit.files.items()
    ]
    return fast_import_commit(ref, parent, actions, commit.message, Identity(author.name, author.email),
                              epoch(commit.date), mark)


def _write_repo(state_dir: Path, project: GitLabProject, people: dict[str, Person]) -> None:
    repo = init_bare(repo_path(state_dir, "root", project.path))
    stream = []
    mark = 0
    for commit in project.history:
        stream.append(_commit_stream("refs/heads/main", f":{mark}" if mark else None, commit, people, mark + 1))
        mark += 1
    main_tip = mark
    for branch in project.branches:
        parent = f":{main_tip}" if main_tip else None
        for commit in branch.commits:
            stream.append(_commit_stream(f"refs/heads/{branch.name}", parent, commit, people, mark + 1))
            mark += 1
            parent = f":{mark}"
    if stream:
        repo.git(*_IMPORT, stdin=b"".join(stream))
    wiki = init_bare(repo_path(state_dir, "root", project.path, wiki=True))
    if project.wiki:
        actions = [FileAction("create", f"{page.slug}.md", page.content.encode("utf-8")) for page in project.wiki]
        author = people["root"]
        data = fast_import_commit("refs/heads/main", None, actions, "Create the wiki pages",
                                  Identity(author.name, author.email), epoch(project.created_at), 1)
        wiki.git(*_IMPORT, stdin=data)
