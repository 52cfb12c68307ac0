"""ownCloud, emulated: the company drive OAS's tasks read and write (WebDAV, OCS shares, public links).

State folder: ``files/`` (the ``theagentcompany`` account's files, what WebDAV serves) and ``shares.json``.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from toolemu.services.base import PORTS, ServiceSpec
from toolemu.services.owncloud.app import make_app
from toolemu.services.owncloud.records import records

SKELETON: tuple[str, ...] = ("Documents", "Photos")
"""Folders every account's drive starts with."""


def seed(state_dir: Path, world: Any) -> None:
    """Writes the drive: the skeleton folders and the world's ownCloud files (``world.files["owncloud"]``, paths
    under the account's root such as ``Documents/Financials/budget.xlsx``).

    Raises:
        ValueError: A file path that is absolute, climbs out (``..``), or runs through a file.
    """
    files = state_dir / "files"
    files.mkdir()
    for name in SKELETON:
        (files / name).mkdir()
    placed: dict[str, bytes] = dict(getattr(world, "files", {}).get("owncloud", {}))
    for path, data in sorted(placed.items()):
        parts = PurePosixPath(path).parts
        if not parts or path.startswith("/") or any(p in ("..", ".") for p in parts):
            raise ValueError(f"ownCloud seed path {path!r} must be relative to the account's root, without '..'")
        target = files.joinpath(*parts)
        for folder in reversed(target.parents):
            if folder.is_file():
                raise ValueError(f"ownCloud seed path {path!r} runs through the file {folder.relative_to(files)}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


SPEC = ServiceSpec(name="owncloud", port=PORTS["owncloud"], seed=seed, make_app=make_app, records=records)

__all__ = ["SKELETON", "SPEC", "make_app", "seed"]
