"""The GitLab emulator's REST API over a real threaded HTTP server (cheroot), driven by requests and curl."""

from __future__ import annotations

import json
import subprocess
import urllib.parse

import pytest
import requests

from tests.services.gitlab_server import TOKEN, Served, gitlab, gitlab_seed
from toolemu.services.gitlab import SPEC

pytestmark = pytest.mark.enable_socket
__all__ = ["gitlab", "gitlab_seed"]


def _get(gl: Served, route: str, **params: object) -> requests.Response:
    return requests.get(f"{gl.api}/{route}", headers=TOKEN, params=params, timeout=10)


def _project(gl: Served, path: str) -> str:
    return "projects/" + urllib.parse.quote(f"root/{path}", safe="")


def test_gitlab_spec_is_gitlab_on_oas_port() -> None:
    assert (SPEC.name, SPEC.port) == ("gitlab", 8929)


def test_gitlab_projects_are_paged_with_gitlabs_headers(gitlab: Served) -> None:
    first = _get(gitlab, "projects", per_page=5)
    assert first.status_code == 200
    assert [first.headers[h] for h in ("X-Total", "X-Total-Pages", "X-Page", "X-Next-Page")] == ["14", "3", "1", "2"]
    assert first.headers["X-Prev-Page"] == ""
    assert 'rel="next"' in first.headers["Link"] and "page=2" in first.headers["Link"]
    names = [p["name"] for p in first.json()]
    pages = [_get(gitlab, "projects", per_page=5, page=n).json() for n in (2, 3)]
    names += [p["name"] for page in pages for p in page]
    assert len(names) == 14 and "Documentation" in names and "sotopia" in names
    assert len(_get(gitlab, "projects").json()) == 14  # GitLab's default page holds 20
    assert [p["name"] for p in _get(gitlab, "projects", search="sotop").json()] == ["sotopia"]


def test_gitlab_project_fields_by_path_and_by_id(gitlab: Served) -> None:
    by_path = _get(gitlab, _project(gitlab, "risingwave")).json()
    by_id = _get(gitlab, f"projects/{by_path['id']}").json()
    assert by_path == by_id
    assert by_path["path_with_namespace"] == "root/risingwave" and by_path["default_branch"] == "main"
    assert by_path["archived"] is False and by_path["open_issues_count"] == 2
    assert by_path["web_url"] == "http://the-agent-company.com:8929/root/risingwave"
    assert by_path["http_url_to_repo"] == "http://the-agent-company.com:8929/root/risingwave.git"


def test_gitlab_missing_things_answer_gitlabs_404_shapes(gitlab: Served) -> None:
    assert _get(gitlab, _project(gitlab, "nope")).json() == {"message": "404 Project Not Found"}
    missing_file = _get(gitlab, _project(gitlab, "sotopia") + "/repository/files/NOPE.md/raw", ref="main")
    assert (missing_file.status_code, missing_file.json()) == (404, {"message": "404 File Not Found"})
    assert _get(gitlab, _project(gitlab, "sotopia") + "/issues/999").json() == {"message": "404 Issue Not Found"}
    assert not gitlab.gaps.snapshot()  # answers, not gaps


def test_gitlab_unknown_endpoint_is_a_recorded_gap_answered_404(gitlab: Served) -> None:
    reply = _get(gitlab, _project(gitlab, "sotopia") + "/pipelines")
    assert (reply.status_code, reply.json(), reply.headers["X-Toolemu-Gap"]) == (404, {"error": "404 Not Found"}, "1")
    web = requests.get(f"{gitlab.url}/root/sotopia/-/pipelines", timeout=10)
    assert web.status_code == 404 and web.headers["X-Toolemu-Gap"] == "1"
    gaps = gitlab.gaps.snapshot()
    assert [(g.service, g.method) for g in gaps] == [("gitlab", "GET"), ("gitlab", "GET")]
    assert "pipelines" in gaps[0].reason and "web UI" in gaps[1].reason


