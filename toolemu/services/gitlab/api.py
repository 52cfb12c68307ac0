"""The GitLab REST API's route tables, and a call into them for the web pages (one copy of every rule)."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

from toolemu.services.gitlab import (
    api_issues,
    api_merge_requests,
    api_planning,
    api_projects,
    api_protected,
    api_repository,
    api_wiki,
)
from toolemu.services.gitlab.http import Params, Request, Response, not_found
from toolemu.services.gitlab.routing import Ctx, Route, check_write, find
from toolemu.services.gitlab.store import ProjectRecord

GLOBAL_ROUTES: tuple[Route, ...] = (
    *api_projects.GLOBAL_ROUTES, *api_issues.GLOBAL_ROUTES, *api_merge_requests.GLOBAL_ROUTES,
)
PROJECT_ROUTES: tuple[Route, ...] = (
    *api_projects.PROJECT_ROUTES, *api_repository.ROUTES, *api_protected.ROUTES, *api_issues.PROJECT_ROUTES,
    *api_merge_requests.PROJECT_ROUTES, *api_planning.PROJECT_ROUTES, *api_wiki.PROJECT_ROUTES,
)


def call(
    ctx: Ctx, method: str, segments: Sequence[str], fields: Sequence[tuple[str, str]], user_id: int | None,
    project: ProjectRecord | None = None,
) -> Response:
    """Answers an API request as the REST API would (a web form's change goes through the same handler).

    Raises:
        ApiError: what the API answers with an error (403 on an archived project, 404, ...).
    """
    routes = PROJECT_ROUTES if project is not None else GLOBAL_ROUTES
    found = find(routes, method, list(segments))
    if found is None:
        raise not_found()
    chosen, args = found
    body = urlencode(list(fields)).encode()
    request = Request(method, "/api/v4/" + "/".join(segments), "",
                      Params("", body, "application/x-www-form-urlencoded"), "", user_id)
    check_write(chosen, request, project)
    result: Response = chosen.handler(ctx, request, project, args) if project is not None else \
        chosen.handler(ctx, request, args)
    return result
