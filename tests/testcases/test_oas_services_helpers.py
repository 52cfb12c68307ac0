"""OAS's ``common`` service helpers (ours) against the running emulated services, served on 127.0.0.1 by cheroot
and reached through the host-pinned addresses, as the grader reaches them: what upstream's helpers send and read,
the int-id defect, and every way a service can fail to answer ending in ``ServiceFailure``, never a value."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.wsgi_server import serve
from toolemu.services.base import HOSTNAME, PORTS
from toolemu.services.gitlab import SPEC as GITLAB
from toolemu.services.owncloud import SPEC as OWNCLOUD
from toolemu.services.plane import SPEC as PLANE
from toolemu.services.world import load_world
from toolemu.toolkits.sandbox.oas_compat import common

pytestmark = pytest.mark.enable_socket

OPENHANDS = "73cb74f7-a7ac-4292-a915-e2f59a09a703"


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """All three services running, and ``common`` pinned to them; yields service -> base URL."""
    world = load_world().with_files({"owncloud": {"Documents/Financials/budget.xlsx": b"PK-not-really"}})
    root = tmp_path_factory.mktemp("services")
    with serve(OWNCLOUD, root / "oc", world) as (oc, _), serve(GITLAB, root / "gl", world) as (gl, _), \
            serve(PLANE, root / "pl", world) as (pl, _):
        bases = {"owncloud": oc, "gitlab": gl, "plane": pl}
        common.set_service_addresses({f"{HOSTNAME}:{PORTS[s]}": url.removeprefix("http://")
                                      for s, url in bases.items()})
        try:
            yield bases
        finally:
            common.set_service_addresses({})


def test_owncloud_helpers_propfind_and_get(services: dict[str, str]) -> None:
    assert common.check_file_in_owncloud_directory("budget.xlsx", "Documents/Financials") is True
    assert common.check_file_in_owncloud_directory("payments.xlsx", "Documents/Financials") is False
    assert common.check_file_in_owncloud_directory("x", "Documents/NoSuchFolder") is None  # not a 207
    assert common.get_binary_file_content_owncloud("budget.xlsx", "Documents/Financials") == b"PK-not-really"
    assert common.get_binary_file_content_owncloud("nope.xlsx", "Documents/Financials") is None


def test_owncloud_check_and_download_writes_the_file(services: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "got.xlsx"
    assert common.check_and_download_file("budget.xlsx", "/Documents/Financials/", str(out)) is True
    assert out.read_bytes() == b"PK-not-really"
    assert common.check_and_download_file("none.xlsx", "Documents/Financials", str(tmp_path / "x")) is False


def test_gitlab_helpers_send_the_root_token_and_quote_paths(services: dict[str, str]) -> None:
    reply = common.make_gitlab_request("root/openhands")
    assert reply.status_code == 200 and reply.json()["path"] == "openhands"
    issues = common.make_gitlab_request("root/openhands", "issues", params={"state": "all"})
    assert isinstance(issues.json(), list)
    project_id = common.get_gitlab_project_id("openhands")
    assert project_id is not None and project_id.isdigit()
    assert common.make_gitlab_request(project_id).json()["name"] == "openhands"
    missing = common.make_gitlab_request("root/no-such-project")
    assert missing.status_code == 404 and not missing  # a 404 Response is falsy, as upstream's evaluators rely on


def test_gitlab_int_project_id_raises_typeerror_and_is_recorded(services: dict[str, str]) -> None:
    before = len(common.swallowed_exceptions())
    with pytest.raises(TypeError, match="not iterable"):
        common.make_gitlab_request(7, "members/all")  # type: ignore[arg-type]
    lines = common.swallowed_exceptions()[before:]
    assert len(lines) == 1 and "upstream defect: project id 7 is an int" in lines[0]


def test_plane_helpers_read_projects_issues_and_states(services: dict[str, str]) -> None:
    assert common.get_plane_project_id("OpenHands") == OPENHANDS
    assert common.get_plane_project_id("No Such Project") is None
    names = {p["name"] for p in common.get_all_plane_projects()}
    assert "OpenHands" in names
    issues = common.get_plane_project_all_issues(OPENHANDS)
    assert "Model: security problem" in {i["name"] for i in issues}
    state_map, id_map = common.get_plane_state_id_dict(OPENHANDS)
    assert set(state_map) == {"Backlog", "Todo", "In Progress", "Done", "Cancelled"}
    assert id_map[state_map["Done"]] == "Done"
    created = common.create_plane_issue(OPENHANDS, "from the helper")
    assert created is not None and common.get_plane_issue_details(OPENHANDS, "from the helper")["id"] == created["id"]


def test_a_gap_is_a_service_failure_not_a_value(services: dict[str, str]) -> None:
    with pytest.raises(common.ServiceFailure, match=r"plane: GET .*cycles.*not emulated"):
        common.get_plane_cycle_details(OPENHANDS, "Sprint 1")
    with pytest.raises(common.ServiceFailure, match=r"gitlab: GET .*not emulated"):
        common.make_gitlab_request("root/openhands", "pipelines/schedules/none/variables")


def test_an_unreachable_service_is_a_service_failure_past_except_exception() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    common.set_service_addresses({f"{HOSTNAME}:{PORTS['plane']}": f"127.0.0.1:{port}"})
    try:
        # Upstream returns [] here, which "delete all projects" reads as done; upstream's evaluators and `grader`
        # catch Exception, which ServiceFailure is not.
        assert not issubclass(common.ServiceFailure, Exception)
        with pytest.raises(common.ServiceFailure, match="plane unreachable"):
            common.get_all_plane_projects()
    finally:
        common.set_service_addresses({})
