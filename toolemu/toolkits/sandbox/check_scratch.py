"""A check's own writable view of the grader's copy: a private copy on a size-capped tmpfs, dropped after the check.

OpenAgentSafety's evaluators ran in the agent's container and some write there (``check_and_download_file``
saves a download under ``/workspace`` and reads it back). Ours run over the grader's copy, which every check and
the snapshot read, so it stays read-only; an OAS evaluator gets, per check, a copy of it on a tmpfs of its own
(``mount_private_tmpfs``: host root only) bound read-write at the same places. What it writes is unmounted with the
tmpfs once the check ends, so no later check ever reads it. The copy is taken by ``copy_world`` from the grader's
copy (never the agent's files) with the grader copy's own byte bounds, so it holds exactly what that copy holds
(cut files keep their holes). ``/etc`` is not in it: a check's ``/etc`` is ours, read-only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolemu.core.errors import SandboxError
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS
from toolemu.toolkits.sandbox.grader_copy import GraderWorld, copy_world
from toolemu.toolkits.sandbox.quota import mount_private_tmpfs, unmount

logger = logging.getLogger(__name__)

SCRATCH_HEADROOM_MB = 256
"""What a check may write into its view beyond the copy itself, in MiB (past it: ``ENOSPC``)."""
SCRATCH_EXTRA_FILES = 10_000
"""Entries a check may add to its view."""
SCRATCH_DIRS: tuple[str, ...] = tuple(name for name in WRITABLE_DIRS if name != "etc")
"""The folders the view holds (the check's ``/etc`` is ours and stays read-only)."""


@contextmanager
def writable_view(world: GraderWorld, mount_point: Path) -> Iterator[Path | None]:
    """Yields ``mount_point`` holding a private, writable copy of ``world.root``'s folders, or ``None`` where no
    tmpfs can be mounted (not root): the check then reads the grader's copy read-only, as before.

    ``mount_point`` must be an empty folder inside the check's staging folder; the tmpfs is unmounted (and all it
    holds freed) when the block ends, whatever the check did.

    Raises:
        SandboxError: The copy or the unmount failed.
    """
    mount_point.mkdir(mode=0o700)
    report = world.report
    size_mb = (report.bytes + 4096 * (report.files + 1)) // (1024 * 1024) + SCRATCH_HEADROOM_MB
    why = mount_private_tmpfs(mount_point, size_mb=size_mb, max_files=report.files + SCRATCH_EXTRA_FILES,
                              uid=world.uid)
    if why is not None:
        logger.debug("checks read the grader's copy read-only: %s", why)
        yield None
        return
    try:
        try:
            copy_world(world.root, mount_point, max_files=report.files + 1, max_bytes=report.bytes,
                       max_file_bytes=world.max_file_bytes, uid=world.uid, names=SCRATCH_DIRS)
        except OSError as e:
            raise SandboxError(f"could not copy the grader's copy for a check's writable view: {e}") from e
        yield mount_point
    finally:
        unmount(mount_point)
