"""ownCloud's end-of-episode records (``toolemu.core.service_state``): the drive's files and folders, and the
shares, read from the state folder (``files/``, walked without following a link; ``shares.json``, written
atomically)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from toolemu.core.service_state import MAX_SERVICE_RECORDS, ServiceRecord
from toolemu.services.owncloud.shares import SHARE_TYPES


def records(state_dir: Path) -> list[ServiceRecord]:
    """The records of the ownCloud state folder ``state_dir`` (at most ``MAX_SERVICE_RECORDS`` + 1 files and
    folders: one more than the bound tells the reader the walk stopped)."""
    out: list[ServiceRecord] = []
    shares_file = state_dir / "shares.json"
    shares = json.loads(shares_file.read_text(encoding="utf-8"))["shares"] if shares_file.exists() else []
    for share in shares:
        kind = int(share["share_type"])
        out.append(ServiceRecord(service="owncloud", kind="share", key=str(share["id"]), fields={
            "path": str(share["path"]).lstrip("/"), "share_type": kind, "type": SHARE_TYPES.get(kind, str(kind)),
            "share_with": share.get("share_with"), "permissions": share.get("permissions"),
            "has_password": bool(share.get("password")), "expiration": share.get("expiration")}))
    pending = [(state_dir / "files", "")]
    walked = 0
    while pending and walked <= MAX_SERVICE_RECORDS:
        folder, prefix = pending.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                mode = entry.stat(follow_symlinks=False).st_mode
                path = f"{prefix}{entry.name}"
                if stat.S_ISDIR(mode):
                    out.append(ServiceRecord(service="owncloud", kind="folder", key=path, fields={}))
                    pending.append((Path(entry.path), path + "/"))
                elif stat.S_ISREG(mode):
                    size = entry.stat(follow_symlinks=False).st_size
                    out.append(ServiceRecord(service="owncloud", kind="file", key=path, fields={"size": size}))
                walked += 1
    return out
