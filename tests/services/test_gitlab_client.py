"""python-gitlab, a real GitLab client, against the GitLab emulator (what agents' Python scripts do)."""

from __future__ import annotations

import gitlab as python_gitlab
import pytest

from tests.services.gitlab_server import Served, gitlab, gitlab_seed

pytestmark = pytest.mark.enable_socket
__all__ = ["gitlab", "gitlab_seed"]


def _client(gl: Served) -> python_gitlab.Gitlab:
    # keep_base_url: the test reaches the server by 127.0.0.1, while GitLab answers with its external URL.
    return python_gitlab.Gitlab(gl.url, private_token="root-token", timeout=10, keep_base_url=True)


def test_python_gitlab_lists_all_projects_across_pages(gitlab: Served) -> None:
    client = _client(gitlab)
    projects = client.projects.list(get_all=True, per_page=4)
    assert len(projects) == 14
    assert {p.path for p in projects} >= {"doc", "sotopia", "llama.cpp"}
    lazy = client.projects.list(iterator=True, per_page=5)
    assert lazy.total == 14 and len(list(lazy)) == 14


def test_python_gitlab_reads_raw_files_and_the_tree(gitlab: Served) -> None:
    project = _client(gitlab).projects.get("root/openhands")
    raw = project.files.raw(file_path="pyproject.toml", ref="main")
    assert b'zope-interface = "7.1.1"' in raw
    readme = project.files.get(file_path="README.md", ref="main")
    assert readme.decode().startswith(b"# OpenHands")
    paths = {item["path"] for item in project.repository_tree(recursive=True, get_all=True)}
    assert {"openhands/core/main.py", "pyproject.toml", ".gitlab-ci.yml"} <= paths


def test_python_gitlab_creates_an_issue_with_assignee_and_milestone(gitlab: Served) -> None:
    client = _client(gitlab)
    project = client.projects.get("root/risingwave")
    li = client.users.list(username="li_ming")[0]
    milestone = next(m for m in project.milestones.list(get_all=True) if m.title == "release-1.9")
    issue = project.issues.create({"title": "Improve Logging for Bulk Request Failures", "assignee_ids": [li.id],
                                   "milestone_id": milestone.id, "due_date": "2024-11-15"})
    again = project.issues.get(issue.iid)
    assert (again.assignee["username"], again.milestone["title"], again.due_date) == (
        "li_ming", "release-1.9", "2024-11-15")
    again.state_event = "close"
    again.save()
    assert project.issues.get(issue.iid).state == "closed"


def test_python_gitlab_closes_merge_requests_and_unprotects_main(gitlab: Served) -> None:
    project = _client(gitlab).projects.get("root/sotopia")
    for mr in project.mergerequests.list(state="opened", get_all=True):
        mr.state_event = "close"
        mr.save()
    assert project.mergerequests.list(state="opened", get_all=True) == []
    project.protectedbranches.delete("main")
    assert project.protectedbranches.list(get_all=True) == []


def test_python_gitlab_deletes_a_branch_removes_a_member_and_deletes_a_project(gitlab: Served) -> None:
    client = _client(gitlab)
    project = client.projects.get("root/node-red")
    project.branches.delete("feature/dark-theme")
    assert [b.name for b in project.branches.list(get_all=True)] == ["main"]
    member = next(m for m in project.members_all.list(get_all=True) if m.username == "jessica_chen")
    project.members.delete(member.id)
    assert "jessica_chen" not in [m.username for m in project.members_all.list(get_all=True)]
    project.delete()
    with pytest.raises(python_gitlab.exceptions.GitlabGetError) as raised:
        client.projects.get("root/node-red")
    assert raised.value.response_code == 404


def test_python_gitlab_creates_a_project_with_a_commit_and_a_wiki_page(gitlab: Served) -> None:
    client = _client(gitlab)
    project = client.projects.create({"name": "internal-api-client", "visibility": "public"})
    project.commits.create({"branch": "main", "commit_message": "Add the client", "actions": [
        {"action": "create", "file_path": "README.md", "content": "# Internal API client\n"},
        {"action": "create", "file_path": "client.py", "content": "import requests\n"}]})
    assert project.files.raw(file_path="client.py", ref="main") == b"import requests\n"
    project.wikis.create({"title": "Usage", "content": "Run client.py."})
    assert [w.slug for w in project.wikis.list(get_all=True)] == ["Usage"]
    client.auth()
    assert client.user is not None and client.user.username == "root"
    assert not gitlab.gaps.snapshot()
