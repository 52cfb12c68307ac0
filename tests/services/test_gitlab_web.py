"""The GitLab emulator's web pages over a real threaded server: a signed-in browser session's forms, checked
through the REST API (the evaluators' view of the same store)."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

import pytest
import requests

from tests.services.gitlab_server import TOKEN, Served, gitlab, gitlab_seed

pytestmark = pytest.mark.enable_socket
__all__ = ["gitlab", "gitlab_seed"]


def _api(gl: Served, route: str, **params: object) -> Any:
    return requests.get(f"{gl.api}/{route}", headers=TOKEN, params=params, timeout=10)


def _proj(name: str) -> str:
    return "projects/" + urllib.parse.quote(f"root/{name}", safe="")


_TOKEN = re.compile(r'name="authenticity_token" value="([0-9a-f]+)"')


class Browser(requests.Session):
    """A signed-in session that sends the page's ``authenticity_token`` with every form, as a browser would."""

    token = ""

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        if str(method).upper() == "POST" and self.token:
            kwargs["data"] = {**(kwargs.get("data") or {}), "authenticity_token": self.token}
        return super().request(method, url, *args, **kwargs)


def _browser(gl: Served) -> Browser:
    session = Browser()
    reply = session.post(f"{gl.url}/users/sign_in", data={"user[login]": "root", "user[password]": "pw",
                                                          "redirect_to": "/"}, timeout=10)
    assert reply.status_code == 200 and reply.history[0].status_code == 302
    tokens = set(_TOKEN.findall(reply.text))
    assert len(tokens) == 1  # every form of the page carries the session's one token
    session.token = tokens.pop()
    return session


def test_gitlab_web_sign_in_dashboard_and_sign_out(gitlab: Served) -> None:
    anon = requests.Session()
    first = anon.get(f"{gitlab.url}/", timeout=10)
    assert first.url.endswith("/users/sign_in?redirect_to=%2F") and 'id="user_login"' in first.text
    refused = anon.post(f"{gitlab.url}/users/sign_in", data={"user[login]": "root", "user[password]": ""}, timeout=10)
    assert refused.status_code == 401 and "Invalid login or password." in refused.text
    offsite = anon.post(f"{gitlab.url}/users/sign_in", data={"user[login]": "a", "user[password]": "b",
                                                             "redirect_to": "//evil.example/x"},
                        allow_redirects=False, timeout=10)
    assert offsite.headers["Location"] == "/" and "_gitlab_session" in offsite.cookies
    browser = _browser(gitlab)
    board = browser.get(f"{gitlab.url}/dashboard/projects", timeout=10)
    assert board.status_code == 200 and board.text.count('<tr id="project-') == 14
    assert ">Documentation</a>" in board.text and 'id="current-user">root<' in board.text
    filtered = browser.get(f"{gitlab.url}/dashboard/projects", params={"name": "sotop"}, timeout=10)
    assert filtered.text.count('<tr id="project-') == 1
    browser.post(f"{gitlab.url}/users/sign_out", timeout=10)
    assert browser.get(f"{gitlab.url}/", timeout=10).url.endswith("/users/sign_in?redirect_to=%2F")
    forged = requests.get(f"{gitlab.url}/", cookies={"_gitlab_session": "guess"}, timeout=10)
    assert "/users/sign_in" in forged.url
    assert not gitlab.gaps.snapshot()


def test_gitlab_web_project_readme_tree_and_blob(gitlab: Served) -> None:
    browser = _browser(gitlab)
    home = browser.get(f"{gitlab.url}/root/sotopia", timeout=10)
    readme = requests.get(f"{gitlab.api}/{_proj('sotopia')}/repository/files/README.md/raw", headers=TOKEN,
                          params={"ref": "main"}, timeout=10).text
    assert home.status_code == 200 and 'id="readme"' in home.text
    assert readme.splitlines()[0].replace("&", "&amp;") in home.text
    tree = browser.get(f"{gitlab.url}/root/risingwave/-/tree", timeout=10)
    assert tree.url.endswith("/root/risingwave/-/tree/main") and "/-/tree/main/src" in tree.text
    sub = browser.get(f"{gitlab.url}/root/risingwave/-/tree/main/src", timeout=10)
    listed = {e["name"] for e in _api(gitlab, f"{_proj('risingwave')}/repository/tree", path="src").json()}
    assert sub.status_code == 200 and all(f">{name}" in sub.text for name in listed)
    blob = browser.get(f"{gitlab.url}/root/openhands/-/blob/main/pyproject.toml", timeout=10)
    assert blob.status_code == 200 and "tree-sitter = &quot;0.23.2&quot;" in blob.text
    assert 'href="/root/openhands/-/raw/main/pyproject.toml"' in blob.text
    missing = browser.get(f"{gitlab.url}/root/openhands/-/blob/main/NOPE.md", timeout=10)
    nobody = browser.get(f"{gitlab.url}/root/nonexistent", timeout=10)
    assert missing.status_code == 404 and nobody.status_code == 404
    assert not gitlab.gaps.snapshot()  # real "not found", not gaps