def test_gitlab_raw_files_through_api_and_web_path(gitlab: Served) -> None:
    raw = _get(gitlab, _project(gitlab, "openhands") + "/repository/files/pyproject.toml/raw", ref="main")
    assert raw.status_code == 200 and 'tree-sitter = "0.23.2"' in raw.text
    nested = urllib.parse.quote("openhands/core/config.py", safe="")
    meta = _get(gitlab, _project(gitlab, "openhands") + f"/repository/files/{nested}", ref="main").json()
    assert meta["file_path"] == "openhands/core/config.py" and meta["encoding"] == "base64"
    web = requests.get(f"{gitlab.url}/root/openhands/-/raw/main/README.md", timeout=10)
    assert web.status_code == 200 and web.text.startswith("# OpenHands")
    assert _get(gitlab, _project(gitlab, "openhands") + f"/repository/files/{nested}").json() == {
        "error": "ref is missing"}


def test_gitlab_create_issue_with_assignee_milestone_and_due_date(gitlab: Served) -> None:
    rw = _project(gitlab, "risingwave")
    user = _get(gitlab, "users", username="li_ming").json()
    milestone = _get(gitlab, f"{rw}/milestones", title="release-1.9").json()
    assert [u["username"] for u in user] == ["li_ming"] and len(milestone) == 1
    created = requests.post(f"{gitlab.api}/{rw}/issues", headers=TOKEN, timeout=10, json={
        "title": "Fix Buffer Saturation in Ingestion Path", "assignee_ids": [user[0]["id"]],
        "milestone_id": milestone[0]["id"], "due_date": "2024-11-30", "description": "Under sustained load."})
    assert created.status_code == 201
    issue = created.json()
    assert (issue["assignee"]["username"], issue["milestone"]["title"], issue["due_date"], issue["state"]) == (
        "li_ming", "release-1.9", "2024-11-30", "opened")
    found = _get(gitlab, f"{rw}/issues", search="Fix Buffer Saturation in Ingestion Path").json()
    assert [i["iid"] for i in found] == [issue["iid"]]
    assert _get(gitlab, f"{rw}/issues", search="saturation buffer").json()[0]["iid"] == issue["iid"]
    assert _get(gitlab, f"{rw}/issues", search="Buffer Saturation Elsewhere").json() == []


def test_gitlab_issue_from_query_params_as_setup_scripts_send_it(gitlab: Served) -> None:
    oh = _project(gitlab, "openhands")
    reply = requests.post(f"{gitlab.api}/{oh}/issues", headers=TOKEN, params={"title": "Model: recall rate is 0"},
                          timeout=10)
    assert reply.status_code == 201 and reply.json()["title"] == "Model: recall rate is 0"


def test_gitlab_close_issue_updates_open_issues_count(gitlab: Served) -> None:
    rw = _project(gitlab, "risingwave")
    before = _get(gitlab, rw).json()["open_issues_count"]
    opened = _get(gitlab, f"{rw}/issues", state="opened").json()
    closed = requests.put(f"{gitlab.api}/{rw}/issues/{opened[0]['iid']}", headers=TOKEN, timeout=10,
                          data={"state_event": "close"}).json()
    assert closed["state"] == "closed" and closed["closed_by"]["username"] == "root"
    assert _get(gitlab, rw).json()["open_issues_count"] == before - 1
    deleted = requests.delete(f"{gitlab.api}/{rw}/issues/{opened[1]['iid']}", headers=TOKEN, timeout=10)
    assert deleted.status_code == 204 and _get(gitlab, rw).json()["open_issues_count"] == before - 2


