"""Git over smart HTTP for the GitLab emulator: ``git http-backend`` run as CGI, with GitLab's push rules.

``git http-backend`` is git's own server side of the protocol (v0 and v2, every capability the client asks for),
so clones and pushes behave as against any git host. GitLab's rules for pushes live in a ``pre-receive`` hook
that reads the project's protected branches from the environment the app passes: no force push and no deletion
of a protected branch, no push at all where the push level is "No one", no deletion of the default branch, and
nothing into an archived project. A push to a project that does not exist creates it (private), as GitLab does.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from toolemu.services.gitlab.commits import after_branch_created
from toolemu.services.gitlab.http import MAX_BODY_BYTES, ApiError
from toolemu.services.gitlab.repo import git_env
from toolemu.services.gitlab.routing import Ctx
from toolemu.services.gitlab.seed import REPOS_DIR
from toolemu.services.gitlab.store import ProjectRecord

HOOKS_DIR = "hooks"
"""Where ``make_app`` writes the push hook, inside the state folder."""
SERVICES = ("git-upload-pack", "git-receive-pack")
_CHUNK = 64 * 1024

PRE_RECEIVE = """#!/bin/sh
# GitLab's push rules, written by toolemu's GitLab emulator. The emulator passes the project's rules in the
# environment: TOOLEMU_GITLAB_READONLY (archived), TOOLEMU_GITLAB_NO_PUSH and TOOLEMU_GITLAB_NO_FORCE (branch
# patterns, space-separated).
set -f
zero=0000000000000000000000000000000000000000
head=$(git symbolic-ref -q HEAD)
status=0
if [ -n "$TOOLEMU_GITLAB_READONLY" ]; then
  echo "GitLab: You are not allowed to push code to an archived project." >&2
  exit 1
