"""ownCloud's web pages over a real HTTP server, driven by a ``requests`` session as a browser would: what a page
does, WebDAV and OCS see."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from tests.services.wsgi_server import serve
from toolemu.services.base import GapLog
from toolemu.services.owncloud import SPEC

pytestmark = pytest.mark.enable_socket

AUTH = ("theagentcompany", "theagentcompany")
HOSTILE = '<img src=x onerror=alert(1)>&"q\'.txt'
WORLD = SimpleNamespace(files={"owncloud": {
    "Documents/Human Resources Team/salaries.csv": b"name,salary\nLi Ming,100\n",
    f"Documents/{HOSTILE}": b"boo",
}})
FILES = "/index.php/apps/files/"


@pytest.fixture
def owncloud(tmp_path: Path) -> Iterator[tuple[str, GapLog]]:
    with serve(SPEC, tmp_path / "state", WORLD) as served:
        yield served


def _login(base: str) -> requests.Session:
    browser = requests.Session()
    page = browser.get(f"{base}/", timeout=10)
    assert page.url.endswith("/index.php/login") and 'name="user"' in page.text
    done = browser.post(f"{base}/index.php/login", data={"user": "theagentcompany", "password": "anything",
                                                          "redirect_url": ""}, timeout=10)
    assert done.status_code == 200 and 'id="fileList"' in done.text
    return browser


def _token(page: str) -> str:
    found = re.search(r'name="requesttoken" value="([0-9a-f]+)"', page)
    assert found is not None
    return found.group(1)


def _hrefs(text: str) -> list[str]:
    return [e.text or "" for e in ET.fromstring(text).iter("{DAV:}href")]


def test_owncloud_web_needs_a_session_and_login_returns_to_the_page(owncloud: tuple[str, GapLog]) -> None:
    base, gaps = owncloud
    browser = requests.Session()
    page = browser.get(f"{base}{FILES}?dir=/Documents", timeout=10)
    assert "/index.php/login?redirect_url=" in page.url and 'id="loginForm"' in page.text
    back = re.search(r'name="redirect_url" value="([^"]*)"', page.text)
    assert back is not None and html.unescape(back.group(1)) == "/index.php/apps/files/?dir=/Documents"
    landed = browser.post(f"{base}/index.php/login", data={"user": "li_ming", "password": "x",
                                                            "redirect_url": html.unescape(back.group(1))}, timeout=10)
    assert landed.url.endswith("?dir=/Documents") and 'data-file="Human Resources Team"' in landed.text
    assert "li_ming" in landed.text
    outside = browser.post(f"{base}/index.php/login", data={"user": "a", "redirect_url": "//evil.example/"},
                           allow_redirects=False, timeout=10)
    assert outside.headers["Location"] == "/index.php/apps/files/?dir=/"
    crlf = "/index.php/x\r\nSet-Cookie: y=1"
    injected = browser.post(f"{base}/index.php/login", data={"user": "a", "redirect_url": crlf},
                            allow_redirects=False, timeout=10)
    assert injected.headers["Location"] == "/index.php/apps/files/?dir=/" and "y" not in injected.cookies
    browser.get(f"{base}/index.php/logout", timeout=10)
    assert "/index.php/login" in browser.get(f"{base}{FILES}", timeout=10).url
    assert requests.get(f"{base}{FILES}?dir=/Documents", auth=AUTH, timeout=10).status_code == 200  # Basic works
    assert gaps.snapshot() == ()


def test_owncloud_web_lists_folders_links_subfolders_and_downloads(owncloud: tuple[str, GapLog]) -> None:
    base, gaps = owncloud
    browser = _login(base)
    root = browser.get(f"{base}{FILES}?dir=/", timeout=10).text
    assert 'data-file="Documents" data-type="dir"' in root and 'data-file="Photos"' in root
    docs = browser.get(f"{base}{FILES}?dir=/Documents", timeout=10).text
    link = re.search(r'<a class="name" href="([^"]+)">Human Resources Team</a>', docs)
    assert link is not None
    team = browser.get(base + html.unescape(link.group(1)), timeout=10)
    assert team.status_code == 200 and 'data-file="salaries.csv" data-type="file"' in team.text
    download = re.search(r'aria-label="Download salaries.csv" href="([^"]+)"', team.text)
    assert download is not None
    got = browser.get(base + html.unescape(download.group(1)), timeout=10)
    assert got.content == b"name,salary\nLi Ming,100\n" and "attachment" in got.headers["Content-Disposition"]
    zipped = browser.get(f"{base}{FILES}ajax/download.php?dir=/Documents&files=Human%20Resources%20Team", timeout=10)
    assert zipped.headers["Content-Type"] == "application/zip" and zipped.content[:2] == b"PK"
    assert browser.get(f"{base}{FILES}?dir=/Documents/Nope", timeout=10).status_code == 404
    assert browser.get(f"{base}{FILES}?dir=/Documents/../..", timeout=10).status_code == 404
    missing = browser.get(f"{base}{FILES}ajax/download.php?dir=/&files=../shares.json", timeout=10)
    assert missing.status_code == 404
    assert gaps.snapshot() == ()


def test_owncloud_web_upload_and_new_folder_are_seen_by_webdav(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    browser = _login(base)
    page = browser.get(f"{base}{FILES}?dir=/Documents", timeout=10).text
    token = _token(page)
    data = b"line 1\r\nline 2\x00\xff\r\n"
    done = browser.post(f"{base}{FILES}ajax/upload.php", data={"dir": "/Documents", "requesttoken": token},
                        files=[("files[]", ("report q1.bin", data)), ("files[]", ("notes.txt", b"hi"))], timeout=10)
    assert done.status_code == 200 and 'data-file="report q1.bin"' in done.text
    got = requests.get(f"{base}/remote.php/webdav/Documents/report%20q1.bin", auth=AUTH, timeout=10)
    assert got.content == data
    listing = requests.request("PROPFIND", f"{base}/remote.php/webdav/Documents", headers={"Depth": "1"},
                               auth=AUTH, timeout=10)
    assert "/remote.php/webdav/Documents/notes.txt" in _hrefs(listing.text)
    made = browser.post(f"{base}{FILES}ajax/newfolder.php", data={"dir": "/Documents", "foldername": "Q1 Reports",
                                                                  "requesttoken": token}, timeout=10)
    assert made.status_code == 200 and made.url.endswith("?dir=/Documents/Q1%20Reports")
    assert 'id="emptycontent"' in made.text
    listing = requests.request("PROPFIND", f"{base}/remote.php/webdav/Documents", headers={"Depth": "1"},
                               auth=AUTH, timeout=10)
    assert "/remote.php/webdav/Documents/Q1%20Reports/" in _hrefs(listing.text)
    again = browser.post(f"{base}{FILES}ajax/newfolder.php", data={"dir": "/Documents", "foldername": "Q1 Reports",
                                                                   "requesttoken": token}, timeout=10)
    assert again.status_code == 409 and 'id="error"' in again.text
    for bad in ("..", "", "."):
        refused = browser.post(f"{base}{FILES}ajax/newfolder.php", data={"dir": "/", "foldername": bad,
                                                                         "requesttoken": token}, timeout=10)
        assert refused.status_code == 400, bad
    climbed = browser.post(f"{base}{FILES}ajax/upload.php", data={"dir": "/", "requesttoken": token},
                           files=[("files[]", ("../../escape.txt", b"x"))], timeout=10)
    assert climbed.status_code == 200 and 'data-file="escape.txt"' in climbed.text  # its last name, at the root
    forged = browser.post(f"{base}{FILES}ajax/newfolder.php", data={"dir": "/", "foldername": "x",
                                                                    "requesttoken": "0" * 64}, timeout=10)
    assert forged.status_code == 403
    assert requests.request("PROPFIND", f"{base}/remote.php/webdav/x", auth=AUTH, timeout=10).status_code == 404


def test_owncloud_web_share_dialog_makes_a_public_link_the_api_sees(owncloud: tuple[str, GapLog]) -> None:
    base, gaps = owncloud
    browser = _login(base)
    team = browser.get(f"{base}{FILES}?dir=/Documents/Human%20Resources%20Team", timeout=10).text
    share = re.search(r'aria-label="Share salaries.csv" href="([^"]+)"', team)
    assert share is not None
    dialog = browser.get(base + html.unescape(share.group(1)), timeout=10)
    assert dialog.status_code == 200 and 'id="createLinkForm"' in dialog.text
    assert 'class="publicLink"' not in dialog.text
    made = browser.post(f"{base}{FILES}share", data={"path": "/Documents/Human Resources Team/salaries.csv",
                                                     "password": "", "expireDate": "",
                                                     "requesttoken": _token(dialog.text)}, timeout=10)
    assert made.status_code == 201
    url = re.search(r'id="shareLinkUrl" readonly value="([^"]+)"', made.text)
    assert url is not None and re.fullmatch(r".*/index\.php/s/[A-Za-z0-9]{15}", url.group(1))
    api = requests.get(f"{base}/ocs/v1.php/apps/files_sharing/api/v1/shares?format=json", auth=AUTH, timeout=10)
    shares = api.json()["ocs"]["data"]
    assert [(s["share_type"], s["path"], s["url"]) for s in shares] == [
        (3, "/Documents/Human Resources Team/salaries.csv", url.group(1))]
    public = requests.get(url.group(1), timeout=10)
    assert public.status_code == 200 and "salaries.csv" in public.text
    fetched = requests.get(url.group(1) + "/download", timeout=10)
    assert fetched.content == b"name,salary\nLi Ming,100\n"
    bad_date = browser.post(f"{base}{FILES}share", data={"path": "/Documents", "expireDate": "soon",
                                                         "requesttoken": _token(dialog.text)}, timeout=10)
    assert bad_date.status_code == 400 and "Invalid date" in bad_date.text
    assert browser.get(f"{base}{FILES}share?path=/No/Such", timeout=10).status_code == 404
    assert gaps.snapshot() == ()


def test_owncloud_web_escapes_hostile_file_names(owncloud: tuple[str, GapLog]) -> None:
    base, _ = owncloud
    browser = _login(base)
    page = browser.get(f"{base}{FILES}?dir=/Documents", timeout=10).text
    assert "<img" not in page and html.escape(HOSTILE) in page
    row = page.split(f'data-file="{html.escape(HOSTILE)}"')[1]
    link = re.search(r'class="download" aria-label="Download [^"]*" href="([^"]+)"', row)
    assert link is not None
    assert browser.get(base + html.unescape(link.group(1)), timeout=10).content == b"boo"
    dialog = browser.get(f"{base}{FILES}share", params={"path": f"/Documents/{HOSTILE}"}, timeout=10).text
    assert "<img" not in dialog and html.escape(HOSTILE) in dialog
    hostile_user = browser.post(f"{base}/index.php/login", data={"user": "<script>x</script>"}, timeout=10).text
    assert "<script>" not in hostile_user


def test_owncloud_web_unknown_pages_stay_gaps(owncloud: tuple[str, GapLog]) -> None:
    base, gaps = owncloud
    browser = _login(base)
    assert browser.get(f"{base}/index.php/apps/files/trashbin", timeout=10).status_code == 501
    assert [g.path for g in gaps.snapshot()] == ["/index.php/apps/files/trashbin"]


def test_owncloud_web_browser_favicon_request_is_no_gap(owncloud: tuple[str, GapLog]) -> None:
    """Chromium asks every site for /favicon.ico on its own: not an emulator gap, and never answered as success."""
    base, gaps = owncloud
    assert requests.get(f"{base}/favicon.ico", timeout=10).status_code >= 400
    assert requests.get(f"{base}/index.php/apps/files/trashbin", timeout=10).status_code >= 400
    assert [g.path for g in gaps.snapshot()] == ["/index.php/apps/files/trashbin"]
