"""ownCloud's emulation over a real HTTP server (cheroot on loopback), driven by real clients: requests and curl."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from tests.services.wsgi_server import serve
from toolemu.services.base import GapLog
from toolemu.services.owncloud import SPEC
from toolemu.services.owncloud.dav import sabre_quote

pytestmark = pytest.mark.enable_socket

AUTH = ("theagentcompany", "theagentcompany")
ATTENDANCE = "Documents/Human Resources Team/Attendance/april-attendance-data.csv"
WORLD = SimpleNamespace(files={"owncloud": {ATTENDANCE: b"Name, Date\nLi Ming, 2024-04-01\n",
                                             "Documents/Financials/budget (2024).xlsx": b"PK\x03\x04"}})
DAV = "/remote.php/webdav"


@pytest.fixture
def owncloud(tmp_path: Path) -> Iterator[tuple[str, GapLog]]:
    with serve(SPEC, tmp_path / "state", WORLD) as served:
        yield served


def _hrefs(text: str) -> list[str]:
    return [e.text or "" for e in ET.fromstring(text).iter("{DAV:}href")]


def _propfind(base: str, path: str, depth: str = "1", **kwargs: object) -> requests.Response:
    return requests.request("PROPFIND", f"{base}{DAV}/{path}", headers={"Depth": depth}, auth=AUTH, timeout=10,
                            **kwargs)  # type: ignore[arg-type]


def test_owncloud_propfind_lists_seeded_files_as_owncloud_writes_hrefs(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    answer = _propfind(base, "Documents/Human Resources Team/Attendance")
    assert answer.status_code == 207
    assert _hrefs(answer.text) == [f"{DAV}/Documents/Human%20Resources%20Team/Attendance/",
                                   f"{DAV}/Documents/Human%20Resources%20Team/Attendance/april-attendance-data.csv"]
    assert "<d:multistatus" in answer.text  # ownCloud's prefix: agents grep for <d:href>
    depth0 = _propfind(base, "Documents/Financials", depth="0")
    assert _hrefs(depth0.text) == [f"{DAV}/Documents/Financials/"]
    listed = _hrefs(_propfind(base, "Documents/Financials").text)
    assert f"{DAV}/Documents/Financials/budget%20(2024).xlsx" in listed


def test_owncloud_sabre_quote_keeps_what_sabre_keeps() -> None:
    assert sabre_quote("/a b/c:d@e(f)~g!h,i") == "/a%20b/c:d@e(f)~g%21h%2ci"


def test_owncloud_get_put_mkcol_delete_move_copy_with_curl(owncloud: tuple[str, GapLog], tmp_path: Path) -> None:
    base, gaps = owncloud
    curl = shutil.which("curl")
    assert curl is not None
    upload = tmp_path / "report.txt"
    upload.write_text("quarterly numbers\n")

    def run(*args: str) -> str:
        done = subprocess.run([curl, "-s", "-u", "theagentcompany:theagentcompany", "-o", "/dev/null",
                               "-w", "%{http_code}", *args], capture_output=True, text=True, timeout=20, check=True)
        return done.stdout

    assert run("-X", "MKCOL", f"{base}{DAV}/Documents/Reports") == "201"
    assert run("-X", "MKCOL", f"{base}{DAV}/Documents/Reports") == "405"
    assert run("-X", "MKCOL", f"{base}{DAV}/Documents/No/Such") == "409"
    assert run("-T", str(upload), f"{base}/remote.php/dav/files/theagentcompany/Documents/Reports/q1.txt") == "201"
    assert run("-T", str(upload), f"{base}{DAV}/Documents/Missing/q1.txt") == "409"
    got = requests.get(f"{base}{DAV}/Documents/Reports/q1.txt", auth=AUTH, timeout=10)
    assert got.status_code == 200 and got.content == b"quarterly numbers\n"
    assert run("-X", "COPY", "-H", f"Destination: {base}{DAV}/Documents/q1-copy.txt",
               f"{base}{DAV}/Documents/Reports/q1.txt") == "201"
    assert run("-X", "MOVE", "-H", f"Destination: {base}{DAV}/Documents/q1-moved.txt",
               f"{base}{DAV}/Documents/Reports/q1.txt") == "201"
    assert run("-X", "DELETE", f"{base}{DAV}/Documents/q1-copy.txt") == "204"
    names = [h.rsplit("/", 1)[-1] for h in _hrefs(_propfind(base, "Documents").text)]
    assert "q1-moved.txt" in names and "q1-copy.txt" not in names
    assert requests.get(f"{base}{DAV}/Documents", auth=AUTH, timeout=10).status_code == 501  # a folder
    assert gaps.snapshot() == ()


def test_owncloud_put_answers_owncloud_headers_and_any_credentials(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    put = requests.put(f"{base}{DAV}/Documents/a.txt", data=b"x", auth=("someone", "anything"), timeout=10,
                       headers={"X-OC-MTime": "1700000000"})
    assert put.status_code == 201 and put.content == b""
    assert put.headers["OC-FileId"].endswith("oc4ab2c9d8e1f0") and put.headers["X-OC-MTime"] == "accepted"
    assert "1700000000" not in put.text
    props = _propfind(base, "Documents/a.txt", depth="0", data=(
        '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>'
        "<oc:fileid/><oc:permissions/><d:getlastmodified/></d:prop></d:propfind>"))
    assert props.status_code == 207 and "<oc:permissions>RDNVW</oc:permissions>" in props.text
    assert "Tue, 14 Nov 2023 22:13:20 GMT" in props.text  # X-OC-MTime honoured


def test_owncloud_without_credentials_is_401(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    answer = requests.request("PROPFIND", f"{base}{DAV}/", timeout=10)
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"].startswith("Basic")
    assert "NotAuthenticated" in answer.text
    ocs = requests.get(f"{base}/ocs/v1.php/apps/files_sharing/api/v1/shares", timeout=10)
    assert ocs.status_code == 401 and "<statuscode>997</statuscode>" in ocs.text


def test_owncloud_missing_file_is_sabre_404_not_a_gap(owncloud: tuple[str, GapLog]) -> None:
    base, gaps = owncloud
    answer = _propfind(base, "Documents/none.txt")
    assert answer.status_code == 404 and "Sabre\\DAV\\Exception\\NotFound" in answer.text
    assert requests.get(f"{base}{DAV}/Documents/none.txt", auth=AUTH, timeout=10).status_code == 404
    assert gaps.snapshot() == ()


def test_owncloud_public_link_share_page_and_download(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    created = requests.post(f"{base}/ocs/v1.php/apps/files_sharing/api/v1/shares", auth=AUTH, timeout=10,
                            data={"path": f"/{ATTENDANCE}", "shareType": "3", "permissions": "1"})
    assert created.status_code == 200
    data = ET.fromstring(created.text)
    assert data.findtext("meta/statuscode") == "100" and data.findtext("data/share_type") == "3"
    url = data.findtext("data/url") or ""
    token = url.rsplit("/", 1)[-1]
    assert re.fullmatch(rf"{re.escape(base)}/index\.php/s/[A-Za-z0-9]{{15}}", url), url
    page = requests.get(url, timeout=10)
    assert page.status_code == 200 and "april-attendance-data.csv" in page.text
    download = requests.get(f"{url}/download", timeout=10)
    assert download.content == WORLD.files["owncloud"][ATTENDANCE]
    listed = requests.get(f"{base}/ocs/v2.php/apps/files_sharing/api/v1/shares", auth=AUTH, timeout=10,
                          params={"format": "json", "path": f"/{ATTENDANCE}"}).json()
    assert listed["ocs"]["meta"]["statuscode"] == 200 and listed["ocs"]["data"][0]["token"] == token
    share_id = listed["ocs"]["data"][0]["id"]
    deleted = requests.delete(f"{base}/ocs/v2.php/apps/files_sharing/api/v1/shares/{share_id}", auth=AUTH,
                              timeout=10)
    assert deleted.status_code == 200
    assert requests.get(url, timeout=10).status_code == 404


def test_owncloud_share_errors_use_ocs_codes(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    v1 = requests.post(f"{base}/ocs/v1.php/apps/files_sharing/api/v1/shares", auth=AUTH, timeout=10,
                       data={"path": "/Documents/none.txt", "shareType": "3"})
    assert v1.status_code == 200 and "<statuscode>404</statuscode>" in v1.text  # v1: HTTP 200, OCS 404
    v2 = requests.post(f"{base}/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json", auth=AUTH, timeout=10,
                       data={"path": f"/{ATTENDANCE}", "shareType": "9"})
    assert v2.status_code == 400 and v2.json()["ocs"]["meta"]["message"] == "Unknown share type"


def test_owncloud_password_link_needs_the_password(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    created = requests.post(f"{base}/ocs/v1.php/apps/files_sharing/api/v1/shares?format=json", auth=AUTH,
                            timeout=10, data={"path": "/Documents/Financials", "shareType": "3", "password": "s3"})
    url = created.json()["ocs"]["data"]["url"]
    assert 'name="password"' in requests.get(url, timeout=10).text
    assert requests.get(f"{url}/download", timeout=10, allow_redirects=False).status_code == 303
    session = requests.Session()
    assert session.post(f"{url}/authenticate", data={"password": "wrong"}, timeout=10).status_code == 403
    assert session.post(f"{url}/authenticate", data={"password": "s3"}, timeout=10).status_code == 200
    archive = session.get(f"{url}/download", timeout=10)
    assert archive.headers["Content-Type"] == "application/zip" and archive.content[:2] == b"PK"


def test_owncloud_share_follows_a_moved_file(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    created = requests.post(f"{base}/ocs/v1.php/apps/files_sharing/api/v1/shares?format=json", auth=AUTH,
                            timeout=10, data={"path": f"/{ATTENDANCE}", "shareType": "3"})
    url = created.json()["ocs"]["data"]["url"]
    moved = requests.request("MOVE", f"{base}{DAV}/{ATTENDANCE}", auth=AUTH, timeout=10,
                             headers={"Destination": f"{base}{DAV}/Documents/moved.csv"})
    assert moved.status_code == 201
    assert requests.get(f"{url}/download", timeout=10).content.startswith(b"Name, Date")


def test_owncloud_status_capabilities_and_user(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    status = requests.get(f"{base}/status.php", timeout=10).json()
    assert status["installed"] is True and status["productname"] == "ownCloud"
    caps = requests.get(f"{base}/ocs/v1.php/cloud/capabilities?format=json", auth=AUTH, timeout=10).json()
    assert caps["ocs"]["data"]["capabilities"]["core"]["webdav-root"] == "remote.php/webdav"
    user = requests.get(f"{base}/ocs/v2.php/cloud/user?format=json", auth=("li_ming", "x"), timeout=10).json()
    assert user["ocs"]["data"]["id"] == "li_ming"


def test_owncloud_unknown_endpoints_are_gaps(owncloud: tuple[str, GapLog]) -> None:
    base, gaps = owncloud
    users = requests.get(f"{base}/ocs/v1.php/cloud/users", auth=AUTH, timeout=10)
    assert users.status_code == 404 and users.headers["X-Toolemu-Gap"] == "1"
    ui = requests.get(f"{base}/index.php/settings/personal", auth=AUTH, timeout=10)
    assert ui.status_code == 501
    report = requests.request("REPORT", f"{base}{DAV}/Documents", auth=AUTH, timeout=10)
    assert report.status_code == 501
    assert requests.get(f"{base}/no/such/thing", timeout=10).status_code == 404
    seen = [(g.method, g.path) for g in gaps.snapshot()]
    assert seen == [("GET", "/ocs/v1.php/cloud/users"), ("GET", "/index.php/settings/personal"),
                    ("REPORT", f"{DAV}/Documents"), ("GET", "/no/such/thing")]
    assert all(g.service == "owncloud" and g.reason for g in gaps.snapshot())


def test_owncloud_paths_stay_inside_the_drive(owncloud: tuple[str, GapLog], tmp_path: Path) -> None:
    base, _ = owncloud
    (tmp_path / "state" / "secret.txt").write_text("outside the drive")
    for path in ("%2e%2e/secret.txt", "..%2fsecret.txt", "Documents/%2e%2e/%2e%2e/secret.txt"):
        answer = requests.get(f"{base}{DAV}/{path}", auth=AUTH, timeout=10)
        assert answer.status_code in (403, 404) and b"outside the drive" not in answer.content, path
    put = requests.put(f"{base}{DAV}/%2e%2e/shares.json", data=b"[]", auth=AUTH, timeout=10)
    assert put.status_code in (403, 404, 409)
    assert not (tmp_path / "state" / "shares.json").exists() or (tmp_path / "state" / "shares.json").read_text() != "[]"


def test_owncloud_seed_refuses_paths_out_of_the_drive(tmp_path: Path) -> None:
    bad = SimpleNamespace(files={"owncloud": {"../escape.txt": b"x"}})
    with pytest.raises(ValueError, match=re.escape("ownCloud seed path '../escape.txt' must be relative")):
        SPEC.seed(tmp_path, bad)