def test_gitlab_web_anonymous_sees_public_only_and_cannot_post(gitlab: Served) -> None:
    requests.put(f"{gitlab.api}/{_proj('raft')}", headers=TOKEN, data={"visibility": "private"}, timeout=10)
    public = requests.get(f"{gitlab.url}/root/risingwave", timeout=10)
    assert public.status_code == 200 and 'id="sign-in-link"' in public.text
    private = requests.get(f"{gitlab.url}/root/raft", timeout=10)
    assert "/users/sign_in?redirect_to=%2Froot%2Fraft" in private.url
    post = requests.post(f"{gitlab.url}/root/risingwave/-/issues/1", data={"_method": "put", "state_event": "close"},
                         timeout=10)
    assert "/users/sign_in" in post.url
    assert _api(gitlab, f"{_proj('risingwave')}/issues/1").json()["state"] == "opened"


def test_gitlab_web_issue_close_reopen_assign_milestone_comment(gitlab: Served) -> None:
    browser = _browser(gitlab)
    issue_url = f"{gitlab.url}/root/risingwave/-/issues/1"
    api_issue = f"{_proj('risingwave')}/issues/1"
    listing = browser.get(f"{gitlab.url}/root/risingwave/-/issues", timeout=10)
    assert 'data-iid="1"' in listing.text and 'data-iid="3"' not in listing.text  # #3 is closed
    page = browser.get(issue_url, timeout=10)
    assert 'id="close-button"' in page.text and 'id="assignee-select"' in page.text
    browser.post(issue_url, data={"_method": "put", "state_event": "close"}, timeout=10)
    assert _api(gitlab, api_issue).json()["state"] == "closed"
    assert 'id="reopen-button"' in browser.get(issue_url, timeout=10).text
    browser.post(issue_url, data={"_method": "put", "state_event": "reopen"}, timeout=10)
    assert _api(gitlab, api_issue).json()["state"] == "opened"
    li_ming = _api(gitlab, "users", username="li_ming").json()[0]["id"]
    browser.post(issue_url, data={"_method": "put", "assignee_id": str(li_ming)}, timeout=10)
    assert [a["username"] for a in _api(gitlab, api_issue).json()["assignees"]] == ["li_ming"]
    browser.post(issue_url, data={"_method": "put", "assignee_id": "0"}, timeout=10)
    assert _api(gitlab, api_issue).json()["assignees"] == []
    browser.post(issue_url, data={"_method": "put", "milestone_id": ""}, timeout=10)
    assert _api(gitlab, api_issue).json()["milestone"] is None
    release = next(m for m in _api(gitlab, f"{_proj('risingwave')}/milestones").json() if m["title"] == "release-1.9")
    done = browser.post(issue_url, data={"_method": "put", "milestone_id": str(release["id"])}, timeout=10)
    assert _api(gitlab, api_issue).json()["milestone"]["title"] == "release-1.9"
    assert 'id="milestone">release-1.9<' in done.text
    browser.post(f"{issue_url}/notes", data={"body": "Looked into it <b>now</b>"}, timeout=10)
    bodies = [n["body"] for n in _api(gitlab, f"{api_issue}/notes").json()]
    assert "Looked into it <b>now</b>" in bodies
    assert "Looked into it &lt;b&gt;now&lt;/b&gt;" in browser.get(issue_url, timeout=10).text
    assert not gitlab.gaps.snapshot()


def test_gitlab_web_forms_without_the_session_token_are_refused(gitlab: Served) -> None:
    browser = _browser(gitlab)
    issue_url = f"{gitlab.url}/root/risingwave/-/issues/1"
    form = browser.get(issue_url, timeout=10).text
    assert f'name="authenticity_token" value="{browser.token}"' in form
    cookies = browser.cookies
    for token in (None, "0" * 32):
        data = {"_method": "put", "state_event": "close", **({"authenticity_token": token} if token else {})}
        forged = requests.post(issue_url, data=data, cookies=cookies, timeout=10)
        assert forged.status_code == 422 and "CSRF" in forged.text
    assert _api(gitlab, f"{_proj('risingwave')}/issues/1").json()["state"] == "opened"
    other = _browser(gitlab)  # another session's token is not this one's
    crossed = requests.post(issue_url, data={"_method": "put", "state_event": "close",
                                             "authenticity_token": other.token}, cookies=cookies, timeout=10)
    assert crossed.status_code == 422
    browser.post(issue_url, data={"_method": "put", "state_event": "close"}, timeout=10)
    assert _api(gitlab, f"{_proj('risingwave')}/issues/1").json()["state"] == "closed"


