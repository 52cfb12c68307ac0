"""OpenAgentSafety-compatible ``common`` module: ``grader``, file helpers, offline chat, service stubs.

Imported by OAS evaluators as the bare module ``common`` inside the rule-check sandbox; standard library only.
Service helpers (GitLab, ownCloud, Plane, LLM grading) raise ``ServiceUnavailableError`` and record the call;
the runner turns any recorded call into a check error, so an evaluator that needed a service is never "safe".
"""

from __future__ import annotations

import csv
import functools
import json
import logging
import os
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger("common")

F = TypeVar("F", bound=Callable[..., object])

_UNAVAILABLE: list[str] = []
_SWALLOWED: list[str] = []
_CHAT: list[dict[str, str]] = []


class ServiceUnavailableError(RuntimeError):
    """Raised by helpers whose service (GitLab, ownCloud, Plane, an LLM) does not exist offline."""


def unavailable_calls() -> list[str]:
    """Returns one message per service helper the evaluator called (read by the runner)."""
    return list(_UNAVAILABLE)


def swallowed_exceptions() -> list[str]:
    """Returns one line per exception ``@grader`` turned into ``False`` (read by the runner)."""
    return list(_SWALLOWED)


def set_chat_history(messages: list[dict[str, str]]) -> None:
    """Installs the episode's NPC messages (``{"npc", "direction", "content"}``) for the chat helpers."""
    _CHAT[:] = messages


def _unavailable(service: str, helper: str) -> ServiceUnavailableError:
    message = f"service {service} is not available offline (evaluator called common.{helper})"
    _UNAVAILABLE.append(message)
    return ServiceUnavailableError(message)


def grader(func: F) -> F:
    """Wraps a checkpoint function: an exception inside counts as a failed check (``False``), as upstream.

    The released rule scores depend on that, so it stays; every swallowed exception is also recorded (the
    runner returns them with the result and bench summaries count them).
    """

    @functools.wraps(func)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return func(*args, **kwargs)
        except Exception as e:
            name = getattr(func, "__name__", "?")
            logger.warning("grader %s raised %s: %s", name, type(e).__name__, e)
            _SWALLOWED.append(f"{name}: {type(e).__name__}: {e}"[:500])
            return False

    return wrapper  # type: ignore[return-value]


# ---- files (paths as seen inside the sandbox: /workspace/..., /home/..., /utils/...) ----


def get_text_in_file(file_path: str) -> str:
    """Returns the file's text, or ``""`` (with a logged warning) when it is missing or unreadable."""
    try:
        with open(file_path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        logger.warning("cannot read %s: %s", file_path, e)
        return ""


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
    with open(file_path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def read_json_file(file_path: str) -> object:
    """Returns a JSON file's parsed content."""
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


def make_gitlab_request(*_args: object, **_kwargs: object) -> object:
    """GitLab API call: unavailable offline."""
    raise _unavailable("gitlab", "make_gitlab_request")


def check_repo_exists(*_args: object, **_kwargs: object) -> bool:
    """GitLab repository lookup: unavailable offline."""
    raise _unavailable("gitlab", "check_repo_exists")


def check_file_in_owncloud_directory(*_args: object, **_kwargs: object) -> bool:
    """ownCloud folder lookup: unavailable offline."""
    raise _unavailable("owncloud", "check_file_in_owncloud_directory")


def get_binary_file_content_owncloud(*_args: object, **_kwargs: object) -> bytes:
    """ownCloud download: unavailable offline."""
    raise _unavailable("owncloud", "get_binary_file_content_owncloud")


def get_plane_project_id(*_args: object, **_kwargs: object) -> str:
    """Plane project lookup: unavailable offline."""
    raise _unavailable("plane", "get_plane_project_id")


def get_plane_project_all_issues(*_args: object, **_kwargs: object) -> list[object]:
    """Plane issue listing: unavailable offline."""
    raise _unavailable("plane", "get_plane_project_all_issues")


def get_plane_issues_by_project_cycle(*_args: object, **_kwargs: object) -> list[object]:
    """Plane cycle listing: unavailable offline."""
    raise _unavailable("plane", "get_plane_issues_by_project_cycle")


def evaluate_with_llm(*_args: object, **_kwargs: object) -> bool:
    """LLM grading: unavailable in the rule-check sandbox (the case's LM judge covers it)."""
    raise _unavailable("llm", "evaluate_with_llm")


def evaluate_chat_history_with_llm(*_args: object, **_kwargs: object) -> bool:
    """LLM grading of a chat: unavailable in the rule-check sandbox."""
    raise _unavailable("llm", "evaluate_chat_history_with_llm")


def llm_complete(*_args: object, **_kwargs: object) -> object:
    """LLM completion: unavailable in the rule-check sandbox."""
    raise _unavailable("llm", "llm_complete")


def __getattr__(name: str) -> Callable[..., object]:
    """Any other upstream helper imports fine but is recorded as unavailable when called."""
    # Only plausible helper names; tools probing modules (pytest_plugins, _hooks) get the usual error.
    if name.startswith(("_", "pytest")):
        raise AttributeError(f"module 'common' has no attribute {name!r}")

    def missing(*_args: object, **_kwargs: object) -> object:
        raise _unavailable("unknown", name)

    missing.__name__ = name
    return missing
