"""Bare git repositories of the GitLab emulator: what the API reads and the commits it writes.

Everything goes through the ``git`` program with the host's and user's configuration ignored. Commits are written
with ``git fast-import`` (one process, deterministic for fixed dates) and published with a compare-and-swap ref
update, so an API commit racing a push fails instead of losing the push.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 60.0
"""Longest one git command may take (a merge of a large push)."""
ZERO_SHA = "0" * 40


class GitError(Exception):
    """A git command failed; ``stderr`` says why."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args[:3])} failed ({returncode}): {stderr.strip()[:300]}")
        self.returncode = returncode
        self.stderr = stderr


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Returns an environment for git that reads no system or user configuration and never prompts."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    env.update(extra or {})
    return env


@dataclass(frozen=True, slots=True)
class Identity:
    """An author or committer."""

    name: str
    email: str


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit as ``git log`` reports it (dates in ISO 8601 with offset)."""

    id: str
    parent_ids: tuple[str, ...]
    author_name: str
    author_email: str
    authored_date: str
    committer_name: str
    committer_email: str
    committed_date: str
    message: str

    @property
    def title(self) -> str:
        """The first line of the message."""
        return self.message.split("\n", 1)[0]


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One entry of a tree listing."""

    mode: str
    type: str
    id: str
    path: str

    @property
    def name(self) -> str:
        """The last component of the path."""
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class FileAction:
    """A change of one file in an API commit: ``create``, ``update``, ``delete`` or ``move``."""

    action: str
    file_path: str
    content: bytes = b""
    previous_path: str | None = None


_LOG_FORMAT = "%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B%x1e"


def _safe_ref(ref: str) -> bool:
    return bool(ref) and not ref.startswith("-") and "\n" not in ref and "\x00" not in ref


def valid_file_path(path: str) -> bool:
    """Returns whether ``path`` names a file inside a repository (relative, no ``..``, no control characters)."""
    parts = path.split("/")
    if not path or path.startswith(("/", '"')) or any(ord(c) < 32 for c in path):
        return False
    return all(p not in ("", ".", "..", ".git") for p in parts)