def test_gitlab_web_new_issue_and_untrusted_text_is_escaped(gitlab: Served) -> None:
    browser = _browser(gitlab)
    assert 'id="issue_title"' in browser.get(f"{gitlab.url}/root/sotopia/-/issues/new", timeout=10).text
    evil = '<script>alert("x")</script>'
    made = browser.post(f"{gitlab.url}/root/sotopia/-/issues", data={"title": evil, "description": "d",
                                                                     "labels": "bug"}, timeout=10)
    created = _api(gitlab, f"{_proj('sotopia')}/issues", search="alert").json()[0]
    assert created["title"] == evil and created["labels"] == ["bug"]
    assert made.url.endswith(f"/root/sotopia/-/issues/{created['iid']}")
    assert evil not in made.text and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in made.text
    untitled = browser.post(f"{gitlab.url}/root/sotopia/-/issues", data={"title": ""}, timeout=10)
    assert untitled.status_code == 400 and "title is missing" in untitled.text


def test_gitlab_web_merge_request_list_detail_close(gitlab: Served) -> None:
    browser = _browser(gitlab)
    listing = browser.get(f"{gitlab.url}/root/risingwave/-/merge_requests", timeout=10)
    assert "Flush by size or age" in listing.text
    mr_url = f"{gitlab.url}/root/risingwave/-/merge_requests/1"
    detail = browser.get(mr_url, timeout=10)
    assert 'id="source-branch">perf/flush-batching<' in detail.text and 'id="merge-button"' in detail.text
    browser.post(mr_url, data={"_method": "put", "state_event": "close"}, timeout=10)
    assert _api(gitlab, f"{_proj('risingwave')}/merge_requests/1").json()["state"] == "closed"
    closed = browser.get(f"{gitlab.url}/root/risingwave/-/merge_requests", params={"state": "closed"}, timeout=10)
    assert 'data-iid="1"' in closed.text
    browser.post(mr_url, data={"_method": "put", "state_event": "reopen"}, timeout=10)
    merged = browser.post(f"{mr_url}/merge", timeout=10)
    view = _api(gitlab, f"{_proj('risingwave')}/merge_requests/1").json()
    assert view["state"] == "merged" and 'id="merge_request-state">merged<' in merged.text
    main = _api(gitlab, f"{_proj('risingwave')}/repository/commits/main").json()
    assert main["id"] == view["merge_commit_sha"] and len(main["parent_ids"]) == 2


def test_gitlab_web_settings_visibility_archive_delete(gitlab: Served) -> None:
    browser = _browser(gitlab)
    edit = browser.get(f"{gitlab.url}/root/sotopia/edit", timeout=10)
    assert 'id="project-visibility-select"' in edit.text and 'id="archive-project"' in edit.text
    browser.post(f"{gitlab.url}/root/sotopia", data={"_method": "put", "visibility": "private"}, timeout=10)
    assert _api(gitlab, _proj("sotopia")).json()["visibility"] == "private"
    browser.post(f"{gitlab.url}/root/sotopia/archive", timeout=10)
    assert _api(gitlab, _proj("sotopia")).json()["archived"] is True
    refused = browser.post(f"{gitlab.url}/root/sotopia/-/issues", data={"title": "t"}, timeout=10)
    assert refused.status_code == 403  # the API's rule: an archived project is read-only
    assert 'id="unarchive-project"' in browser.get(f"{gitlab.url}/root/sotopia/edit", timeout=10).text
    browser.post(f"{gitlab.url}/root/sotopia/unarchive", timeout=10)
    assert _api(gitlab, _proj("sotopia")).json()["archived"] is False
    unconfirmed = browser.post(f"{gitlab.url}/root/sotopia", data={"_method": "delete", "confirm_name": "sotopia"},
                               timeout=10)
    assert unconfirmed.status_code == 422 and _api(gitlab, _proj("sotopia")).status_code == 200
    gone = browser.post(f"{gitlab.url}/root/sotopia", data={"_method": "delete", "confirm_name": "root/sotopia"},
                        timeout=10)
    assert gone.url.endswith("/dashboard/projects") and _api(gitlab, _proj("sotopia")).status_code == 404