def test_gitlab_close_and_merge_merge_requests(gitlab: Served) -> None:
    oh = _project(gitlab, "openhands")
    opened = _get(gitlab, f"{oh}/merge_requests", state="opened").json()
    assert len(opened) == 2
    draft = next(m for m in opened if m["draft"])
    closed = requests.put(f"{gitlab.api}/{oh}/merge_requests/{draft['iid']}", headers=TOKEN, timeout=10,
                          json={"state_event": "close"})
    assert closed.json()["state"] == "closed"
    other = next(m for m in opened if not m["draft"])
    merged = requests.put(f"{gitlab.api}/{oh}/merge_requests/{other['iid']}/merge", headers=TOKEN, timeout=10)
    assert merged.status_code == 200 and merged.json()["state"] == "merged"
    config = _get(gitlab, f"{oh}/repository/files/openhands%2Fcore%2Fconfig.py/raw", ref="main").text
    assert "sandbox_timeout: int = 300" in config  # the merge is a real commit on main
    assert _get(gitlab, f"{oh}/merge_requests", state="opened").json() == []


def test_gitlab_unprotect_main_and_reprotect_for_no_one(gitlab: Served) -> None:
    so = _project(gitlab, "sotopia")
    rules = _get(gitlab, f"{so}/protected_branches").json()
    assert rules[0]["name"] == "main" and rules[0]["push_access_levels"][0]["access_level"] == 40
    assert requests.delete(f"{gitlab.api}/{so}/protected_branches/main", headers=TOKEN, timeout=10).status_code == 204
    assert _get(gitlab, f"{so}/protected_branches").json() == []
    again = requests.post(f"{gitlab.api}/{so}/protected_branches", headers=TOKEN, timeout=10,
                          data={"name": "main", "push_access_level": 0})
    level = again.json()["push_access_levels"][0]
    assert again.status_code == 201 and (level["access_level"], level["access_level_description"]) == (0, "No one")
    twice = requests.post(f"{gitlab.api}/{so}/protected_branches", headers=TOKEN, timeout=10, data={"name": "main"})
    assert (twice.status_code, twice.json()) == (409, {"message": "Protected branch 'main' already exists"})
    refused = requests.post(f"{gitlab.api}/{so}/repository/files/X.md", headers=TOKEN, timeout=10,
                            json={"branch": "main", "content": "x", "commit_message": "x"})
    assert refused.status_code == 403


def test_gitlab_delete_branch_but_not_the_default_one(gitlab: Served) -> None:
    rw = _project(gitlab, "risingwave")
    assert [b["name"] for b in _get(gitlab, f"{rw}/repository/branches").json()] == ["main", "perf/flush-batching"]
    gone = requests.delete(f"{gitlab.api}/{rw}/repository/branches/perf%2Fflush-batching", headers=TOKEN, timeout=10)
    assert gone.status_code == 204
    kept = requests.delete(f"{gitlab.api}/{rw}/repository/branches/main", headers=TOKEN, timeout=10)
    assert kept.status_code == 405 and "default branch" in kept.json()["message"]
    assert [b["name"] for b in _get(gitlab, f"{rw}/repository/branches").json()] == ["main"]


def test_gitlab_members_remove_and_add(gitlab: Served) -> None:
    so = _project(gitlab, "sotopia")
    members = _get(gitlab, f"{so}/members/all").json()
    alex = next(m for m in members if m["username"] == "alex_turner")
    assert alex["access_level"] == 40 and members[0]["username"] == "root"
    assert requests.delete(f"{gitlab.api}/{so}/members/{alex['id']}", headers=TOKEN, timeout=10).status_code == 204
    assert "alex_turner" not in [m["username"] for m in _get(gitlab, f"{so}/members/all").json()]
    back = requests.post(f"{gitlab.api}/{so}/members", headers=TOKEN, timeout=10,
                         data={"user_id": alex["id"], "access_level": 30})
    assert back.status_code == 201 and back.json()["access_level"] == 30
    dup = requests.post(f"{gitlab.api}/{so}/members", headers=TOKEN, timeout=10,
                        data={"user_id": alex["id"], "access_level": 30})
    assert (dup.status_code, dup.json()) == (409, {"message": "Member already exists"})


