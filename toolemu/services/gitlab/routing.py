"""How a GitLab request path finds its handler: path segments, the project it names, and route patterns.

GitLab wants a project path or file path URL-encoded in one segment (``root%2Fsotopia``); servers that decode
the path before the application sees it split that segment, so both forms are accepted: a project named by path
takes two segments (``root``, ``sotopia``), and a file path or branch name is everything up to the next keyword.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from toolemu.services.base import GapLog
from toolemu.services.gitlab.http import FORBIDDEN, Request, Response, not_found
from toolemu.services.gitlab.repo import Repo
from toolemu.services.gitlab.seed import repo_path
from toolemu.services.gitlab.store import GitLabState, ProjectRecord, Store


@dataclass(frozen=True, slots=True)
class Ctx:
    """What every handler may use: the state folder, its store and the gap log."""

    state_dir: Path
    store: Store
    gaps: GapLog

    def repo(self, project: ProjectRecord, *, wiki: bool = False) -> Repo:
        """The project's bare repository (or its wiki's)."""
        return Repo(repo_path(self.state_dir, project.namespace, project.path, wiki=wiki))


def current_project(state: GitLabState, project: ProjectRecord) -> ProjectRecord:
    """The project as it stands in ``state`` (a change reads it afresh); 404 when it has gone."""
    current = state.project(str(project.id))
    if current is None:
        raise not_found("Project")
    return current


Args = dict[str, str]
Handler = Callable[..., Response]
"""``(ctx, request, args)`` for instance routes, ``(ctx, request, project, args)`` for project routes."""


@dataclass(frozen=True, slots=True)
class Route:
    """``method`` + a pattern of segments: literals, ``:name`` (one segment) or a final ``*name`` (the rest)."""

    method: str
    pattern: tuple[str, ...]
    handler: Handler
    writes: bool = False
    """Changes state: refused for anonymous callers (401) and on archived projects (403)."""
    archived_ok: bool = False
    """Allowed on an archived project even though it writes (unarchive, delete, settings)."""


def route(method: str, pattern: str, handler: Handler, *, archived_ok: bool = False) -> Route:
    """A route; ``pattern`` is slash-separated (``issues/:iid/notes``, ``repository/files/*file_path``)."""
    return Route(method, tuple(p for p in pattern.split("/") if p), handler, method not in ("GET", "HEAD"),
                 archived_ok)


def split_path(raw_path: str) -> list[str]:
    """The path's segments, each percent-decoded on its own (an encoded ``/`` stays inside its segment)."""
    return [unquote(part) for part in raw_path.split("/") if part]


def match(pattern: Sequence[str], segments: Sequence[str]) -> Args | None:
    """Binds ``segments`` to ``pattern``; a ``*name`` tail takes one or more segments joined by ``/``."""
    args: Args = {}
    for i, part in enumerate(pattern):
        if part.startswith("*"):
            if i >= len(segments):
                return None
            rest = list(segments[i:])
            if len(pattern) > i + 1:
                return None
            args[part[1:]] = "/".join(rest)
            return args
        if i >= len(segments):
            return None
        if part.startswith(":"):
            args[part[1:]] = segments[i]
        elif part != segments[i]:
            return None
    return args if len(segments) == len(pattern) else None


def find(routes: Sequence[Route], method: str, segments: Sequence[str]) -> tuple[Route, Args] | None:
    """The first route of ``method`` matching ``segments``; HEAD uses the GET routes."""
    wanted = "GET" if method == "HEAD" else method
    for candidate in routes:
        if candidate.method == wanted:
            args = match(candidate.pattern, segments)
            if args is not None:
                return candidate, args
    return None


def project_segments(segments: Sequence[str]) -> tuple[str, list[str]]:
    """Splits what follows ``/projects/`` into the project identifier and the rest of the path."""
    first = segments[0]
    if first.isdigit() or "/" in first or len(segments) < 2:
        return first, list(segments[1:])
    return f"{first}/{segments[1]}", list(segments[2:])


def visible_project(state: GitLabState, ident: str, user_id: int | None) -> ProjectRecord:
    """The project ``ident`` names if the caller may see it.

    Raises:
        ApiError: 404 Project Not Found (also for an anonymous caller and a non-public project, as GitLab).
    """
    project = state.project(ident)
    if project is None or (user_id is None and project.visibility != "public"):
        raise not_found("Project")
    return project


def check_write(chosen: Route, request: Request, project: ProjectRecord | None) -> None:
    """Refuses a writing route to anonymous callers and on archived projects."""
    if chosen.writes:
        request.require_user()
        if project is not None and project.archived and not chosen.archived_ok:
            raise FORBIDDEN