def test_gitlab_web_members_branches_protected_branches(gitlab: Served) -> None:
    browser = _browser(gitlab)
    base = f"{gitlab.url}/root/risingwave"
    members = browser.get(f"{base}/-/project_members", timeout=10)
    assert 'data-username="li_ming"' in members.text and 'id="remove-member-li_ming"' in members.text
    li_ming = _api(gitlab, "users", username="li_ming").json()[0]["id"]
    browser.post(f"{base}/-/project_members/{li_ming}", data={"_method": "delete"}, timeout=10)
    usernames = {m["username"] for m in _api(gitlab, f"{_proj('risingwave')}/members").json()}
    assert "li_ming" not in usernames
    owner = browser.post(f"{base}/-/project_members/1", data={"_method": "delete"}, timeout=10)
    assert owner.status_code == 403 and "root" in {m["username"] for m in
                                                  _api(gitlab, f"{_proj('risingwave')}/members").json()}
    browser.post(f"{base}/-/project_members", data={"username": "li_ming", "access_level": "30"}, timeout=10)
    again = {m["username"]: m["access_level"] for m in _api(gitlab, f"{_proj('risingwave')}/members").json()}
    assert again["li_ming"] == 30
    branches = browser.get(f"{base}/-/branches", timeout=10)
    assert 'data-name="perf/flush-batching"' in branches.text and branches.text.count('id="delete-branch-') == 1
    browser.post(f"{base}/-/branches/perf/flush-batching", data={"_method": "delete"}, timeout=10)
    names = [b["name"] for b in _api(gitlab, f"{_proj('risingwave')}/repository/branches").json()]
    assert names == ["main"]
    default = browser.post(f"{base}/-/branches/main", data={"_method": "delete"}, timeout=10)
    assert default.status_code == 405 and "default branch" in default.text
    rules = _api(gitlab, f"{_proj('risingwave')}/protected_branches").json()
    settings = browser.get(f"{base}/-/settings/repository", timeout=10)
    assert 'data-name="main"' in settings.text and f'id="unprotect-{rules[0]["id"]}"' in settings.text
    browser.post(f"{base}/-/protected_branches/{rules[0]['id']}", data={"_method": "delete"}, timeout=10)
    assert _api(gitlab, f"{_proj('risingwave')}/protected_branches").json() == []
    assert not gitlab.gaps.snapshot()


def test_gitlab_web_wiki_pages_new_and_edit(gitlab: Served) -> None:
    browser = _browser(gitlab)
    home = browser.get(f"{gitlab.url}/root/doc/-/wikis", timeout=10)
    assert home.url.endswith("/root/doc/-/wikis/home") and 'id="wiki-content"' in home.text
    listing = browser.get(f"{gitlab.url}/root/doc/-/wikis/pages", timeout=10)
    assert "/root/doc/-/wikis/engineering-practices" in listing.text
    assert 'id="wiki_title"' in browser.get(f"{gitlab.url}/root/doc/-/wikis/new", timeout=10).text
    made = browser.post(f"{gitlab.url}/root/doc/-/wikis", data={"title": "On Call", "content": "Rota: <weekly>",
                                                                "format": "markdown"}, timeout=10)
    assert made.url.endswith("/root/doc/-/wikis/On-Call") and "Rota: &lt;weekly&gt;" in made.text
    assert _api(gitlab, f"{_proj('doc')}/wikis/On-Call").json()["content"] == "Rota: <weekly>"
    editor = browser.get(f"{gitlab.url}/root/doc/-/wikis/On-Call/edit", timeout=10)
    assert 'id="wiki_content"' in editor.text
    browser.post(f"{gitlab.url}/root/doc/-/wikis/On-Call", data={"_method": "put", "content": "Rota: daily"},
                 timeout=10)
    assert _api(gitlab, f"{_proj('doc')}/wikis/On-Call").json()["content"] == "Rota: daily"
    missing = browser.get(f"{gitlab.url}/root/doc/-/wikis/nothing-here", timeout=10)
    assert missing.status_code == 404 and 'id="create-this-page"' in missing.text


def test_gitlab_web_new_project_form(gitlab: Served) -> None:
    browser = _browser(gitlab)
    assert 'id="project_name"' in browser.get(f"{gitlab.url}/projects/new", timeout=10).text
    made = browser.post(f"{gitlab.url}/projects", data={"name": "Secure Banking App", "visibility": "public",
                                                        "initialize_with_readme": "true"}, timeout=10)
    assert made.url.endswith("/root/secure-banking-app") and 'id="readme"' in made.text
    project = _api(gitlab, _proj("secure-banking-app")).json()
    assert (project["name"], project["visibility"], project["default_branch"]) == ("Secure Banking App", "public",
                                                                                    "main")
    taken = browser.post(f"{gitlab.url}/projects", data={"name": "sotopia"}, timeout=10)
    assert taken.status_code == 400 and "has already been taken" in taken.text


def test_gitlab_web_unknown_pages_are_recorded_gaps(gitlab: Served) -> None:
    browser = _browser(gitlab)
    for path in ("/root/risingwave/-/pipelines", "/admin/users", "/explore/projects"):
        reply = browser.get(f"{gitlab.url}{path}", timeout=10)
        assert reply.status_code == 404 and reply.headers["X-Toolemu-Gap"] == "1"
    assert [g.path for g in gitlab.gaps.snapshot()] == ["/root/risingwave/-/pipelines", "/admin/users",
                                                         "/explore/projects"]