def test_gitlab_create_project_with_files_then_delete_it(gitlab: Served) -> None:
    made = requests.post(f"{gitlab.api}/projects", headers=TOKEN, timeout=10,
                         json={"name": "Secure Banking App", "visibility": "public"})
    assert made.status_code == 201
    project = made.json()
    assert (project["path_with_namespace"], project["empty_repo"], project["default_branch"]) == (
        "root/secure-banking-app", True, None)
    path = _project(gitlab, "secure-banking-app")
    wrote = requests.post(f"{gitlab.api}/{path}/repository/files/README.md", headers=TOKEN, timeout=10,
                          json={"branch": "main", "content": "# Banking\n", "commit_message": "Add README"})
    assert wrote.status_code == 201 and wrote.json() == {"file_path": "README.md", "branch": "main"}
    detail = _get(gitlab, path).json()
    assert detail["default_branch"] == "main" and detail["empty_repo"] is False
    assert _get(gitlab, f"{path}/protected_branches").json()[0]["name"] == "main"  # GitLab protects the first branch
    assert _get(gitlab, f"{path}/repository/files/README.md/raw", ref="main").text == "# Banking\n"
    taken = requests.post(f"{gitlab.api}/projects", headers=TOKEN, timeout=10, json={"name": "Secure Banking App"})
    assert taken.status_code == 400 and taken.json()["message"]["path"] == ["has already been taken"]
    gone = requests.delete(f"{gitlab.api}/{path}", headers=TOKEN, timeout=10)
    assert (gone.status_code, gone.json()) == (202, {"message": "202 Accepted"})
    assert _get(gitlab, path).status_code == 404 and len(_get(gitlab, "projects").json()) == 14
    assert not (gitlab.state / "repos" / "root" / "secure-banking-app.git").exists()


def test_gitlab_archive_makes_a_project_read_only(gitlab: Served) -> None:
    raft = _project(gitlab, "raft")
    archived = requests.post(f"{gitlab.api}/{raft}/archive", headers=TOKEN, timeout=10)
    assert archived.status_code == 201 and archived.json()["archived"] is True
    assert [p["name"] for p in _get(gitlab, "projects", archived="true").json()] == ["raft"]
    refused = requests.post(f"{gitlab.api}/{raft}/issues", headers=TOKEN, timeout=10, json={"title": "x"})
    assert (refused.status_code, refused.json()) == (403, {"message": "403 Forbidden"})
    assert requests.post(f"{gitlab.api}/{raft}/unarchive", headers=TOKEN, timeout=10).json()["archived"] is False


def test_gitlab_wiki_pages_create_update_and_list_with_content(gitlab: Served) -> None:
    so = _project(gitlab, "sotopia")
    assert _get(gitlab, f"{so}/wikis").json() == []
    made = requests.post(f"{gitlab.api}/{so}/wikis", headers=TOKEN, timeout=10,
                         data={"title": "Introduction to Sotopia", "content": "Sotopia simulates social tasks."})
    assert made.status_code == 201 and made.json()["slug"] == "Introduction-to-Sotopia"
    requests.put(f"{gitlab.api}/{so}/wikis/Introduction-to-Sotopia", headers=TOKEN, timeout=10,
                 data={"content": "Sotopia is experimental."})
    pages = _get(gitlab, f"{so}/wikis", with_content=1).json()
    assert pages == [{"format": "markdown", "slug": "Introduction-to-Sotopia", "title": "Introduction to Sotopia",
                      "encoding": "UTF-8", "content": "Sotopia is experimental."}]


def test_gitlab_commits_tree_and_commit_actions(gitlab: Served) -> None:
    so = _project(gitlab, "sotopia")
    commits = _get(gitlab, f"{so}/repository/commits", ref_name="main")
    assert commits.headers["X-Total"] == "4" and commits.json()[0]["title"] == "Add CI pipeline"
    tree = _get(gitlab, f"{so}/repository/tree").json()
    assert [e["type"] for e in tree][:3] == ["tree", "tree", "tree"] and "README.md" in [e["path"] for e in tree]
    made = requests.post(f"{gitlab.api}/{so}/repository/commits", headers=TOKEN, timeout=10, json={
        "branch": "cleanup", "start_branch": "main", "commit_message": "Drop the CI file", "actions": [
            {"action": "delete", "file_path": ".gitlab-ci.yml"},
            {"action": "create", "file_path": "docs/NOTES.md", "content": "notes"}]})
    assert made.status_code == 201 and made.json()["stats"]["total"] > 0
    assert _get(gitlab, f"{so}/repository/tree", ref="cleanup", path="docs").json()[0]["path"] == "docs/NOTES.md"
    assert _get(gitlab, f"{so}/repository/commits", ref_name="main").headers["X-Total"] == "4"


