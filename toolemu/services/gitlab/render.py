"""GitLab's JSON shapes of the emulator's records (field names as GitLab's REST API v4 writes them)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from toolemu.services.base import HOSTNAME, PORTS
from toolemu.services.gitlab.repo import Commit, Repo
from toolemu.services.gitlab.store import (
    GitLabState,
    IssueRecord,
    LabelRecord,
    MemberRecord,
    MergeRequestRecord,
    MilestoneRecord,
    NoteRecord,
    ProjectRecord,
    ProtectedBranchRecord,
    UserRecord,
)

EXTERNAL_URL = f"http://{HOSTNAME}:{PORTS['gitlab']}"
"""GitLab's configured address, in every ``web_url`` (as ``external_url`` in a real instance)."""
GITLAB_VERSION = "17.5.1"
"""The GitLab version the emulator reports (``/version``): the API it follows."""

ACCESS_DESCRIPTIONS = {0: "No one", 30: "Developers + Maintainers", 40: "Maintainers", 60: "Admins"}


def user_basic(user: UserRecord | None) -> dict[str, Any] | None:
    """A user as lists, authors and assignees show it."""
    if user is None:
        return None
    return {
        "id": user.id, "username": user.username, "name": user.name, "state": "active", "locked": False,
        "avatar_url": None, "web_url": f"{EXTERNAL_URL}/{user.username}",
    }


def user_full(user: UserRecord, *, private: bool) -> dict[str, Any]:
    """A user as ``/users/:id`` shows it; ``private`` adds what ``/user`` and admins see."""
    view: dict[str, Any] = user_basic(user) or {}
    view.update({
        "created_at": user.created_at, "bio": "", "location": "", "public_email": "", "skype": "", "linkedin": "",
        "twitter": "", "discord": "", "website_url": "", "organization": "The Agent Company", "job_title": "",
        "pronouns": None, "bot": False, "work_information": None, "followers": 0, "following": 0,
        "local_time": None,
    })
    if private:
        view.update({
            "email": user.email, "commit_email": user.email, "is_admin": user.is_admin, "last_sign_in_at": None,
            "confirmed_at": user.created_at, "two_factor_enabled": False, "can_create_project": True,
            "can_create_group": True, "projects_limit": 100000, "external": False, "private_profile": False,
        })
    return view


def member_view(user: UserRecord, member: MemberRecord) -> dict[str, Any]:
    """A project member."""
    view: dict[str, Any] = user_basic(user) or {}
    view.update({
        "access_level": member.access_level, "created_at": member.created_at, "expires_at": None,
        "membership_state": "active", "created_by": None,
    })
    return view


def _namespace(project: ProjectRecord) -> dict[str, Any]:
    return {
        "id": 1, "name": "Administrator", "path": project.namespace, "kind": "user", "full_path": project.namespace,
        "parent_id": None, "avatar_url": None, "web_url": f"{EXTERNAL_URL}/{project.namespace}",
    }


def project_view(state: GitLabState, project: ProjectRecord, repo: Repo, *, detail: bool = False) -> dict[str, Any]:
    """A project as ``/projects`` lists it; ``detail`` adds what ``/projects/:id`` shows."""
    web = f"{EXTERNAL_URL}/{project.path_with_namespace}"
    api = f"{EXTERNAL_URL}/api/v4/projects/{project.id}"
    default = repo.default_branch()
    owner = user_basic(state.user(1))
    view: dict[str, Any] = {
        "id": project.id, "description": project.description or None, "name": project.name,
        "name_with_namespace": f"Administrator / {project.name}", "path": project.path,
        "path_with_namespace": project.path_with_namespace, "created_at": project.created_at,
        "default_branch": default, "tag_list": [], "topics": [],
        "ssh_url_to_repo": f"git@{HOSTNAME}:{project.path_with_namespace}.git",
        "http_url_to_repo": f"{web}.git", "web_url": web,
        "readme_url": f"{web}/-/blob/{default}/README.md" if default else None,
        "forks_count": 0, "avatar_url": None, "star_count": 0, "last_activity_at": project.last_activity_at,
        "namespace": _namespace(project),
        "_links": {
            "self": api, "issues": f"{api}/issues", "merge_requests": f"{api}/merge_requests",
            "repo_branches": f"{api}/repository/branches", "labels": f"{api}/labels", "events": f"{api}/events",
            "members": f"{api}/members", "cluster_agents": f"{api}/cluster_agents",
        },
        "empty_repo": default is None, "archived": project.archived, "visibility": project.visibility,
        "owner": owner, "resolve_outdated_diff_discussions": False, "issues_enabled": True,
        "merge_requests_enabled": True, "wiki_enabled": True, "jobs_enabled": True, "snippets_enabled": True,
        "container_registry_enabled": False, "issues_access_level": "enabled", "repository_access_level": "enabled",
        "merge_requests_access_level": "enabled", "wiki_access_level": "enabled", "shared_runners_enabled": True,
        "creator_id": project.creator_id, "import_status": "none",
        "open_issues_count": sum(1 for i in project.issues if i.state == "opened"),
        "ci_config_path": None, "shared_with_groups": [], "only_allow_merge_if_pipeline_succeeds": False,
        "request_access_enabled": True, "merge_method": "merge", "squash_option": "default_off",
    }
    if detail:
        view["permissions"] = {"project_access": {"access_level": 50, "notification_level": 3}, "group_access": None}
    return view


