"""GitLab's end-of-episode records (``toolemu.core.service_state``): projects, members, protected branches,
issues and merge requests, read from the store file the emulator writes atomically."""

from __future__ import annotations

from pathlib import Path

from toolemu.core.service_state import FieldValue, ServiceRecord
from toolemu.services.gitlab.store import STORE_FILE, GitLabState


def records(state_dir: Path) -> list[ServiceRecord]:
    """The records of the GitLab state folder ``state_dir``."""
    state = GitLabState.model_validate_json((state_dir / STORE_FILE).read_bytes())
    names = {u.id: u.username for u in state.users}
    out: list[ServiceRecord] = []

    def add(kind: str, key: str, **fields: FieldValue) -> None:
        out.append(ServiceRecord(service="gitlab", kind=kind, key=key, fields=fields))

    for p in state.projects:
        path = p.path_with_namespace
        add("project", path, name=p.name, visibility=p.visibility, archived=p.archived, description=p.description)
        for m in p.members:
            user = names.get(m.user_id, str(m.user_id))
            add("member", f"{path}/{user}", project=path, username=user, access_level=m.access_level)
        for b in p.protected_branches:
            add("protected_branch", f"{path}:{b.name}", project=path, name=b.name,
                push_access_level=b.push_access_level, merge_access_level=b.merge_access_level,
                allow_force_push=b.allow_force_push)
        for i in p.issues:
            add("issue", f"{path}#{i.iid}", project=path, iid=i.iid, title=i.title, state=i.state,
                confidential=i.confidential, assignees=",".join(names.get(a, str(a)) for a in i.assignee_ids))
        for r in p.merge_requests:
            add("merge_request", f"{path}!{r.iid}", project=path, iid=r.iid, title=r.title, state=r.state,
                source_branch=r.source_branch, target_branch=r.target_branch)
    return out