fi
while read -r old new ref; do
  if [ "$new" = "$zero" ] && [ "$ref" = "$head" ]; then
    echo "GitLab: The default branch of a project cannot be deleted." >&2
    status=1
    continue
  fi
  for p in $TOOLEMU_GITLAB_NO_PUSH; do
    case "$ref" in "refs/heads/"$p)
      echo "GitLab: You are not allowed to push code to protected branches on this project." >&2
      status=1
      continue 2;;
    esac
  done
  for p in $TOOLEMU_GITLAB_NO_FORCE; do
    case "$ref" in "refs/heads/"$p)
      if [ "$new" = "$zero" ]; then
        echo "GitLab: You can only delete protected branches using the web interface." >&2
        status=1
      elif [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
        echo "GitLab: You are not allowed to force push code to a protected branch on this project." >&2
        status=1
      fi
      continue 2;;
    esac
  done
done
exit $status
"""


def ensure_hooks(state_dir: Path) -> Path:
    """Writes the push hook into ``state_dir/hooks`` (once) and returns the folder."""
    hooks = state_dir / HOOKS_DIR
    hook = hooks / "pre-receive"
    if not hook.is_file() or hook.is_symlink() or hook.read_text(encoding="utf-8") != PRE_RECEIVE:
        hooks.mkdir(exist_ok=True)
        tmp = hooks / ".pre-receive.tmp"
        tmp.write_text(PRE_RECEIVE, encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, hook)
    return hooks


def read_body(environ: dict[str, Any]) -> IO[bytes]:
    """Spools the request body into a temporary file (decoding ``chunked`` if the server left it raw).

    Raises:
        ApiError: 413 when the body exceeds :data:`MAX_BODY_BYTES`.
    """
    stream = environ["wsgi.input"]
    spool = tempfile.TemporaryFile()
    length = environ.get("CONTENT_LENGTH") or ""
    chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    total = 0

    def put(data: bytes) -> None:
        nonlocal total
        total += len(data)
        if total > MAX_BODY_BYTES:
            raise ApiError(413, {"message": "413 Request Entity Too Large"})
        spool.write(data)

    if length.isdigit():
        remaining = int(length)
        if remaining > MAX_BODY_BYTES:
            raise ApiError(413, {"message": "413 Request Entity Too Large"})
        while remaining:
            data = stream.read(min(_CHUNK, remaining))
            if not data:
                break
            put(data)
            remaining -= len(data)
    elif chunked and not environ.get("wsgi.input_terminated"):
        while True:
            size_line = stream.readline(1024).split(b";", 1)[0].strip()
            size = int(size_line or b"0", 16)
            if size == 0:
                while stream.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                break
            while size:
                data = stream.read(min(_CHUNK, size))
                if not data:
                    raise ApiError(400, {"message": "truncated chunked body"})
                put(data)
                size -= len(data)
            stream.readline(8)
    elif environ.get("wsgi.input_terminated"):
        while data := stream.read(_CHUNK):
            put(data)
    spool.seek(0)
    return spool


def _rules_env(project: ProjectRecord) -> dict[str, str]:
    no_push = [p.name for p in project.protected_branches if p.push_access_level == 0]
    no_force = [p.name for p in project.protected_branches if not p.allow_force_push]
    env = {"TOOLEMU_GITLAB_NO_PUSH": " ".join(no_push), "TOOLEMU_GITLAB_NO_FORCE": " ".join(no_force)}
    if project.archived:
        env["TOOLEMU_GITLAB_READONLY"] = "1"
    return env


def run_backend(
    ctx: Ctx, environ: dict[str, Any], project: ProjectRecord, *, wiki: bool, service_path: str, user_id: int | None,
) -> tuple[str, list[tuple[str, str]], Iterator[bytes]]:
    """Runs ``git http-backend`` for ``service_path`` (``info/refs``, ``git-upload-pack``, ``git-receive-pack``)
    of the project's repository and returns (status, headers, body)."""
    hooks = ensure_hooks(ctx.state_dir)
    repo = ctx.repo(project, wiki=wiki)
    was_empty = not repo.branches()
    pushing = service_path == "git-receive-pack"
    body = read_body(environ) if environ.get("REQUEST_METHOD") == "POST" else tempfile.TemporaryFile()
    body.seek(0, os.SEEK_END)
    length = body.tell()
    body.seek(0)
    name = f"{project.path}.wiki.git" if wiki else f"{project.path}.git"
    config = {"http.receivepack": "true" if user_id is not None else "false", "core.hooksPath": str(hooks),
              "uploadpack.allowFilter": "true", "uploadpack.allowAnySHA1InWant": "true",
              "receive.denyDeleteCurrent": "false"}
    env = git_env({
        "GIT_PROJECT_ROOT": str(ctx.state_dir / REPOS_DIR), "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"/{project.namespace}/{name}/{service_path}",
        "REQUEST_METHOD": environ.get("REQUEST_METHOD", "GET"),
        "QUERY_STRING": environ.get("QUERY_STRING", ""), "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
        "CONTENT_LENGTH": str(length), "REMOTE_ADDR": environ.get("REMOTE_ADDR", "127.0.0.1"),
        "GIT_CONFIG_COUNT": str(len(config)),
    })
    for i, (key, value) in enumerate(config.items()):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    if user_id is not None:
        env["REMOTE_USER"] = "root"
    for src, dst in (("HTTP_CONTENT_ENCODING", "HTTP_CONTENT_ENCODING"), ("HTTP_GIT_PROTOCOL", "GIT_PROTOCOL")):
        if environ.get(src):
            env[dst] = environ[src]
    if not wiki:
        env.update(_rules_env(project))
    errors = tempfile.TemporaryFile()
    proc = subprocess.Popen(["git", "http-backend"], stdin=body, stdout=subprocess.PIPE, stderr=errors, env=env)
    body.close()
    assert proc.stdout is not None  # stdout=PIPE always gives a stream
    head = b""
    while b"\r\n\r\n" not in head and b"\n\n" not in head:
        data = proc.stdout.read1(_CHUNK) if hasattr(proc.stdout, "read1") else proc.stdout.read(_CHUNK)
        if not data:
            break
        head += data
    sep = b"\r\n\r\n" if b"\r\n\r\n" in head else b"\n\n"
    raw_headers, _, rest = head.partition(sep)
    status = "200 OK"
    headers: list[tuple[str, str]] = []
    for line in raw_headers.decode("latin-1").splitlines():
        key, _, value = line.partition(":")
        if key.lower() == "status":
            status = value.strip()
        elif key:
            headers.append((key.strip(), value.strip()))
    if pushing:
        out = rest + proc.stdout.read()
        proc.wait()
        errors.close()
        if not wiki:
            after_branch_created(ctx, project, repo, was_empty=was_empty)
        return status, headers, iter([out])

    def stream() -> Iterator[bytes]:
        try:
            if rest:
                yield rest
            assert proc.stdout is not None
            while data := proc.stdout.read(_CHUNK):
                yield data
        finally:
            proc.stdout.close() if proc.stdout else None
            proc.wait()
            errors.close()

    return status, headers, stream()