def label_view(label: LabelRecord, project: ProjectRecord) -> dict[str, Any]:
    """A project label with its issue counts."""
    open_issues = sum(1 for i in project.issues if i.state == "opened" and label.name in i.labels)
    closed = sum(1 for i in project.issues if i.state == "closed" and label.name in i.labels)
    mrs = sum(1 for m in project.merge_requests if m.state == "opened" and label.name in m.labels)
    return {
        "id": label.id, "name": label.name, "color": label.color, "text_color": "#FFFFFF",
        "description": label.description or None, "description_html": label.description,
        "open_issues_count": open_issues,
        "closed_issues_count": closed, "open_merge_requests_count": mrs, "subscribed": False, "priority": None,
        "is_project_label": True,
    }


def milestone_view(project: ProjectRecord, ms: MilestoneRecord | None) -> dict[str, Any] | None:
    """A milestone."""
    if ms is None:
        return None
    expired = bool(ms.due_date) and date.fromisoformat(ms.due_date or "9999-12-31") < datetime.now(UTC).date()
    return {
        "id": ms.id, "iid": ms.iid, "project_id": project.id, "title": ms.title, "description": ms.description,
        "state": ms.state, "created_at": ms.created_at, "updated_at": ms.updated_at, "due_date": ms.due_date,
        "start_date": ms.start_date, "expired": expired,
        "web_url": f"{EXTERNAL_URL}/{project.path_with_namespace}/-/milestones/{ms.iid}",
    }


def _milestone(project: ProjectRecord, milestone_id: int | None) -> dict[str, Any] | None:
    return milestone_view(project, next((m for m in project.milestones if m.id == milestone_id), None))


def _people(state: GitLabState, ids: tuple[int, ...]) -> list[dict[str, Any]]:
    return [v for v in (user_basic(state.user(i)) for i in ids) if v is not None]


def issue_view(state: GitLabState, project: ProjectRecord, issue: IssueRecord) -> dict[str, Any]:
    """An issue."""
    assignees = _people(state, issue.assignee_ids)
    web = f"{EXTERNAL_URL}/{project.path_with_namespace}/-/issues/{issue.iid}"
    api = f"{EXTERNAL_URL}/api/v4/projects/{project.id}"
    return {
        "id": issue.id, "iid": issue.iid, "project_id": project.id, "title": issue.title,
        "description": issue.description or None, "state": issue.state, "created_at": issue.created_at,
        "updated_at": issue.updated_at, "closed_at": issue.closed_at,
        "closed_by": user_basic(state.user(issue.closed_by_id)) if issue.closed_by_id else None,
        "labels": list(issue.labels), "milestone": _milestone(project, issue.milestone_id), "assignees": assignees,
        "author": user_basic(state.user(issue.author_id)), "type": "ISSUE",
        "assignee": assignees[0] if assignees else None,
        "user_notes_count": sum(1 for n in issue.notes if not n.system),
        "merge_requests_count": 0, "upvotes": 0, "downvotes": 0, "due_date": issue.due_date,
        "confidential": issue.confidential, "discussion_locked": None, "issue_type": "issue", "web_url": web,
        "time_stats": {"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": None,
                       "human_total_time_spent": None},
        "task_completion_status": {"count": 0, "completed_count": 0}, "weight": None, "blocking_issues_count": 0,
        "has_tasks": True, "task_status": "0 of 0 checklist items completed",
        "_links": {"self": f"{api}/issues/{issue.iid}", "notes": f"{api}/issues/{issue.iid}/notes",
                   "award_emoji": f"{api}/issues/{issue.iid}/award_emoji", "project": api,
                   "closed_as_duplicate_of": None},
        "references": {"short": f"#{issue.iid}", "relative": f"#{issue.iid}",
                       "full": f"{project.path_with_namespace}#{issue.iid}"},
        "severity": "UNKNOWN", "moved_to_id": None, "service_desk_reply_to": None,
    }


