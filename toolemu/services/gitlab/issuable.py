"""What issues and merge requests share: GitLab's list filters, fuzzy search and the edits of labels and people.

GitLab's ``search`` keeps the words of three or more characters (and quoted phrases) and matches a record when
one of its columns (title, description) contains every word, case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any, TypeVar

from toolemu.services.gitlab.http import ApiError, Request, invalid, not_found
from toolemu.services.gitlab.store import (
    GitLabState,
    IssueRecord,
    LabelRecord,
    MergeRequestRecord,
    ProjectRecord,
    now,
)

Item = TypeVar("Item", IssueRecord, MergeRequestRecord)
_QUOTED = re.compile(r'"[^"]+"')


def by_iid(items: Sequence[Item], iid: str, noun: str) -> Item:
    """The item whose project-level ``iid`` is the path's (digits only); 404 ``<noun> Not Found`` when none."""
    found = next((i for i in items if iid.isdigit() and i.iid == int(iid)), None)
    if found is None:
        raise not_found(noun)
    return found


def search_words(query: str) -> list[str]:
    """The words GitLab's fuzzy search requires (quoted phrases whole, words shorter than 3 dropped)."""
    quoted = _QUOTED.findall(query)
    for phrase in quoted:
        query = query.replace(phrase, "", 1)
    words = query.split() + [q[1:-1] for q in quoted]
    return [w.lower() for w in words if len(w) >= 3]


def fuzzy_match(query: str, columns: Sequence[str]) -> bool:
    """Whether GitLab's fuzzy search for ``query`` matches a record with these column values."""
    query = " ".join(query.split())
    if not query:
        return True
    words = search_words(query)
    if not words:
        return any(col.lower() == query.lower() for col in columns)
    return any(all(w in col.lower() for w in words) for col in columns)


def _users_filter(state: GitLabState, request: Request, id_param: str, name_param: str) -> tuple[str, set[int]] | None:
    """(mode, ids) for an assignee/author filter: mode ``none``, ``any`` or ``ids``; None when not filtered."""
    raw = request.params.text(id_param)
    if raw is not None:
        if raw.lower() == "none":
            return "none", set()
        if raw.lower() == "any":
            return "any", set()
        if not raw.isdigit():
            raise invalid(id_param)
        return "ids", {int(raw)}
    names = request.params.items(name_param) or request.params.items(name_param + "s")
    if names:
        ids = {u.id for u in state.users if u.username.lower() in {n.lower() for n in names}}
        return "ids", ids or {-1}
    return None


def filter_items(state: GitLabState, project: ProjectRecord, items: Sequence[Item], request: Request) -> list[Item]:
    """Applies GitLab's list filters shared by issues and merge requests, then its ordering."""
    params = request.params
    out = list(items)
    wanted = params.text("state", "all") or "all"
    if wanted != "all":
        out = [i for i in out if i.state == wanted]
    query = params.text("search")
    if query:
        scopes = params.items("in") or ["title", "description"]
        columns = [s for s in scopes if s in ("title", "description")]
        out = [i for i in out if fuzzy_match(query, [getattr(i, s) or "" for s in columns])]
    iids = params.integers("iids")
    if iids:
        out = [i for i in out if i.iid in iids]
    labels = params.items("labels")
    if labels:
        if [x.lower() for x in labels] == ["none"]:
            out = [i for i in out if not i.labels]
        elif [x.lower() for x in labels] == ["any"]:
            out = [i for i in out if i.labels]
        else:
            out = [i for i in out if all(x in i.labels for x in labels)]
    milestone = params.text("milestone")
    if milestone:
        ids = {m.id for m in project.milestones if m.title == milestone}
        if milestone.lower() == "none":
            out = [i for i in out if i.milestone_id is None]
        elif milestone.lower() == "any":
            out = [i for i in out if i.milestone_id is not None]
        else:
            out = [i for i in out if i.milestone_id in ids]
    assignee = _users_filter(state, request, "assignee_id", "assignee_username")
    if assignee is not None:
        mode, ids = assignee
        out = [i for i in out if (mode == "none" and not i.assignee_ids) or (mode == "any" and i.assignee_ids)
               or (mode == "ids" and ids & set(i.assignee_ids))]
    author = _users_filter(state, request, "author_id", "author_username")
    if author is not None:
        out = [i for i in out if i.author_id in author[1]]
    for param, field, before in (("created_after", "created_at", False), ("created_before", "created_at", True),
                                 ("updated_after", "updated_at", False), ("updated_before", "updated_at", True)):
        bound = params.text(param)
        if bound:
            out = [i for i in out if (getattr(i, field) < bound) == before]
    order = params.text("order_by", "created_at") or "created_at"
    if order not in ("created_at", "updated_at", "title", "due_date", "priority", "label_priority", "relative_position",
                     "popularity", "milestone_due", "merged_at"):
        raise ApiError(400, {"error": "order_by does not have a valid value"})
    key = order if order in ("created_at", "updated_at", "title") else "created_at"
    out.sort(key=lambda i: (getattr(i, key), i.id), reverse=(params.text("sort", "desc") != "asc"))
    return out


