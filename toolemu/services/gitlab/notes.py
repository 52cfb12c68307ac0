"""Comments (notes) on issues and merge requests: the list and add routes both kinds share.

``GET <kind>/:iid/notes`` lists them, newest first (issues also take ``sort=asc``), paged;
``POST <kind>/:iid/notes`` adds one (``body``) by the requesting user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Generic

from toolemu.services.gitlab.http import Request, Response, missing, paginate
from toolemu.services.gitlab.issuable import Item
from toolemu.services.gitlab.render import note_view
from toolemu.services.gitlab.routing import Args, Ctx, Route, current_project, route
from toolemu.services.gitlab.store import GitLabState, NoteRecord, ProjectRecord, now


@dataclass(frozen=True, slots=True)
class Noteable(Generic[Item]):
    """How to find and store back one kind of record that carries notes."""

    noteable_type: str
    """GitLab's ``noteable_type``: ``Issue`` or ``MergeRequest``."""
    find: Callable[[ProjectRecord, str], Item]
    """The record with this iid in the project (404 when none)."""
    put: Callable[[GitLabState, ProjectRecord, Item], GitLabState]
    """The state with the record replaced in the project."""
    sortable: bool
    """Whether the list honours ``sort=asc`` (otherwise newest first always)."""


def list_notes(kind: Noteable[Item], ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """The record's notes, newest first (oldest first with ``sort=asc`` where sortable), paged."""
    item = kind.find(project, args["iid"])
    newest_first = not kind.sortable or request.params.text("sort", "desc") != "asc"
    notes = sorted(item.notes, key=lambda n: n.id, reverse=newest_first)
    page, headers = paginate(request, notes)
    state = ctx.store.state
    return Response.json([note_view(state, n, item.id, item.iid, kind.noteable_type) for n in page], headers=headers)


def add_note(kind: Noteable[Item], ctx: Ctx, request: Request, project: ProjectRecord, args: Args) -> Response:
    """Adds a note (``body``, required) by the requesting user; 201 with the note."""
    body = request.params.text("body")
    if not body:
        raise missing("body")
    user = request.require_user()

    def add(state: GitLabState) -> tuple[GitLabState, tuple[Item, NoteRecord]]:
        current = current_project(state, project)
        found: Item = kind.find(current, args["iid"])
        state, note_id = state.next_id("note")
        note = NoteRecord(id=note_id, body=body, author_id=user, created_at=now())
        noted: Item = found.model_copy(update={"notes": (*found.notes, note), "updated_at": now()})
        return kind.put(state, current, noted), (noted, note)

    item, note = ctx.store.change(add)
    return Response.json(note_view(ctx.store.state, note, item.id, item.iid, kind.noteable_type), 201)


def routes(prefix: str, kind: Noteable[Item]) -> tuple[Route, ...]:
    """The two note routes under ``<prefix>/:iid`` (``issues``, ``merge_requests``)."""
    return (
        route("GET", f"{prefix}/:iid/notes", partial(list_notes, kind)),
        route("POST", f"{prefix}/:iid/notes", partial(add_note, kind)),
    )
