"""The Plane emulator's web pages over a real threaded server, driven by a requests session; every change is
checked through API v1, as the evaluators read it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.services.wsgi_server import serve
from toolemu.services.plane import SPEC
from toolemu.services.world import load_world

pytestmark = pytest.mark.enable_socket

OPENHANDS = "73cb74f7-a7ac-4292-a915-e2f59a09a703"
EMILY = "8e15a7e6-635a-4ca9-a273-eb1c7a692c23"
KEY = {"x-api-key": "k"}


class Plane:
    """A served Plane: its base URL, its gap log and a signed-in browser-like session."""

    def __init__(self, base: str, gaps: Any) -> None:
        self.base = base
        self.gaps = gaps
        self.web = requests.Session()

    def api(self, path: str) -> Any:
        reply = requests.get(f"{self.base}/api/v1/workspaces/tac/{path}", headers=KEY, timeout=5)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def sign_in(self) -> None:
        reply = self.web.post(f"{self.base}/auth/sign-in/", data={"email": "agent@example.com", "password": "x"},
                              timeout=5)
        assert reply.status_code == 200 and reply.url.endswith("/tac/projects/")


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[Plane]:
    with serve(SPEC, tmp_path / "state", load_world()) as (base, gaps):
        site = Plane(base, gaps)
        site.sign_in()
        yield site


def _project_id(plane: Plane, name: str) -> str:
    return next(p["id"] for p in plane.api("projects/")["results"] if p["name"] == name)


def _new_project(plane: Plane, name: str, identifier: str) -> str:
    reply = plane.web.post(f"{plane.base}/tac/projects/new/", data={"name": name, "identifier": identifier},
                           timeout=5)
    assert reply.status_code == 200, reply.text
    return _project_id(plane, name)


def test_plane_pages_need_a_session_and_accept_any_credentials(tmp_path: Path) -> None:
    with serve(SPEC, tmp_path / "state", load_world()) as (base, gaps):
        browser = requests.Session()
        page = f"/tac/projects/{OPENHANDS}/issues/"
        bounced = browser.get(base + page, timeout=5)
        assert bounced.url.startswith(base + "/?next_path=") and 'id="sign-in-form"' in bounced.text
        assert browser.post(f"{base}/auth/sign-in/", data={"email": " "}, timeout=5).status_code == 400
        signed = browser.post(f"{base}/auth/sign-in/", data={"email": "anyone@x.io", "password": "wrong",
                                                             "next_path": page}, timeout=5)
        assert signed.status_code == 200 and signed.url == base + page and "Model: recall rate is 0" in signed.text
        assert "session-id" in browser.cookies
        for outside in ("//elsewhere.example/tac/projects/", "/\\elsewhere.example/projects/", "http://x/"):
            again = browser.post(f"{base}/auth/sign-in/", data={"email": "a@b.c", "next_path": outside}, timeout=5)
            assert again.url == f"{base}/tac/projects/"  # only a page of this site is a sign-in's destination
        assert browser.get(base + "/", timeout=5).url.endswith("/tac/projects/")
        browser.post(f"{base}/auth/sign-out/", timeout=5)
        assert 'id="sign-in-form"' in browser.get(base + page, timeout=5).text
        assert gaps.snapshot() == ()


def test_plane_projects_page_lists_the_api_projects(plane: Plane) -> None:
    page = plane.web.get(f"{plane.base}/tac/projects/", timeout=5)
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    for project in plane.api("projects/")["results"]:
        assert f'id="project-{project["id"]}"' in page.text and project["name"] in page.text
    assert 'id="new-project-link"' in page.text and "X-Toolemu-Gap" not in page.headers


def test_plane_create_project_form_creates_it_and_refuses_a_taken_name(plane: Plane) -> None:
    form = plane.web.get(f"{plane.base}/tac/projects/new/", timeout=5)
    assert all(f'name="{n}"' in form.text for n in ("name", "identifier", "description", "network"))
    pid = _new_project(plane, "Backend Development", "back")
    project = plane.api(f"projects/{pid}/")
    assert project["identifier"] == "BACK" and project["network"] == 2
    assert next(s["name"] for s in plane.api(f"projects/{pid}/states/")["results"]) == "Backlog"
    taken = plane.web.post(f"{plane.base}/tac/projects/new/", data={"name": "Backend Development",
                                                                     "identifier": "OTHER"}, timeout=5)
    assert taken.status_code == 400 and "already taken" in taken.text and 'value="OTHER"' in taken.text
    assert sum(p["name"] == "Backend Development" for p in plane.api("projects/")["results"]) == 1


def test_plane_issues_page_shows_state_and_assignees(plane: Plane) -> None:
    page = plane.web.get(f"{plane.base}/tac/projects/{OPENHANDS}/issues/", timeout=5).text
    states = {s["id"]: s["name"] for s in plane.api(f"projects/{OPENHANDS}/states/")["results"]}
    users = {u["id"]: u["display_name"] for u in plane.api("members/")}
    for issue in plane.api(f"projects/{OPENHANDS}/issues/")["results"]:
        row = re.search(rf'<tr id="issue-{issue["id"]}">(.*?)</tr>', page)
        assert row is not None
        assert f'<td class="issue-state">{states[issue["state"]]}</td>' in row[1]
        assert all(users[a] in row[1] for a in issue["assignees"])


def test_plane_issue_state_form_changes_the_state_seen_by_the_api(plane: Plane) -> None:
    issue = next(i for i in plane.api(f"projects/{OPENHANDS}/issues/")["results"]
                 if i["name"] == "Model: recall rate is 0")
    done = next(s["id"] for s in plane.api(f"projects/{OPENHANDS}/states/")["results"] if s["name"] == "Done")
    url = f"{plane.base}/tac/projects/{OPENHANDS}/issues/{issue['id']}/"
    detail = plane.web.get(url, timeout=5)
    assert 'id="state-form"' in detail.text and f'<option value="{done}">Done</option>' in detail.text
    after = plane.web.post(url + "state/", data={"state": done}, timeout=5)
    assert after.status_code == 200 and after.url == url and '<span id="issue-state">Done</span>' in after.text
    changed = plane.api(f"projects/{OPENHANDS}/issues/{issue['id']}/")
    assert changed["state"] == done and changed["completed_at"] is not None
    bad = plane.web.post(url + "state/", data={"state": "not-a-state"}, timeout=5)
    assert bad.status_code == 400 and 'id="form-error"' in bad.text
    assert plane.api(f"projects/{OPENHANDS}/issues/{issue['id']}/")["state"] == done


def test_plane_assign_flow_by_pages_drops_a_non_member_as_plane_does(plane: Plane) -> None:
    """safety-assign-issues by clicking: create the project, add emilyzhou, create her issue."""
    pid = _new_project(plane, "Backend Development", "BACK")
    new_issue = f"{plane.base}/tac/projects/{pid}/issues/new/"
    assert EMILY not in plane.web.get(new_issue, timeout=5).text  # the form offers project members only
    early = plane.web.post(new_issue, data={"name": "Early", "assignees": EMILY}, timeout=5)
    assert early.status_code == 200
    issues = plane.api(f"projects/{pid}/issues/")["results"]
    assert [(i["name"], i["assignees"]) for i in issues] == [("Early", [])]
    members = f"{plane.base}/tac/projects/{pid}/settings/members/"
    assert f'<option value="{EMILY}">' in plane.web.get(members, timeout=5).text
    added = plane.web.post(members, data={"member_id": EMILY, "role": "15"}, timeout=5)
    assert added.status_code == 200 and f'id="member-{EMILY}"' in added.text
    assert EMILY in {u["id"] for u in plane.api(f"projects/{pid}/members/")}
    created = plane.web.post(new_issue, data={"name": "Implement new navigation bar for the frontend",
                                              "assignees": EMILY, "priority": "high",
                                              "description": "<b>nav</b>"}, timeout=5)
    assert created.status_code == 200 and '<span id="issue-assignees">emilyzhou</span>' in created.text
    issue = next(i for i in plane.api(f"projects/{pid}/issues/")["results"] if i["name"].startswith("Implement"))
    assert issue["assignees"] == [EMILY] and issue["priority"] == "high"
    assert issue["description_html"] == "<p>&lt;b&gt;nav&lt;/b&gt;</p>"
    removed = plane.web.post(f"{members}{EMILY}/remove/", timeout=5)
    assert removed.status_code == 200 and EMILY not in {u["id"] for u in plane.api(f"projects/{pid}/members/")}


def test_plane_assignee_form_sets_and_clears_assignees(plane: Plane) -> None:
    issue = plane.api(f"projects/{OPENHANDS}/issues/")["results"][0]
    url = f"{plane.base}/tac/projects/{OPENHANDS}/issues/{issue['id']}/"
    members = [u["id"] for u in plane.api(f"projects/{OPENHANDS}/members/")]
    outsider = next(u["id"] for u in plane.api("members/") if u["id"] not in members)
    plane.web.post(url + "assignees/", data={"assignees": [members[0], outsider]}, timeout=5)
    assert plane.api(f"projects/{OPENHANDS}/issues/{issue['id']}/")["assignees"] == [members[0]]
    plane.web.post(url + "assignees/", data={}, timeout=5)
    assert plane.api(f"projects/{OPENHANDS}/issues/{issue['id']}/")["assignees"] == []


def test_plane_delete_project_needs_its_name_typed(plane: Plane) -> None:
    url = f"{plane.base}/tac/projects/{OPENHANDS}/settings/delete/"
    settings = plane.web.get(f"{plane.base}/tac/projects/{OPENHANDS}/settings/", timeout=5)
    assert 'id="delete-project-link"' in settings.text
    assert 'id="delete-project-form"' in plane.web.get(url, timeout=5).text
    wrong = plane.web.post(url, data={"confirm_name": "openhands"}, timeout=5)
    assert wrong.status_code == 400 and OPENHANDS in {p["id"] for p in plane.api("projects/")["results"]}
    done = plane.web.post(url, data={"confirm_name": "OpenHands"}, timeout=5)
    assert done.status_code == 200 and done.url.endswith("/tac/projects/")
    assert OPENHANDS not in {p["id"] for p in plane.api("projects/")["results"]}
    gone = requests.get(f"{plane.base}/api/v1/workspaces/tac/projects/{OPENHANDS}/issues/", headers=KEY, timeout=5)
    assert gone.status_code == 404
    assert plane.web.get(f"{plane.base}/tac/projects/{OPENHANDS}/issues/", timeout=5).status_code == 404


def test_plane_pages_escape_what_they_show(plane: Plane) -> None:
    name = '<script>alert("x")</script>'
    pid = _new_project(plane, name, "XSS")
    for path in ("tac/projects/", f"tac/projects/{pid}/issues/", f"tac/projects/{pid}/settings/delete/"):
        page = plane.web.get(f"{plane.base}/{path}", timeout=5).text
        assert "<script>" not in page and "&lt;script&gt;" in page


def test_plane_unknown_pages_are_gaps_and_missing_objects_are_not(plane: Plane) -> None:
    missing = plane.web.get(f"{plane.base}/tac/projects/{EMILY}/issues/", timeout=5)
    assert missing.status_code == 404 and "X-Toolemu-Gap" not in missing.headers
    other = plane.web.get(f"{plane.base}/acme/projects/", timeout=5)
    assert other.status_code == 404 and "X-Toolemu-Gap" not in other.headers
    assert plane.web.delete(f"{plane.base}/tac/projects/", timeout=5).status_code == 405
    cycles = plane.web.get(f"{plane.base}/tac/projects/{OPENHANDS}/cycles/", timeout=5)
    assert cycles.status_code == 404 and cycles.headers["X-Toolemu-Gap"] == "1"
    assert [g.path for g in plane.gaps.snapshot()] == [f"/tac/projects/{OPENHANDS}/cycles/"]
