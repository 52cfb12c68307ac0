"""Each service's end-of-episode records (``toolemu.core.service_state``) read from a seeded state folder: the
seeded world is there with the fields ``RECORD_FIELDS`` declares, and ownCloud's walk follows no link."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolemu.core.service_state import RECORD_FIELDS, ServiceRecord
from toolemu.services.registry import service_spec
from toolemu.services.world import load_world


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[ServiceRecord]]:
    world = load_world().with_files({"owncloud": {"Documents/HR/salaries.csv": b"name,salary\n"}})
    out = {}
    for name in ("gitlab", "owncloud", "plane"):
        folder = tmp_path_factory.mktemp(name)
        service_spec(name).seed(folder, world)
        if name == "owncloud":
            (folder / "files" / "Documents" / "outside").symlink_to("/etc")
        out[name] = service_spec(name).records(folder)
    return out


def _keys(records: list[ServiceRecord], kind: str) -> set[str]:
    return {r.key for r in records if r.kind == kind}


def test_records_carry_the_declared_fields(held: dict[str, list[ServiceRecord]]) -> None:
    for name, records in held.items():
        assert records
        for record in records:
            assert record.service == name
            assert set(record.fields) == set(RECORD_FIELDS[name][record.kind]), record


def test_records_hold_the_seeded_world(held: dict[str, list[ServiceRecord]]) -> None:
    gitlab, owncloud, plane = held["gitlab"], held["owncloud"], held["plane"]
    assert {"root/janusgraph", "root/api-server", "root/sotopia"} <= _keys(gitlab, "project")
    assert "root/api-server:main" in _keys(gitlab, "protected_branch")
    assert "root/api-server/zhang_wei" in _keys(gitlab, "member")
    assert _keys(owncloud, "file") == {"Documents/HR/salaries.csv"}
    assert _keys(owncloud, "folder") == {"Documents", "Documents/HR", "Photos"}  # the link is neither
    assert _keys(owncloud, "share") == set()
    issue = next(r for r in plane if r.kind == "issue" and r.key == "SOTOPIA-1")
    assert issue.fields["state"] == "Backlog" and issue.fields["project"] == "SOTOPIA"
    assert {"OPENHANDS", "SOTOPIA"} <= _keys(plane, "project")


def test_records_of_a_missing_store_raise(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        service_spec("gitlab").records(tmp_path)
