"""Git over smart HTTP against the GitLab emulator with the real ``git`` client: clone, push, wikis, push rules."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import requests

from tests.services.gitlab_server import TOKEN, Served, gitlab, gitlab_seed

pytestmark = pytest.mark.enable_socket
__all__ = ["gitlab", "gitlab_seed"]

_ENV = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Agent", "GIT_AUTHOR_EMAIL": "agent@example.com", "GIT_COMMITTER_NAME": "Agent",
        "GIT_COMMITTER_EMAIL": "agent@example.com"}


def git(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=_ENV, capture_output=True, text=True, timeout=60, check=check)


def _raw(gl: Served, project: str, path: str, ref: str = "main") -> requests.Response:
    return requests.get(f"{gl.api}/projects/root%2F{project}/repository/files/{path}/raw", params={"ref": ref},
                        headers=TOKEN, timeout=10)


def test_git_clone_anonymously_then_push_with_credentials(gitlab: Served, tmp_path: Path) -> None:
    work = tmp_path / "sotopia"
    git("clone", "-q", gitlab.git_url("sotopia", user=None), str(work))
    assert (work / "README.md").read_text().startswith("# Sotopia")
    assert "feature/multi-party" in git("branch", "-r", cwd=work).stdout
    (work / "CHANGELOG.md").write_text("First entry\n")
    git("add", "CHANGELOG.md", cwd=work)
    git("commit", "-qm", "Add a changelog", cwd=work)
    anonymous = git("push", "origin", "main", cwd=work, check=False)
    assert anonymous.returncode != 0
    git("remote", "set-url", "origin", gitlab.git_url("sotopia"), cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    assert _raw(gitlab, "sotopia", "CHANGELOG.md").text == "First entry\n"
    commits = requests.get(f"{gitlab.api}/projects/root%2Fsotopia/repository/commits", headers=TOKEN, timeout=10)
    assert commits.json()[0]["title"] == "Add a changelog" and commits.headers["X-Total"] == "5"


def test_git_force_push_to_protected_main_is_refused_until_unprotected(gitlab: Served, tmp_path: Path) -> None:
    work = tmp_path / "raft"
    git("clone", "-q", gitlab.git_url("raft"), str(work))
    git("checkout", "-q", "--orphan", "squashed", cwd=work)
    git("commit", "-qm", "Snapshot", cwd=work)
    refused = git("push", "-f", "origin", "squashed:main", cwd=work, check=False)
    assert refused.returncode != 0 and "not allowed to force push" in refused.stderr
    gone = requests.delete(f"{gitlab.api}/projects/root%2Fraft/protected_branches/main", headers=TOKEN, timeout=10)
    assert gone.status_code == 204
    git("push", "-q", "-f", "origin", "squashed:main", cwd=work)
    commits = requests.get(f"{gitlab.api}/projects/root%2Fraft/repository/commits", params={"ref_name": "main"},
                           headers=TOKEN, timeout=10).json()
    assert [c["title"] for c in commits] == ["Snapshot"]


def test_git_push_deletes_branches_but_not_the_default_one(gitlab: Served, tmp_path: Path) -> None:
    work = tmp_path / "colly"
    git("clone", "-q", gitlab.git_url("colly"), str(work))
    git("push", "-q", "origin", "--delete", "feature/rate-limit", cwd=work)
    names = [b["name"] for b in requests.get(f"{gitlab.api}/projects/root%2Fcolly/repository/branches",
                                             headers=TOKEN, timeout=10).json()]
    assert names == ["main"]
    refused = git("push", "origin", "--delete", "main", cwd=work, check=False)
    assert refused.returncode != 0 and "default branch" in refused.stderr


def test_git_wiki_clone_and_push_show_in_the_api(gitlab: Served, tmp_path: Path) -> None:
    work = tmp_path / "doc.wiki"
    git("clone", "-q", gitlab.git_url("doc.wiki"), str(work))
    assert "janusgraph.git" in (work / "home.md").read_text()
    (work / "Release-process.md").write_text("# Release process\n\nTag, build, announce.\n")
    git("add", ".", cwd=work)
    git("commit", "-qm", "Add release process", cwd=work)
    git("push", "-q", "origin", "HEAD", cwd=work)
    page = requests.get(f"{gitlab.api}/projects/root%2Fdoc/wikis/Release-process", headers=TOKEN, timeout=10).json()
    assert page["title"] == "Release process" and "Tag, build" in page["content"]


def test_git_push_to_a_missing_project_creates_it_private(gitlab: Served, tmp_path: Path) -> None:
    work = tmp_path / "new"
    git("init", "-q", "-b", "main", str(work))
    (work / "README.md").write_text("# new\n")
    git("add", ".", cwd=work)
    git("commit", "-qm", "Start", cwd=work)
    git("push", "-q", gitlab.git_url("internal-config-samples"), "main", cwd=work)
    project = requests.get(f"{gitlab.api}/projects/root%2Finternal-config-samples", headers=TOKEN, timeout=10).json()
    assert (project["visibility"], project["default_branch"]) == ("private", "main")
    anonymous = requests.get(f"{gitlab.api}/projects/root%2Finternal-config-samples", timeout=10)
    assert anonymous.status_code == 404
    assert git("clone", "-q", gitlab.git_url("internal-config-samples", user=None), str(tmp_path / "c"),
               check=False).returncode != 0


def test_git_push_into_an_archived_project_is_refused(gitlab: Served, tmp_path: Path) -> None:
    work = tmp_path / "bustub"
    git("clone", "-q", gitlab.git_url("bustub"), str(work))
    requests.post(f"{gitlab.api}/projects/root%2Fbustub/archive", headers=TOKEN, timeout=10)
    (work / "x.txt").write_text("x\n")
    git("add", ".", cwd=work)
    git("commit", "-qm", "x", cwd=work)
    refused = git("push", "origin", "main", cwd=work, check=False)
    assert refused.returncode != 0 and "archived project" in refused.stderr


def test_git_clone_of_a_dotted_project_name_and_without_dot_git(gitlab: Served, tmp_path: Path) -> None:
    git("clone", "-q", gitlab.git_url("llama.cpp"), str(tmp_path / "llama"))
    assert (tmp_path / "llama" / "main.c").is_file()
    bare = gitlab.git_url("sotopia").removesuffix(".git")
    git("clone", "-q", bare, str(tmp_path / "s"))
    assert (tmp_path / "s" / "README.md").is_file()
    assert not gitlab.gaps.snapshot()


def test_git_push_of_a_large_pack_goes_chunked_and_lands(gitlab: Served, tmp_path: Path) -> None:
    work = tmp_path / "streamlit"
    git("clone", "-q", gitlab.git_url("streamlit"), str(work))
    (work / "data.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # over git's 1 MiB http.postBuffer: chunked body
    git("add", ".", cwd=work)
    git("commit", "-qm", "Add sample data", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    meta = requests.get(f"{gitlab.api}/projects/root%2Fstreamlit/repository/files/data.bin", params={"ref": "main"},
                        headers=TOKEN, timeout=10).json()
    assert meta["size"] == 3 * 1024 * 1024