class Repo:
    """One bare repository on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(
        self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Runs ``git args`` in this repository and returns the finished process (any exit status).

        Raises:
            GitError: the command timed out.
        """
        try:
            return subprocess.run(
                ["git", *args],
                cwd=self.path,
                input=stdin,
                capture_output=True,
                env=git_env({"GIT_DIR": str(self.path), **(env or {})}),
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise GitError(args, -1, "timed out") from e

    def git(
        self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None, check: bool = True,
    ) -> bytes:
        """Runs ``git args`` in this repository and returns its standard output.

        Raises:
            GitError: the command exited non-zero (with ``check``) or timed out.
        """
        done = self.run(*args, stdin=stdin, env=env)
        if check and done.returncode != 0:
            raise GitError(args, done.returncode, done.stderr.decode("utf-8", "replace"))
        return done.stdout

    def exists(self) -> bool:
        """Whether the repository is on disk."""
        return (self.path / "HEAD").is_file()

    def head_branch(self) -> str | None:
        """The branch HEAD names (it may not exist yet)."""
        try:
            head = (self.path / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else None

    def branches(self) -> dict[str, str]:
        """Branch name -> commit id, read from the ref files (packed refs, then loose refs over them)."""
        refs: dict[str, str] = {}
        try:
            packed = (self.path / "packed-refs").read_text(encoding="utf-8")
        except OSError:
            packed = ""
        for line in packed.splitlines():
            if line and line[0] not in "#^":
                sha, _, name = line.partition(" ")
                if name.startswith("refs/heads/"):
                    refs[name.removeprefix("refs/heads/")] = sha
        heads = self.path / "refs" / "heads"
        for dirpath, _dirs, files in os.walk(heads):
            for file in files:
                full = Path(dirpath) / file
                if full.is_symlink() or file.endswith(".lock"):
                    continue
                sha = full.read_text(encoding="utf-8").strip()
                if len(sha) == 40:
                    refs[full.relative_to(heads).as_posix()] = sha
        return dict(sorted(refs.items()))

    def default_branch(self) -> str | None:
        """The HEAD branch if it exists."""
        head = self.head_branch()
        return head if head is not None and head in self.branches() else None

    def resolve(self, ref: str) -> str | None:
        """The commit id ``ref`` (a branch, tag or sha) names, or None."""
        if not _safe_ref(ref):
            return None
        out = self.git("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False).strip()
        return out.decode() if len(out) == 40 else None

    def log(
        self, ref: str, *, path: str | None = None, since: str | None = None, until: str | None = None,
        skip: int = 0, limit: int | None = None, all_refs: bool = False,
    ) -> list[Commit]:
        """Commits reachable from ``ref`` (or every branch), newest first.

        Raises:
            GitError: ``ref`` looks like an option or holds a control character.
        """
        if not _safe_ref(ref):
            raise GitError(("log",), 128, f"bad revision {ref!r}")
        args = ["log", f"--format={_LOG_FORMAT}", f"--skip={skip}"]
        if limit is not None:
            args.append(f"--max-count={limit}")
        args += [f"--since={since}"] if since else []
        args += [f"--until={until}"] if until else []
        args += ["--branches"] if all_refs else [ref]
        args += ["--", path] if path else []
        out = self.git(*args).decode("utf-8", "replace")
        return [_parse_commit(chunk) for chunk in out.split("\x1e") if chunk.strip()]

    def count(self, ref: str, *, path: str | None = None, all_refs: bool = False) -> int:
        """How many commits :meth:`log` would list without skip and limit."""
        if not _safe_ref(ref):
            raise GitError(("rev-list",), 128, f"bad revision {ref!r}")
        args = ["rev-list", "--count", "--branches" if all_refs else ref]
        args += ["--", path] if path else []
        return int(self.git(*args).strip() or b"0")

    def commit(self, sha: str) -> Commit | None:
        """The commit ``sha`` (or a ref) names, or None."""
        full = self.resolve(sha)
        if full is None:
            return None
        return self.log(full, limit=1)[0]

    def tree(self, ref: str, path: str = "", *, recursive: bool = False) -> list[TreeEntry] | None:
        """Entries of the tree at ``path`` of ``ref`` (full paths), or None when there is no such tree."""
        if not _safe_ref(ref):
            return None
        path = path.strip("/")
        spec = f"{ref}:{path}" if path else f"{ref}^{{tree}}"
        kind = self.git("cat-file", "-t", spec, check=False).strip()
        if kind != b"tree":
            return None
        out = self.git("ls-tree", "-z", *(["-r", "-t"] if recursive else []), spec).decode("utf-8", "replace")
        entries = []
        for item in out.split("\x00"):
            if item:
                meta, _, name = item.partition("\t")
                mode, typ, sha = meta.split(" ")
                entries.append(TreeEntry(mode, typ, sha, f"{path}/{name}" if path else name))
        return entries

    def blob(self, ref: str, path: str) -> tuple[str, bytes] | None:
        """(blob id, content) of the file ``path`` at ``ref``, or None."""
        if not _safe_ref(ref) or "\n" in path:
            return None
        out = self.git("cat-file", "--batch", stdin=f"{ref}:{path}\n".encode())
        header, _, rest = out.partition(b"\n")
        fields = header.split(b" ")
        if len(fields) != 3 or fields[1] != b"blob":
            return None
        size = int(fields[2])
        return fields[0].decode(), rest[:size]

    def last_commit(self, ref: str, path: str) -> str | None:
        """The newest commit of ``ref`` that changed ``path``."""
        out = self.git("log", "-1", "--format=%H", ref, "--", path, check=False).strip()
        return out.decode() if out else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is reachable from ``newer``."""
        return self.run("merge-base", "--is-ancestor", older, newer).returncode == 0

    def update_refs(self, lines: Iterable[str]) -> None:
        """Applies ``update-ref --stdin`` commands as one transaction (all or none).

        Raises:
            GitError: a ref was not at the expected value, or a name is invalid.
        """
        self.git("update-ref", "--stdin", stdin="".join(f"{line}\n" for line in lines).encode())

    def set_head(self, branch: str) -> None:
        """Points HEAD at ``branch``."""
        self.git("symbolic-ref", "HEAD", f"refs/heads/{branch}")

    def write_commit(
        self, parent: str | None, actions: Sequence[FileAction], message: str, author: Identity, when: int,
    ) -> str:
        """Writes a commit of ``actions`` on top of ``parent`` (None: a root commit) and returns its id.

        No branch moves; publish the commit with :meth:`update_refs`.
        """
        scratch = f"refs/toolemu/scratch/{uuid.uuid4().hex}"
        stream = fast_import_commit(scratch, parent, actions, message, author, when, mark=1)
        stream += b"get-mark :1\ndone\n"
        out = self.git("fast-import", "--quiet", "--done", "--date-format=raw", stdin=b"feature get-mark\n" + stream)
        sha = out.strip().decode()
        self.git("update-ref", "-d", scratch)
        return sha

    def merge(self, target: str, source: str, message: str, author: Identity, when: int) -> str | None:
        """Writes a merge commit of ``source`` into ``target`` (both commit ids); None on conflicts."""
        done = self.run("merge-tree", "--write-tree", target, source)
        if done.returncode != 0:
            return None
        tree = done.stdout.split(b"\n", 1)[0].strip().decode()
        stamp = f"{when} +0000"
        env = {
            "GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email, "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": author.name, "GIT_COMMITTER_EMAIL": author.email, "GIT_COMMITTER_DATE": stamp,
        }
        out = self.git("commit-tree", tree, "-p", target, "-p", source, "-m", message, env=env)
        return out.strip().decode()


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def fast_import_commit(
    ref: str, parent: str | None, actions: Sequence[FileAction], message: str, author: Identity, when: int,
    mark: int,
) -> bytes:
    """Returns the ``git fast-import`` commands of one commit on ``ref`` (``parent``: a sha or ``:mark``)."""
    who = f"{author.name} <{author.email}> {when} +0000".encode()
    out = [b"commit %s\n" % ref.encode(), b"mark :%d\n" % mark, b"author " + who + b"\n", b"committer " + who + b"\n"]
    out.append(_data(message.encode("utf-8")))
    if parent is not None:
        out.append(b"from %s\n" % parent.encode())
    for act in actions:
        if act.action in ("delete", "move") and act.previous_path is not None:
            out.append(b"D %s\n" % act.previous_path.encode("utf-8"))
        if act.action == "delete":
            out.append(b"D %s\n" % act.file_path.encode("utf-8"))
        else:
            out.append(b"M 100644 inline %s\n" % act.file_path.encode("utf-8"))
            out.append(_data(act.content))
    return b"".join(out)


def _parse_commit(chunk: str) -> Commit:
    fields = chunk.lstrip("\n").split("\x1f")
    sha, parents, an, ae, ad, cn, ce, cd, body = fields[:9]
    return Commit(sha, tuple(parents.split()), an, ae, ad, cn, ce, cd, body.rstrip("\n"))


def init_bare(path: Path, default_branch: str = "main") -> Repo:
    """Creates an empty bare repository at ``path`` whose HEAD names ``default_branch``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "init", "--bare", "-q", "--template=", f"--initial-branch={default_branch}", str(path)],
        env=git_env(), check=True, capture_output=True, timeout=GIT_TIMEOUT_S,
    )
    return Repo(path)