def ensure_labels(
    state: GitLabState, project: ProjectRecord, names: Sequence[str],
) -> tuple[GitLabState, ProjectRecord]:
    """Creates the labels of ``names`` the project lacks (GitLab does so when an issue names them)."""
    have = {label.name for label in project.labels}
    added = list(project.labels)
    for name in names:
        if name not in have:
            state, lid = state.next_id("label")
            added.append(LabelRecord(id=lid, name=name))
            have.add(name)
    return state, project.model_copy(update={"labels": tuple(added)})


def label_edit(current: Sequence[str], request: Request) -> tuple[str, ...] | None:
    """The labels after ``labels`` (replace), ``add_labels`` and ``remove_labels``; None when none is given."""
    params = request.params
    if not any(params.has(p) for p in ("labels", "add_labels", "remove_labels")):
        return None
    labels = list(params.items("labels") or []) if params.has("labels") else list(current)
    for name in params.items("add_labels") or []:
        if name not in labels:
            labels.append(name)
    removed = set(params.items("remove_labels") or [])
    return tuple(x for x in labels if x not in removed)


def assignee_edit(state: GitLabState, request: Request) -> tuple[int, ...] | None:
    """The assignees from ``assignee_ids`` or ``assignee_id`` (``0``/empty unassigns); None when not given."""
    params = request.params
    if params.has("assignee_ids"):
        raw: Any = params.raw("assignee_ids")
        ids = [int(v) for v in raw] if isinstance(raw, list) and all(str(v).isdigit() for v in raw) else \
            (params.integers("assignee_ids") or [])
    elif params.has("assignee_id"):
        ids = [params.integer("assignee_id") or 0]
    else:
        return None
    return tuple(i for i in dict.fromkeys(ids) if i and state.user(i) is not None)


def milestone_edit(project: ProjectRecord, request: Request) -> tuple[bool, int | None]:
    """(given, milestone id) from ``milestone_id``; an id the project lacks is dropped, as GitLab does."""
    if not request.params.has("milestone_id"):
        return False, None
    value = request.params.integer("milestone_id")
    return True, value if any(m.id == value for m in project.milestones) else None


def due_date(request: Request) -> tuple[bool, str | None]:
    """(given, date) from ``due_date`` (``YYYY-MM-DD``; empty clears)."""
    if not request.params.has("due_date"):
        return False, None
    text = request.params.text("due_date") or ""
    if not text:
        return True, None
    try:
        return True, date.fromisoformat(text[:10]).isoformat()
    except ValueError as e:
        raise invalid("due_date") from e


def in_scope(item: IssueRecord | MergeRequestRecord, scope: str | None, user: int) -> bool:
    """Whether an instance-level list's ``scope`` (``all``, ``created_by_me``, ``assigned_to_me``) keeps it."""
    return scope == "all" or (scope == "created_by_me" and item.author_id == user) or (
        scope == "assigned_to_me" and user in item.assignee_ids
    )


def edit_common(
    state: GitLabState, project: ProjectRecord, item: IssueRecord | MergeRequestRecord, request: Request,
    user: int, update: dict[str, Any], *, due: bool,
) -> tuple[GitLabState, ProjectRecord]:
    """Adds to ``update`` what an edit of an issue or merge request shares, in GitLab's order: ``state_event``,
    assignees, milestone, ``due_date`` (when ``due``), labels (creating the project's missing ones)."""
    event = request.params.text("state_event")
    if event == "close" and item.state == "opened":
        update.update(state="closed", closed_at=now(), closed_by_id=user)
    elif event == "reopen" and item.state == "closed":
        update.update(state="opened", closed_at=None, closed_by_id=None)
    assignees = assignee_edit(state, request)
    if assignees is not None:
        update["assignee_ids"] = assignees
    given, milestone = milestone_edit(project, request)
    if given:
        update["milestone_id"] = milestone
    if due:
        given, due_on = due_date(request)
        if given:
            update["due_date"] = due_on
    labels = label_edit(item.labels, request)
    if labels is not None:
        state, project = ensure_labels(state, project, labels)
        update["labels"] = labels
    return state, project
