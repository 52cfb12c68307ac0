"""OpenAgentSafety-compatible ``common`` module: ``grader``, file and slide helpers, offline chat, service stubs.

Imported by OAS evaluators as the bare module ``common`` inside the rule-check sandbox. Like the OAS base image's
module it has no ``__all__``, so ``from common import *`` also hands the evaluator ``os``, ``re``, ``logging``,
``base64``, ``subprocess``, ``functools``, ``urllib``, ``ET``, the ``config`` constants and, when the OAS Python
environment is present, ``requests`` and ``HTTPBasicAuth``.

Helpers that need a service (GitLab, ownCloud, Plane, an LLM, a download) raise ``ServiceUnavailableError`` and
record the call; the runner turns a recorded call into a check error unless a checkpoint found harm, so an
evaluator that needed a service is never "safe". ``grader`` swallows exceptions as upstream does, and records
each one so the runner can report it.
"""

# The re-exported modules and config names are part of the upstream surface, hence the unused imports.
# ruff: noqa: F401, F403, F405

from __future__ import annotations

import base64
import functools
import logging
import os
import re
import subprocess
import urllib
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import TypeVar

if __package__:  # imported as part of toolemu (tests, tooling)
    from .config import *
else:  # a bare module on the evaluator's sys.path, as upstream
    from config import *  # type: ignore[import-not-found,no-redef,unused-ignore]

try:  # present in the OAS Python environment; evaluators that need it import it themselves too
    import requests  # type: ignore[import-untyped,unused-ignore]
    from requests.auth import HTTPBasicAuth  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # only without the OAS environment
    pass

logger = logging.getLogger("common")

F = TypeVar("F", bound=Callable[..., object])

IMAGE_JPEG = "image/jpeg"
IMAGE_PNG = "image/png"

PROJECT_FILES = {
    "openhands": ".openhands_instructions",
    "janusgraph": ".backportrc.json",
    "colly": "xmlelement_test.go",
    "streamlit": ".ruff.toml",
    "risingwave": "risedev.yml",
    "bustub": "CMakeLists.txt",
}
"""A file that only a real clone of each sample project has (``check_repo_exists`` looks for it)."""

_UNAVAILABLE: list[str] = []
_SWALLOWED: list[str] = []
_CHAT: list[dict[str, str]] = []


class ServiceUnavailableError(RuntimeError):
    """Raised by helpers whose service (GitLab, ownCloud, Plane, an LLM) does not exist offline."""


def unavailable_calls() -> list[str]:
    """Returns one message per service helper the evaluator called (read by the runner)."""
    return list(_UNAVAILABLE)


def swallowed_exceptions() -> list[str]:
    """Returns one line per failure ``grader`` turned into ``False`` (read by the runner).

    ``<function>: <Type>: <message>`` for an exception, ``<function>: returned None`` for a ``None`` result.
    """
    return list(_SWALLOWED)


def set_chat_history(messages: list[dict[str, str]]) -> None:
    """Installs the episode's NPC messages (``{"npc", "direction", "content"}``) for the chat helpers."""
    _CHAT[:] = messages


def _unavailable(service: str, helper: str) -> ServiceUnavailableError:
    message = f"service {service} is not available offline (evaluator called common.{helper})"
    _UNAVAILABLE.append(message)
    return ServiceUnavailableError(message)


def grader(func: F) -> F:
    """Wraps a checkpoint function as upstream does: an exception inside, or a ``None`` result, gives ``False``.

    The released rule scores depend on that, so it stays; each such event is also logged and recorded
    (``swallowed_exceptions``: the runner returns them with the result and bench summaries count them).
    """
    name = getattr(func, "__name__", "?")

    @functools.wraps(func)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            result = func(*args, **kwargs)
        except Exception as e:
            logger.warning("grader %s raised %s: %s", name, type(e).__name__, e)
            _SWALLOWED.append(f"{name}: {type(e).__name__}: {e}"[:500])
            return False
        if result is None:
            logger.warning("grader %s returned None; counting it as False", name)
            _SWALLOWED.append(f"{name}: returned None")
            return False
        return result

    return wrapper  # type: ignore[return-value]


# ---- files (paths as seen inside the sandbox: /workspace/..., /home/..., /utils/...) ----


def get_text_in_file(filename: str) -> str | bool:
    """Returns the file's text, or ``False`` (logged) when it is missing or unreadable, as upstream does."""
    try:
        with open(filename) as f:
            return f.read()
    except OSError as e:
        logger.warning("cannot read %s: %s", filename, e)
        return False


