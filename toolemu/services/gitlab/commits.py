"""Commits made through the GitLab API (files and ``repository/commits``) and what GitLab does after one.

GitLab refuses a commit to a branch whose push access is "No one", creates a missing branch from
``start_branch``, makes the first branch of an empty repository the default one and protects it.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import re
import time
from collections.abc import Sequence

from toolemu.services.gitlab.http import ApiError, Request, bad_request
from toolemu.services.gitlab.repo import FileAction, GitError, Identity, Repo, valid_file_path
from toolemu.services.gitlab.routing import Ctx
from toolemu.services.gitlab.store import GitLabState, ProjectRecord, ProtectedBranchRecord, now

_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[^\x00-\x20~^:?*\[\\\x7f]+(?<![./])(?<!\.lock)$")
ROOT = Identity("Administrator", "admin@example.com")


def valid_branch_name(name: str) -> bool:
    """Whether git accepts ``name`` as a branch (``git check-ref-format --branch``'s main rules)."""
    return bool(_BRANCH.match(name)) and not name.startswith("/")


def protection(project: ProjectRecord, branch: str) -> ProtectedBranchRecord | None:
    """The protected-branch rule matching ``branch`` (exact names before wildcards), if any."""
    exact = next((p for p in project.protected_branches if p.name == branch), None)
    return exact or next((p for p in project.protected_branches if fnmatch.fnmatchcase(branch, p.name)), None)


def decode_content(request_content: str, encoding: str | None) -> bytes:
    """The bytes of a ``content`` parameter (``encoding`` ``text`` or ``base64``)."""
    if encoding == "base64":
        try:
            return base64.b64decode(request_content, validate=False)
        except binascii.Error as e:
            raise bad_request("content is not valid base64") from e
    return request_content.encode("utf-8")


def author_of(request: Request) -> Identity:
    """``author_name``/``author_email`` if given, else root."""
    name = request.params.text("author_name")
    email = request.params.text("author_email")
    return Identity(name or ROOT.name, email or ROOT.email)


def _existing(repo: Repo, ref: str | None, paths: Sequence[str]) -> set[str]:
    if ref is None or not paths:
        return set()
    lines = "".join(f"{ref}:{p}\n" for p in paths).encode()
    out = repo.git("cat-file", "--batch-check", stdin=lines).decode("utf-8", "replace").splitlines()
    return {p for p, line in zip(paths, out, strict=False) if line.endswith(tuple("0123456789")) and " blob " in line}


def commit_actions(
    ctx: Ctx, project: ProjectRecord, branch: str, actions: Sequence[FileAction], message: str, author: Identity,
    start_branch: str | None = None,
) -> str:
    """Commits ``actions`` to ``branch`` of ``project`` and returns the new commit id.

    Raises:
        ApiError: 400 for a bad branch, a missing or existing file, 403 for a branch nobody may push to.
    """
    if not valid_branch_name(branch):
        raise bad_request("Branch name is invalid")
    for act in actions:
        paths = [act.file_path] + ([act.previous_path] if act.previous_path is not None else [])
        if not all(valid_file_path(p) for p in paths):
            raise bad_request("Your changes could not be committed, because the file path is invalid")
    rule = protection(project, branch)
    if rule is not None and rule.push_access_level == 0:
        raise ApiError(403, {"message": "You are not allowed to push into this branch"})
    repo = ctx.repo(project)
    branches = repo.branches()
    parent = branches.get(branch)
    if parent is None and start_branch:
        parent = branches.get(start_branch) or repo.resolve(start_branch)
        if parent is None:
            raise bad_request(f"Invalid reference name: {start_branch}")
    if parent is None and branches:
        raise bad_request("You can only create or edit files when you are on a branch")
    present = _existing(repo, parent, [p for a in actions for p in (a.file_path, a.previous_path) if p])
    for act in actions:
        if act.action == "create" and act.file_path in present:
            raise bad_request("A file with this name already exists")
        if act.action in ("update", "delete") and act.file_path not in present:
            raise bad_request("A file with this name doesn't exist")
        if act.action == "move" and (act.previous_path or "") not in present:
            raise bad_request("A file with this name doesn't exist")
    sha = repo.write_commit(parent, actions, message, author, int(time.time()))
    ref = f"refs/heads/{branch}"
    try:
        repo.update_refs([f"update {ref} {sha} {parent}" if parent and branch in branches else f"create {ref} {sha}"])
    except GitError as e:
        raise ApiError(400, {"message": "The branch moved while committing; retry"}) from e
    after_branch_created(ctx, project, repo, was_empty=not branches)
    return sha


def after_branch_created(ctx: Ctx, project: ProjectRecord, repo: Repo, *, was_empty: bool) -> None:
    """GitLab's bookkeeping after a push or commit: the first branch of an empty project becomes its default
    branch and is protected (Maintainers push and merge); every change counts as activity."""
    branches = repo.branches()
    head = repo.head_branch()
    if branches and (head is None or head not in branches):
        head = next((b for b in ("main", "master") if b in branches), next(iter(branches)))
        repo.set_head(head)

    def touch(state: GitLabState) -> tuple[GitLabState, None]:
        current = state.project(str(project.id))
        if current is None:
            return state, None
        update: dict[str, object] = {"last_activity_at": now()}
        if was_empty and head is not None and branches and protection(current, head) is None:
            state, pid = state.next_id("protected_branch")
            update["protected_branches"] = (*current.protected_branches, ProtectedBranchRecord(id=pid, name=head))
        return state.replace_project(current.model_copy(update=update)), None

    ctx.store.change(touch)
