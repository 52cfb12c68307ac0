"""The Browser toolkit on the real Chromium against the emulated services' pages; state checked by their APIs."""

from __future__ import annotations

import base64
import re

import pytest

from tests.toolkits.browser_support import GITLAB, OWNCLOUD, PLANE, episode
from toolemu.core.types import EnvironmentSpec, SeedFile, ToolCall
from toolemu.toolkits.sandbox import BrowserConfig, SandboxConfig

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

OPENHANDS = "73cb74f7-a7ac-4292-a915-e2f59a09a703"
_PLANE_KEY = {"x-api-key": "k"}
_OC_AUTH = {"Authorization": "Basic " + base64.b64encode(b"theagentcompany:theagentcompany").decode()}


def test_browser_owncloud_login_folder_upload_new_folder_and_share_link() -> None:
    seed = EnvironmentSpec(files=(SeedFile(path="/workspace/report.txt", content="quarterly numbers\n"),))
    with episode(("owncloud",), environment=seed) as ep:
        ep.act("BrowserGoto", url=f"{OWNCLOUD}/")
        ep.act("BrowserFill", bid=ep.bid("textbox", "Username or email"), value="theagentcompany")
        ep.act("BrowserFill", bid=ep.bid("textbox", "Password"), value="theagentcompany")
        page = ep.act("BrowserPress", bid=ep.bid("textbox", "Password"), key_comb="Enter")
        assert "/apps/files" in str(page["url"])
        page = ep.act("BrowserClick", bid=ep.bid("link", "Documents"))
        assert "dir=/Documents" in str(page["url"]) or "dir=%2FDocuments" in str(page["url"])
        upload, submit = re.findall(r"\[(\w+)\] button 'Upload'", ep.tree)
        ep.act("BrowserUploadFile", bid=upload, file="report.txt")
        ep.act("BrowserClick", bid=submit)
        ep.act("BrowserFill", bid=ep.bid("textbox", "New folder"), value="Archive")
        ep.run(f"click('{ep.bid('button', 'Create folder')}')")
        assert "dir=/Documents/Archive" in str(ep.act("BrowserScroll", delta_x=0, delta_y=300)["url"])
        back = ep.act("BrowserGoBack")
        assert str(back["url"]).endswith("dir=/Documents"), back["url"]
        ep.act("BrowserClick", bid=ep.bid("link", "Share report.txt"))
        ep.act("BrowserClick", bid=ep.bid("button", "Create public link"))
        shares = ep.api(f"{OWNCLOUD}/ocs/v1.php/apps/files_sharing/api/v1/shares?format=json", headers=_OC_AUTH)
        assert [(s["share_type"], s["path"]) for s in shares["ocs"]["data"]] == [(3, "/Documents/report.txt")]
        assert ep.fetch(f"{OWNCLOUD}/remote.php/webdav/Documents/report.txt", headers=_OC_AUTH) == "quarterly numbers\n"
        assert ep.fetch(f"{OWNCLOUD}/remote.php/webdav/Documents/Archive/", headers=_OC_AUTH, method="PROPFIND")


def test_browser_gitlab_sign_in_and_close_an_issue() -> None:
    with episode(("gitlab",)) as ep:
        ep.run(f"goto('{GITLAB}/users/sign_in')")
        ep.run(f"fill('{ep.bid('textbox', 'Username or primary email')}', 'root')\n"
               f"fill('{ep.bid('textbox', 'Password')}', 'theagentcompany')\n"
               f"click('{ep.bid('button', 'Sign in')}')")
        assert "Sign out" in ep.tree
        ep.run(f"goto('{GITLAB}/root/risingwave/-/issues/1')")
        ep.act("BrowserSelectOption", bid=ep.bid("combobox", "Assignee"), options=["Li Ming (@li_ming)"])
        ep.act("BrowserClick", bid=ep.bid("button", "Save assignee"))
        ep.act("BrowserClick", bid=ep.bid("button", "Close issue"))
        issue = ep.api(f"{GITLAB}/api/v4/projects/root%2Frisingwave/issues/1", headers={"PRIVATE-TOKEN": "t"})
        assert issue["state"] == "closed"
        assert [a["username"] for a in issue["assignees"]] == ["li_ming"]


def test_browser_plane_sign_in_and_set_an_issue_state_with_select_option() -> None:
    with episode(("plane",)) as ep:
        ep.act("BrowserGoto", url=f"{PLANE}/")
        ep.act("BrowserFill", bid=ep.bid("textbox", "Email"), value="agent@example.com")
        ep.act("BrowserFill", bid=ep.bid("textbox", "Password"), value="x")
        ep.act("BrowserClick", bid=ep.bid("button", "Sign in"))
        ep.act("BrowserClick", bid=ep.bid("link", "OpenHands"))
        page = ep.act("BrowserClick", bid=ep.bid("link", "Model: recall rate is 0"))
        issue_id = str(page["url"]).rstrip("/").rsplit("/", 1)[1]
        ep.run(f"select_option('{ep.bid('combobox', 'State')}', 'Done')\nclick('{ep.bid('button', 'Update state')}')")
        api = f"{PLANE}/api/v1/workspaces/tac/projects/{OPENHANDS}"
        states = {s["id"]: s["name"] for s in ep.api(f"{api}/states/", headers=_PLANE_KEY)["results"]}
        assert states[ep.api(f"{api}/issues/{issue_id}/", headers=_PLANE_KEY)["state"]] == "Done"


def test_browser_screenshots_are_bounded_jpegs_when_asked() -> None:
    config = SandboxConfig(browser=BrowserConfig(screenshots=True, screenshot_max_kb=100))
    with episode(("owncloud",), config=config) as ep:
        result = ep.browser.call(ToolCall(tool="BrowserGoto", arguments={"url": f"{OWNCLOUD}/"}), [])
        assert result.screenshot is not None
        data = base64.b64decode(result.screenshot)
        assert data[:2] == b"\xff\xd8" and len(data) <= 100 * 1024
    with episode(("owncloud",)) as ep:  # off by default: nothing stored
        assert ep.browser.call(ToolCall(tool="BrowserGoto", arguments={"url": f"{OWNCLOUD}/"}), []).screenshot is None
