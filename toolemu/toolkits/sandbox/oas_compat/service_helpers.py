"""OpenAgentSafety's service helpers (GitLab, ownCloud, Plane) over HTTP to the episode's emulated services.

Re-exported by ``common``; a bare module beside it on the evaluator's ``sys.path``. Each helper sends what
upstream's sends (URL, method, headers, auth, parameters) and reads the answer as upstream's does, including
upstream's defects: ``make_gitlab_request`` with an int project id raises ``TypeError`` inside the helper (upstream
tests ``'/' in project_identifier``), which three evaluators swallow and so always score 0; here that ``TypeError``
is also recorded (``common.swallowed_exceptions``) so the case is flagged, and the score stays upstream's.

Two deviations, both so that a failed service is never read as a verdict: (1) the address each service host
name resolves to is pinned by the host (``set_service_addresses``, or ``TOOLEMU_OAS_SERVICES`` in the
environment), so an agent that edits ``/etc/hosts`` or squats a port cannot redirect the grader; (2) a request that
cannot reach its service, gets a server error (500, 502-504: the emulator failed; ownCloud's 501 and 507 are
answers), or meets an endpoint the emulator lacks (``X-Toolemu-Gap``) raises
``ServiceFailure``, a ``BaseException`` that upstream's ``except Exception`` blocks (and ``grader``) do not
swallow: the check becomes an error instead of a score.
"""

# ruff: noqa: F403, F405

from __future__ import annotations

import json
import logging
import os
import re
import urllib.parse
import xml.etree.ElementTree as ET
from typing import Any

if __package__:  # imported as part of toolemu (tests, tooling)
    from .config import *
else:  # a bare module on the evaluator's sys.path, as upstream
    from config import *  # type: ignore[import-not-found,no-redef,unused-ignore]

try:
    import requests  # type: ignore[import-untyped,unused-ignore]
    from requests.auth import HTTPBasicAuth  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # only without the OAS Python environment
    requests = None  # type: ignore[assignment,unused-ignore]

logger = logging.getLogger("common")

TIMEOUT_S = 30.0
"""Upper bound on one request to a service (upstream sets none; a hung service must not hang the grader)."""
GAP_HEADER = "X-Toolemu-Gap"
_FAILED = frozenset({500, 502, 503, 504})

_ADDRESSES: dict[str, str] = {}
_DEFECTS: list[str] = []


class ServiceFailure(BaseException):
    """A service helper could not get an answer from its emulated service (an infra failure, not a verdict)."""


def set_service_addresses(addresses: dict[str, str]) -> None:
    """Pins where each ``host:port`` of the services is reached (``{"the-agent-company.com:8092": "10.0.2.1:8092"}``);
    hosts not listed resolve as usual."""
    _ADDRESSES.clear()
    _ADDRESSES.update({str(k).lower(): str(v) for k, v in (addresses or {}).items()})


def defect_records() -> list[str]:
    """One line per upstream defect a helper reproduced (read by ``common.swallowed_exceptions``)."""
    return list(_DEFECTS)


if os.environ.get("TOOLEMU_OAS_SERVICES"):  # setup scripts run as programs get the map this way
    set_service_addresses(json.loads(os.environ["TOOLEMU_OAS_SERVICES"]))


def _send(service: str, method: str, url: str, **kwargs: Any) -> Any:
    """``requests.request`` to the pinned address of ``url``'s host; raises ``ServiceFailure`` (see module)."""
    if requests is None:
        raise ServiceFailure(f"{service}: the requests library is missing from the evaluator's environment")
    parts = urllib.parse.urlsplit(url)
    headers = dict(kwargs.pop("headers", None) or {})
    pinned = _ADDRESSES.get(parts.netloc.lower())
    if pinned is not None:
        headers.setdefault("Host", parts.netloc)
        url = urllib.parse.urlunsplit(parts._replace(netloc=pinned))
    try:
        response = requests.request(method, url, headers=headers, timeout=TIMEOUT_S, allow_redirects=False,
                                    **kwargs)
    except requests.RequestException as e:
        raise ServiceFailure(f"{service} unreachable: {method} {url}: {type(e).__name__}: {e}") from None
    if response.status_code in _FAILED or response.headers.get(GAP_HEADER):
        what = "not emulated" if response.headers.get(GAP_HEADER) else f"HTTP {response.status_code}"
        raise ServiceFailure(f"{service}: {method} {url}: {what}: {response.text[:300]}")
    return response


# ---- GitLab ----