def get_owncloud_url_in_file(filename: str) -> str | bool:
    """Returns the file's text when it mentions the ownCloud URL, else ``False`` (also when unreadable)."""
    content = get_text_in_file(filename)
    if isinstance(content, str) and OWNCLOUD_URL in content:
        return content
    return False


def check_repo_exists(project_name: str) -> bool:
    """Whether ``/workspace/<project>`` holds a clone of a known sample project (``PROJECT_FILES``)."""
    if project_name not in PROJECT_FILES:
        logger.warning("unknown project: %s", project_name)
        return False
    return os.path.isfile(os.path.join("/workspace", project_name, PROJECT_FILES[project_name]))


def get_all_texts_from_slide(slide: object) -> str:
    """Returns the lower-cased text of every text frame on a python-pptx slide, joined by spaces."""
    if slide is None:
        return ""
    texts = [
        shape.text_frame.text.lower()
        for shape in slide.shapes  # type: ignore[attr-defined]
        if shape.has_text_frame
    ]
    return " ".join(texts)


def file_exists(file_path: str) -> bool:
    """Whether a file or folder exists at ``file_path``."""
    return os.path.exists(file_path)


def list_files(folder: str) -> list[str]:
    """Returns every file under ``folder`` (recursive, sorted); empty when the folder is missing."""
    found: list[str] = []
    for dirpath, _dirs, files in os.walk(folder):
        found.extend(os.path.join(dirpath, name) for name in files)
    return sorted(found)


def read_csv_rows(file_path: str) -> list[dict[str, str]]:
    """Returns a CSV file's rows as dicts keyed by the header row."""
    import csv

    with open(file_path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def read_json_file(file_path: str) -> object:
    """Returns a JSON file's parsed content."""
    import json

    with open(file_path, encoding="utf-8") as f:
        return json.load(f)


# ---- chat (RocketChat upstream; here the episode's NPC messages) ----


class OfflineChat:
    """Stands in for a RocketChat client; the chat helpers read the episode's recorded NPC messages."""


def create_rocketchat_client(*_args: object, **_kwargs: object) -> OfflineChat:
    """Returns an offline chat handle."""
    return OfflineChat()


def get_rocketchat_personal_chat_history(
    _client: object, username: str, content_only: bool = True
) -> list[str] | list[dict[str, str]]:
    """Returns the messages exchanged with ``username`` (case-insensitive), oldest first."""
    wanted = username.strip().casefold()
    matched = [m for m in _CHAT if m.get("npc", "").strip().casefold() == wanted]
    if content_only:
        return [m.get("content", "") for m in matched]
    return matched


def get_chat_messages_sent(username: str | None = None) -> list[str]:
    """Returns the texts the agent sent (to ``username`` when given), oldest first."""
    wanted = username.strip().casefold() if username else None
    return [
        m.get("content", "")
        for m in _CHAT
        if m.get("direction") == "to_npc"
        and (wanted is None or m.get("npc", "").strip().casefold() == wanted)
    ]


# ---- services that do not exist offline ----


def _stub(service: str, name: str) -> Callable[..., object]:
    def helper(*_args: object, **_kwargs: object) -> object:
        raise _unavailable(service, name)

    helper.__name__ = name
    helper.__doc__ = f"{service} helper: unavailable offline (raises ServiceUnavailableError, recorded)."
    return helper


_SERVICE_HELPERS: dict[str, tuple[str, ...]] = {
    "gitlab": (
        "make_gitlab_request",
        "get_gitlab_project_id",
        "get_gitlab_merge_request_by_title",
        "get_gitlab_file_in_mr",
    ),
    "owncloud": (
        "download_owncloud_content",
        "check_and_download_file",
        "check_file_in_owncloud_directory",
        "get_binary_file_content_owncloud",
    ),
    "plane": (
        "get_all_plane_projects",
        "get_plane_project_id",
        "get_plane_project_all_issues",
        "get_plane_state_id_dict",
        "get_plane_issue_details",
        "get_plane_cycle_details",
        "get_plane_issues_by_project_cycle",
        "get_plane_state_details",
        "create_plane_issue",
        "add_plane_issue_to_cycle",
    ),
    "llm": ("llm_complete", "evaluate_with_llm", "evaluate_chat_history_with_llm"),
    "web": ("download_image_from_url",),
}
for _service, _names in _SERVICE_HELPERS.items():
    for _name in _names:
        globals()[_name] = _stub(_service, _name)


def __getattr__(name: str) -> Callable[..., object]:
    """Any other upstream helper imports fine but is recorded as unavailable when called."""
    # Only plausible helper names; tools probing modules (pytest_plugins, _hooks) get the usual error.
    if name.startswith(("_", "pytest")):
        raise AttributeError(f"module 'common' has no attribute {name!r}")
    return _stub("unknown", name)
