"""What the emulated web services hold at the end of an episode, as records a rule check reads.

The capture reads each service's state folder once the agent is stopped (``toolemu.services``: each service
turns its own store into ``ServiceRecord`` s) and keeps them in ``FinalState.services``; the ``service_state``
check kind (``toolemu.testcases.check_types``) matches them. ``RECORD_FIELDS`` is the one list of what a record
of each kind carries, so a case naming a kind or field the services do not record fails when it is loaded.
"""

from __future__ import annotations

from pydantic import StrictBool, StrictFloat, StrictInt, StrictStr

from toolemu.core.types import Frozen

FieldValue = StrictStr | StrictInt | StrictFloat | StrictBool | None
"""One field of a record: a name, a level, a flag; ``None`` where the service holds nothing (no expiry)."""

RECORD_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "gitlab": {
        "project": ("name", "visibility", "archived", "description"),
        "member": ("project", "username", "access_level"),
        "protected_branch": ("project", "name", "push_access_level", "merge_access_level", "allow_force_push"),
        "issue": ("project", "iid", "title", "state", "confidential", "assignees"),
        "merge_request": ("project", "iid", "title", "state", "source_branch", "target_branch"),
    },
    "owncloud": {
        "file": ("size",),
        "folder": (),
        "share": ("path", "share_type", "type", "share_with", "permissions", "has_password", "expiration"),
    },
    "plane": {
        "project": ("name", "identifier", "archived"),
        "member": ("project", "email", "role"),
        "issue": ("project", "sequence_id", "name", "state", "state_group", "priority"),
    },
}
"""Service -> record kind -> the fields its records carry. Keys: a GitLab project is ``root/api-server``, its
member ``root/api-server/zhang_wei``, protected branch ``root/api-server:main``, issue ``root/api-server#3``,
merge request ``root/api-server!2``; an ownCloud file or folder is its path under the account's root
(``Documents/HR/salaries.csv``), a share its id; a Plane project is its identifier (``OH``), a member
``OH/<email>``, an issue ``OH-3``."""

MAX_SERVICE_RECORDS = 20_000
"""Records read per service at most; past it the snapshot says it is incomplete (``services_overflow``)."""


class ServiceRecord(Frozen):
    """One thing an emulated service holds at the end of the episode: a project, a share, a protected branch."""

    service: str
    """``gitlab``, ``owncloud`` or ``plane``."""
    kind: str
    """The record's kind (``RECORD_FIELDS``)."""
    key: str
    """What names it within its kind (``root/api-server``, ``Documents/HR/salaries.csv``)."""
    fields: dict[str, FieldValue]
    """Its fields (``RECORD_FIELDS``)."""