def make_gitlab_request(project_identifier: str | None = None, additional_path: str | None = None,
                        method: str = "GET", params: dict[str, Any] | None = None) -> Any:
    """``{GITLAB_BASEURL}/api/v4[/projects/<id or url-encoded path>][/<additional_path>]`` with the root token."""
    url = f"{GITLAB_BASEURL}/api/v4"
    if project_identifier:
        try:
            if "/" in project_identifier:  # upstream's test: an int id raises TypeError here
                project_identifier = urllib.parse.quote(project_identifier, safe="")
        except TypeError as e:
            line = (f"make_gitlab_request: TypeError: {e} (upstream defect: project id {project_identifier!r} "
                    "is an int; OAS's helper raises here, so this check scores as upstream)")
            logger.warning(line)
            _DEFECTS.append(line[:500])
            raise
        url = f"{url}/projects/{project_identifier}"
    if additional_path:
        url = f"{url}/{additional_path}"
    return _send("gitlab", method, url, headers=GITLAB_HEADERS, params=params)


def get_gitlab_project_id(project_name: str) -> str | None:
    """The id (as a string) of the first GitLab project named ``project_name``, else ``None``."""
    projects = make_gitlab_request(None, "projects")
    if not projects:
        logger.warning("No gitlab projects found")
        return None
    found = [project["id"] for project in projects.json() if project["name"] == project_name]
    if not found:
        logger.warning("No gitlab projects found for project name %s", project_name)
        return None
    return str(found[0])


def get_gitlab_merge_request_by_title(project_id: str, merge_request_title: str) -> dict[str, Any] | None:
    """The first merge request of ``project_id`` whose title matches (case- and space-insensitive)."""
    merge_requests = make_gitlab_request(project_id, "merge_requests")
    if not merge_requests:
        logger.warning("No gitlab merge requests found")
        return None
    wanted = merge_request_title.strip().lower()
    found = [mr for mr in merge_requests.json() if mr["title"].strip().lower() == wanted]
    return found[0] if found else None


def get_gitlab_file_in_mr(mr: dict[str, Any], file_path: str) -> str | None:
    """The text of ``file_path`` at the merge request's head commit."""
    path = f"repository/files/{urllib.parse.quote(file_path, safe='')}/raw?ref={mr['sha']}"
    response = make_gitlab_request(str(mr["project_id"]), path)
    return response.text if response else None


# ---- ownCloud ----


def _auth() -> Any:
    return HTTPBasicAuth(OWNCLOUD_USERNAME, OWNCLOUD_PASSWORD)


def _hrefs(text: str) -> list[str]:
    root = ET.fromstring(text)
    return [el.find("{DAV:}href").text or "" for el in root.findall(".//{DAV:}response")]  # type: ignore[union-attr]


def check_file_in_owncloud_directory(file_name: str, dir_name: str) -> bool | None:
    """``PROPFIND {OWNCLOUD_URL}/remote.php/webdav/<dir_name>`` (Depth 1): whether an href contains ``file_name``;
    ``None`` when the answer is not a 207 multistatus."""
    response = _send("owncloud", "PROPFIND", f"{OWNCLOUD_URL}/remote.php/webdav/{dir_name}",
                     headers={"Depth": "1"}, auth=_auth())
    if response.status_code != 207:
        logger.error("Error: %s, %s", response.status_code, response.text[:300])
        return None
    return any(file_name in href for href in _hrefs(response.text))


def get_binary_file_content_owncloud(file_name: str, dir_name: str) -> bytes | None:
    """``GET {OWNCLOUD_URL}/remote.php/webdav/<dir_name>/<file_name>``: the bytes on 200, else ``None``."""
    response = _send("owncloud", "GET", f"{OWNCLOUD_URL}/remote.php/webdav/{dir_name}/{file_name}", auth=_auth())
    return bytes(response.content) if response.status_code == 200 else None


def check_and_download_file(file_name: str, dir_name: str, output_file_path: str) -> bool:
    """PROPFIND ``<dir_name>/`` for ``file_name``; when found, GET it into ``output_file_path``."""
    server_url = f"{OWNCLOUD_URL}/remote.php/webdav/{dir_name.strip('/')}/"
    response = _send("owncloud", "PROPFIND", server_url, headers={"Depth": "1"}, auth=_auth())
    if response.status_code != 207:
        logger.error("Error checking directory. HTTP Status: %s", response.status_code)
        return False
    if not any(file_name in href for href in _hrefs(response.text)):
        logger.warning("File '%s' not found in directory '%s'.", file_name, dir_name)
        return False
    download = _send("owncloud", "GET", server_url + file_name, auth=_auth(), stream=True)
    if download.status_code != 200:
        logger.error("Failed to download file '%s'. HTTP Status: %s", file_name, download.status_code)
        return False
    with open(output_file_path, "wb") as f:
        for chunk in download.iter_content(chunk_size=8192):
            f.write(chunk)
    return True


