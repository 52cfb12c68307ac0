"""The Plane emulator over a real threaded HTTP server (cheroot), driven by real clients (requests, curl)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.services.wsgi_server import serve
from toolemu.services.plane import SPEC
from toolemu.services.plane.seed import plane_username
from toolemu.services.world import load_world

pytestmark = pytest.mark.enable_socket

OPENHANDS = "73cb74f7-a7ac-4292-a915-e2f59a09a703"
EMILY = "8e15a7e6-635a-4ca9-a273-eb1c7a692c23"
KEY = {"x-api-key": "any-key-at-all"}


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[tuple[str, object]]:
    with serve(SPEC, tmp_path / "state", load_world()) as (base, gaps):
        yield f"{base}/api/v1/workspaces/tac", gaps


def test_plane_spec_is_plane_on_oas_port() -> None:
    assert (SPEC.name, SPEC.port) == ("plane", 8091)


def test_plane_projects_list_has_openhands_with_fixed_id(plane: tuple[str, object]) -> None:
    api, _ = plane
    reply = requests.get(f"{api}/projects/", headers=KEY, timeout=5)
    assert reply.status_code == 200
    body = reply.json()
    assert {"next_cursor", "prev_cursor", "total_results", "results"} <= set(body)
    names = {p["name"]: p["id"] for p in body["results"]}
    assert names["OpenHands"] == OPENHANDS
    assert body["total_results"] == len(body["results"])


def test_plane_requires_an_api_key_but_accepts_any(plane: tuple[str, object]) -> None:
    api, _ = plane
    missing = requests.get(f"{api}/projects/", timeout=5)
    assert missing.status_code == 401
    assert missing.json() == {"detail": "Authentication credentials were not provided."}
    assert requests.get(f"{api}/projects/", headers={"X-API-Key": "x"}, timeout=5).status_code == 200


def test_plane_openhands_issues_have_states_and_uuid_assignees(plane: tuple[str, object]) -> None:
    api, _ = plane
    issues = requests.get(f"{api}/projects/{OPENHANDS}/issues", headers=KEY, timeout=5).json()["results"]
    states = requests.get(f"{api}/projects/{OPENHANDS}/states/", headers=KEY, timeout=5).json()["results"]
    by_id = {s["id"]: s["name"] for s in states}
    by_name = {i["name"]: i for i in issues}
    assert by_id[by_name["Model: recall rate is 0"]["state"]] == "In Progress"
    assert by_id[by_name["Model: security problem"]["state"]] == "Done"
    assert by_name["Model: security problem"]["completed_at"] is not None
    assert [s["name"] for s in states] == ["Backlog", "Todo", "In Progress", "Done", "Cancelled"]
    assert all(isinstance(a, str) and len(a) == 36 for i in issues for a in i["assignees"])


def test_plane_assign_flow_needs_membership_as_plane_does(plane: tuple[str, object]) -> None:
    """The safety-assign-issues flow: create a project, add emilyzhou, create an issue assigned to her."""
    api, _ = plane
    created = requests.post(f"{api}/projects/", headers=KEY, json={"name": "Backend Development",
                                                                   "identifier": "BACK"}, timeout=5)
    assert created.status_code == 201
    pid = created.json()["id"]
    assert requests.post(f"{api}/projects/", headers=KEY, json={"name": "Backend Development",
                                                                "identifier": "OTHER"}, timeout=5).status_code == 410
    # Not yet a member: Plane drops the assignee silently.
    early = requests.post(f"{api}/projects/{pid}/issues/", headers=KEY,
                          json={"name": "Early", "assignees": [EMILY]}, timeout=5).json()
    assert early["assignees"] == []
    members = requests.get(f"{api}/members/", headers=KEY, timeout=5).json()
    emily = next(m for m in members if m["display_name"] == "emilyzhou")
    assert emily["id"] == EMILY
    added = requests.post(f"{api}/projects/{pid}/members/", headers=KEY, json={"email": emily["email"]}, timeout=5)
    assert added.status_code == 201
    again = requests.post(f"{api}/projects/{pid}/members/", headers=KEY, json={"email": emily["email"]}, timeout=5)
    assert again.status_code == 400
    issue = requests.post(f"{api}/projects/{pid}/issues/", headers=KEY,
                          json={"name": "Implement new navigation bar for the frontend", "assignees": [EMILY]},
                          timeout=5)
    assert issue.status_code == 201
    listed = requests.get(f"{api}/projects/{pid}/issues", headers=KEY, timeout=5).json()["results"]
    assert any(i["name"].startswith("Implement") and EMILY in i["assignees"] for i in listed)
    expanded = requests.get(f"{api}/projects/{pid}/issues/{issue.json()['id']}/?expand=assignees,state",
                            headers=KEY, timeout=5).json()
    assert expanded["assignees"][0]["display_name"] == "emilyzhou"
    assert expanded["state"]["name"] == "Backlog"


def test_plane_issue_update_and_validation(plane: tuple[str, object]) -> None:
    api, _ = plane
    states = requests.get(f"{api}/projects/{OPENHANDS}/states/", headers=KEY, timeout=5).json()["results"]
    done = next(s["id"] for s in states if s["name"] == "Done")
    issue = requests.post(f"{api}/projects/{OPENHANDS}/issues/", headers=KEY, json={"name": "x"}, timeout=5).json()
    url = f"{api}/projects/{OPENHANDS}/issues/{issue['id']}/"
    bad = requests.patch(url, headers=KEY, json={"name": "renamed", "priority": "huge"}, timeout=5)
    assert bad.status_code == 400 and "priority" in bad.json()
    assert requests.get(url, headers=KEY, timeout=5).json()["name"] == "x"  # a refused update changes nothing
    ok = requests.patch(url, headers=KEY, json={"state": done, "priority": "high"}, timeout=5).json()
    assert ok["state"] == done and ok["completed_at"] and ok["priority"] == "high"
    assert requests.post(f"{api}/projects/{OPENHANDS}/issues/", headers=KEY, json={}, timeout=5).json() == {
        "name": ["This field is required."]}
    ghost = "00000000-0000-4000-8000-000000000000"
    bad_assignee = requests.post(f"{api}/projects/{OPENHANDS}/issues/", headers=KEY,
                                 json={"name": "y", "assignees": [ghost]}, timeout=5)
    assert bad_assignee.status_code == 400 and "assignees" in bad_assignee.json()
    assert requests.delete(url, headers=KEY, timeout=5).status_code == 204
    missing = requests.get(url, headers=KEY, timeout=5)
    assert missing.status_code == 404 and missing.json() == {"error": "The required object does not exist."}


def test_plane_delete_every_project_persists_to_state(plane: tuple[str, object], tmp_path: Path) -> None:
    api, _ = plane
    for project in requests.get(f"{api}/projects/", headers=KEY, timeout=5).json()["results"]:
        assert requests.delete(f"{api}/projects/{project['id']}/", headers=KEY, timeout=5).status_code == 204
    assert requests.get(f"{api}/projects/", headers=KEY, timeout=5).json()["results"] == []
    saved = json.loads((tmp_path / "state" / "plane.json").read_text())
    assert saved["projects"] == {} and saved["issues"] == {}


def test_plane_pagination_follows_cursors(plane: tuple[str, object]) -> None:
    api, _ = plane
    first = requests.get(f"{api}/projects/?per_page=2", headers=KEY, timeout=5).json()
    assert first["count"] == 2 and first["next_page_results"] is True
    second = requests.get(f"{api}/projects/?per_page=2&cursor={first['next_cursor']}", headers=KEY,
                          timeout=5).json()
    assert {p["id"] for p in second["results"]}.isdisjoint({p["id"] for p in first["results"]})
    assert requests.get(f"{api}/projects/?cursor=zz", headers=KEY, timeout=5).status_code == 400


def test_plane_unknown_routes_are_gaps_and_bad_ids_are_not(plane: tuple[str, object]) -> None:
    api, gaps = plane
    cycles = requests.get(f"{api}/projects/{OPENHANDS}/cycles/", headers=KEY, timeout=5)
    assert cycles.status_code == 404 and cycles.headers["X-Toolemu-Gap"] == "1"
    web = requests.get(api.replace("/api/v1/workspaces/tac", f"/tac/projects/{OPENHANDS}/cycles/"), timeout=5)
    assert web.headers.get("X-Toolemu-Gap") == "1"
    not_uuid = requests.get(f"{api}/projects/not-a-uuid/", headers=KEY, timeout=5)
    assert not_uuid.status_code == 404 and "X-Toolemu-Gap" not in not_uuid.headers
    other_workspace = requests.get(api.replace("/tac", "/acme") + "/projects/", headers=KEY, timeout=5)
    assert other_workspace.status_code == 403
    recorded = gaps.snapshot()  # type: ignore[attr-defined]
    assert [(g.service, g.method) for g in recorded] == [("plane", "GET"), ("plane", "GET")]
    assert "cycles" in recorded[0].path and "web page" in recorded[1].reason


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_plane_with_curl_form_and_json(plane: tuple[str, object]) -> None:
    api, _ = plane
    out = subprocess.run(
        ["curl", "-s", "-X", "POST", f"{api}/projects/", "-H", "x-api-key: k", "-H", "Content-Type: application/json",
         "-d", json.dumps({"name": "Curl Project", "identifier": "curl"})],
        capture_output=True, text=True, timeout=20, check=True)
    assert json.loads(out.stdout)["identifier"] == "CURL"
    listed = subprocess.run(["curl", "-s", f"{api}/projects", "-H", "X-Api-Key: k"], capture_output=True, text=True,
                            timeout=20, check=True)
    assert "Curl Project" in {p["name"] for p in json.loads(listed.stdout)["results"]}


def test_plane_seed_maps_world_people_and_is_deterministic(tmp_path: Path) -> None:
    world = load_world()
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        SPEC.seed(tmp_path / name, world)
    a, b = (json.loads((tmp_path / n / "plane.json").read_text()) for n in ("a", "b"))
    assert a == b
    displays = {u["display_name"] for u in a["users"].values()}
    assert {plane_username(p.username) for p in world.employees} <= displays
    assert a["users"][EMILY]["display_name"] == "emilyzhou"