def mr_view(state: GitLabState, project: ProjectRecord, mr: MergeRequestRecord, repo: Repo) -> dict[str, Any]:
    """A merge request."""
    branches = repo.branches()
    assignees = _people(state, mr.assignee_ids)
    web = f"{EXTERNAL_URL}/{project.path_with_namespace}/-/merge_requests/{mr.iid}"
    return {
        "id": mr.id, "iid": mr.iid, "project_id": project.id, "title": mr.title, "description": mr.description,
        "state": mr.state, "created_at": mr.created_at, "updated_at": mr.updated_at,
        "merged_by": user_basic(state.user(mr.merged_by_id)) if mr.merged_by_id else None,
        "merge_user": user_basic(state.user(mr.merged_by_id)) if mr.merged_by_id else None,
        "merged_at": mr.merged_at, "closed_by": user_basic(state.user(mr.closed_by_id)) if mr.closed_by_id else None,
        "closed_at": mr.closed_at, "target_branch": mr.target_branch, "source_branch": mr.source_branch,
        "user_notes_count": sum(1 for n in mr.notes if not n.system), "upvotes": 0, "downvotes": 0,
        "author": user_basic(state.user(mr.author_id)), "assignees": assignees,
        "assignee": assignees[0] if assignees else None, "reviewers": _people(state, mr.reviewer_ids),
        "source_project_id": project.id, "target_project_id": project.id, "labels": list(mr.labels),
        "draft": mr.title.lower().startswith(("draft:", "[draft]")),
        "work_in_progress": mr.title.lower().startswith(("draft:", "[draft]")),
        "milestone": _milestone(project, mr.milestone_id), "merge_when_pipeline_succeeds": False,
        "merge_status": "can_be_merged" if mr.state == "opened" else "unchecked",
        "detailed_merge_status": "mergeable" if mr.state == "opened" else "not_open",
        "sha": branches.get(mr.source_branch), "merge_commit_sha": mr.merge_commit_sha, "squash_commit_sha": None,
        "discussion_locked": None, "should_remove_source_branch": None, "force_remove_source_branch": False,
        "prepared_at": mr.created_at, "reference": f"!{mr.iid}",
        "references": {"short": f"!{mr.iid}", "relative": f"!{mr.iid}",
                       "full": f"{project.path_with_namespace}!{mr.iid}"},
        "web_url": web, "time_stats": {"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": None,
                                       "human_total_time_spent": None},
        "squash": False, "squash_on_merge": False, "task_completion_status": {"count": 0, "completed_count": 0},
        "has_conflicts": False, "blocking_discussions_resolved": True,
    }


def note_view(state: GitLabState, note: NoteRecord, noteable_id: int, noteable_iid: int, kind: str) -> dict[str, Any]:
    """A comment."""
    return {
        "id": note.id, "type": None, "body": note.body, "attachment": None,
        "author": user_basic(state.user(note.author_id)), "created_at": note.created_at, "updated_at": note.created_at,
        "system": note.system, "noteable_id": noteable_id, "noteable_type": kind, "noteable_iid": noteable_iid,
        "resolvable": False, "confidential": False, "internal": False,
    }


def _gitlab_date(iso: str) -> str:
    when = datetime.fromisoformat(iso)
    return when.strftime("%Y-%m-%dT%H:%M:%S.000") + when.strftime("%z")[:3] + ":" + when.strftime("%z")[3:]


def commit_view(project: ProjectRecord, commit: Commit) -> dict[str, Any]:
    """A commit."""
    return {
        "id": commit.id, "short_id": commit.id[:8], "created_at": _gitlab_date(commit.committed_date),
        "parent_ids": list(commit.parent_ids), "title": commit.title, "message": commit.message,
        "author_name": commit.author_name, "author_email": commit.author_email,
        "authored_date": _gitlab_date(commit.authored_date), "committer_name": commit.committer_name,
        "committer_email": commit.committer_email, "committed_date": _gitlab_date(commit.committed_date),
        "trailers": {}, "extended_trailers": {},
        "web_url": f"{EXTERNAL_URL}/{project.path_with_namespace}/-/commit/{commit.id}",
    }


def protected_branch_view(pb: ProtectedBranchRecord) -> dict[str, Any]:
    """A protected branch with its access levels."""

    def level(kind: str, value: int) -> list[dict[str, Any]]:
        return [{"id": pb.id * 3 + {"push": 0, "merge": 1, "unprotect": 2}[kind], "access_level": value,
                 "access_level_description": ACCESS_DESCRIPTIONS.get(value, "Maintainers"), "deploy_key_id": None,
                 "user_id": None, "group_id": None}]

    return {
        "id": pb.id, "name": pb.name, "push_access_levels": level("push", pb.push_access_level),
        "merge_access_levels": level("merge", pb.merge_access_level),
        "unprotect_access_levels": level("unprotect", pb.unprotect_access_level) if pb.unprotect_access_level != 40
        else [], "allow_force_push": pb.allow_force_push, "code_owner_approval_required": False,
        "inherited": False,
    }