def download_owncloud_content(link: str, output_file_path: str) -> bool:
    """Downloads a share link (its page's ``download`` link when the link is a page) into ``output_file_path``."""
    if not link:
        return False
    link = link.rstrip("\n")
    if "download" not in link:
        page = _send("owncloud", "GET", link)
        matches = re.findall(r'https?://[^\s]*\bdownload\b[^\s]*(?=")', page.text, re.MULTILINE)
        if not matches:
            logger.warning("Did not find proper download link")
            return False
        link = matches[0]
    response = _send("owncloud", "GET", link)
    with open(output_file_path, "wb") as f:
        f.write(response.content)
    return True


# ---- Plane ----


def _plane(path: str, method: str = "GET", **kwargs: Any) -> Any:
    url = f"{PLANE_BASEURL}/api/v1/workspaces/{PLANE_WORKSPACE_SLUG}/{path}"
    return _send("plane", method, url, headers=PLANE_HEADERS, **kwargs)


def _plane_results(path: str, what: str) -> list[dict[str, Any]]:
    response = _plane(path)
    try:
        response.raise_for_status()
        return list(response.json().get("results", []))
    except Exception as e:  # upstream: any failure gives an empty list
        logger.warning("%s failed: %s", what, e)
        return []


def get_all_plane_projects() -> list[dict[str, Any]]:
    """Every project of the workspace (``results`` of ``GET .../projects/``); empty on an error answer."""
    return _plane_results("projects/", "Get all projects")


def get_plane_project_id(project_name: str) -> str | None:
    """The id of the project named ``project_name``; ``None`` when absent or on an error answer."""
    for project in _plane_results("projects/", "Get project id"):
        if project.get("name") == project_name:
            return str(project.get("id"))
    logger.info("Project with name '%s' not found.", project_name)
    return None


def get_plane_project_all_issues(project_id: str) -> list[dict[str, Any]]:
    """The issues of a project (``GET .../projects/<id>/issues``); empty on an error answer."""
    return _plane_results(f"projects/{project_id}/issues", "Get issues")


def get_plane_state_id_dict(project_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """(state name -> id, id -> state name) of a project; two empty dicts on an error answer."""
    response = _plane(f"projects/{project_id}/states/")
    try:
        response.raise_for_status()
        states = response.json().get("results", [])
    except Exception as e:
        logger.warning("Get project id failed: %s", e)
        return {}, {}
    return {s["name"]: s["id"] for s in states}, {s["id"]: s["name"] for s in states}


def get_plane_issue_details(project_id: str, issue_name: str) -> dict[str, Any] | None:
    """The issue of a project named ``issue_name``, else ``None``."""
    for issue in _plane_results(f"projects/{project_id}/issues/", "Get issue detail"):
        if issue.get("name") == issue_name:
            return issue
    return None


def get_plane_state_details(project_id: str, state_id: str) -> dict[str, Any]:
    """One state's object; empty on an error answer."""
    response = _plane(f"projects/{project_id}/states/{state_id}")
    return dict(response.json()) if response.ok else {}


def create_plane_issue(project_id: str, issue_name: str) -> dict[str, Any] | None:
    """Creates an issue named ``issue_name``; its object, or ``None`` on an error answer."""
    response = _plane(f"projects/{project_id}/issues/", "POST", json={"name": issue_name})
    return dict(response.json()) if response.ok else None


def get_plane_cycle_details(project_id: str, cycle_name: str) -> dict[str, Any] | None:
    """The cycle of a project named ``cycle_name`` (cycles are not emulated: this raises ``ServiceFailure``)."""
    for cycle in _plane_results(f"projects/{project_id}/cycles/", "Get cycle detail"):
        if cycle.get("name") == cycle_name:
            return cycle
    return None


def get_plane_issues_by_project_cycle(project_id: str, cycle_id: str) -> list[dict[str, Any]]:
    """The issues of a cycle (not emulated: raises ``ServiceFailure``)."""
    return _plane_results(f"projects/{project_id}/cycles/{cycle_id}/cycle-issues/", "Get cycle issues")


def add_plane_issue_to_cycle(project_id: str, cycle_id: str, issue_id: str) -> dict[str, Any] | None:
    """Adds an issue to a cycle (not emulated: raises ``ServiceFailure``)."""
    response = _plane(f"projects/{project_id}/cycles/{cycle_id}/cycle-issues/", "POST", json={"issues": [issue_id]})
    return dict(response.json()) if response.ok else None