def test_gitlab_users_current_user_version_and_oauth(gitlab: Served) -> None:
    assert requests.get(f"{gitlab.api}/user", timeout=10).status_code == 401
    me = requests.get(f"{gitlab.api}/user", headers={"Authorization": "Bearer anything"}, timeout=10).json()
    assert (me["username"], me["is_admin"]) == ("root", True)
    token = requests.post(f"{gitlab.url}/oauth/token", timeout=10,
                          data={"grant_type": "password", "username": "root", "password": "theagentcompany"}).json()
    assert token["token_type"] == "Bearer" and token["access_token"]
    assert requests.get(f"{gitlab.api}/user", headers={"Authorization": f"Bearer {token['access_token']}"},
                        timeout=10).status_code == 200
    assert _get(gitlab, "version").json()["version"]
    assert len(_get(gitlab, "users", per_page=100).json()) == 18


def test_gitlab_anonymous_reads_public_projects_but_cannot_write(gitlab: Served) -> None:
    public = requests.get(f"{gitlab.api}/projects", timeout=10)
    assert public.status_code == 200 and len(public.json()) == 14
    denied = requests.post(f"{gitlab.api}/projects", json={"name": "x"}, timeout=10)
    assert (denied.status_code, denied.json()) == (401, {"message": "401 Unauthorized"})


def test_gitlab_curl_lists_projects_and_creates_an_issue(gitlab: Served) -> None:
    listed = subprocess.run(
        ["curl", "-sS", "--header", "PRIVATE-TOKEN: root-token", f"{gitlab.api}/projects?per_page=100"],
        capture_output=True, text=True, timeout=30, check=True)
    assert len(json.loads(listed.stdout)) == 14
    made = subprocess.run(["curl", "-sS", "-u", "root:theagentcompany", "-X", "POST",
                           f"{gitlab.api}/projects/root%2Fbustub/issues", "-d", "title=From curl",
                           "-d", "labels=bug,triage", "-d", "assignee_ids[]=5"],
                          capture_output=True, text=True, timeout=30, check=True)
    issue = json.loads(made.stdout)
    assert issue["labels"] == ["bug", "triage"] and issue["assignees"][0]["username"] == "wang_fang"
    labels = _get(gitlab, "projects/root%2Fbustub/labels").json()
    assert "triage" in [x["name"] for x in labels]  # GitLab creates labels an issue names


def test_gitlab_state_is_on_disk_after_each_answer(gitlab: Served) -> None:
    requests.post(f"{gitlab.api}/projects/root%2Fcolly/issues", headers=TOKEN, json={"title": "On disk"}, timeout=10)
    store = json.loads((gitlab.state / "store.json").read_text())
    colly = next(p for p in store["projects"] if p["path"] == "colly")
    assert "On disk" in [i["title"] for i in colly["issues"]]


def test_gitlab_repository_archive_is_a_real_tarball(gitlab: Served) -> None:
    import io
    import tarfile

    reply = _get(gitlab, "projects/root%2Fjanusgraph/repository/archive.tar.gz", sha="main")
    assert reply.status_code == 200 and reply.headers["Content-Type"] == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(reply.content), mode="r:gz") as tar:
        names = tar.getnames()
    assert any(n.endswith("/LICENSE.txt") for n in names) and all(n.startswith("janusgraph-main-") for n in names)
    assert _get(gitlab, "projects/root%2Fjanusgraph/repository/archive.zip").content[:2] == b"PK"
