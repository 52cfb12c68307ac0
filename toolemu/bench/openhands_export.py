"""``toolemu export --openhands``: episode records as OpenHands event logs, one JSON file per episode.

Each file holds the log the episode's OAS evaluators read (``toolemu.testcases.openhands.episode_log``): a
replayed or imported run's own log, else the log written from the trajectory. So runs can be viewed and graded
by OAS-side tools (``grade_checkpoints(open(path).read())``), and ``toolemu replay`` reads them back.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from toolemu.bench.record import EpisodeRecord, RecordKey
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path, write_new
from toolemu.testcases.openhands import episode_log

logger = logging.getLogger(__name__)

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 200


class OpenHandsExport(NamedTuple):
    """What ``export_openhands`` wrote."""

    files: tuple[Path, ...]
    """One log per episode, in the records' order."""
    errored: int
    """How many of them are of episodes that ended in error (their log stops where the episode did)."""
    replaced: int
    """Records left out because a later record of the same episode (``--retry-errors``) replaces them."""


def openhands_file_name(record: EpisodeRecord) -> str:
    """The file an episode's log goes to: ``<case>__<config hash>__<case hash>__t<trial>.json``, with any
    character outside ``[A-Za-z0-9._-]`` replaced.

    Examples:
        >>> from toolemu.core.trajectory import Trajectory
        >>> record = EpisodeRecord(case_id="oas.safety-clear-space", config_hash="replay-openhands",
        ...                        case_hash="0123456789abcdef", trial=0, status="completed",
        ...                        trajectory=Trajectory(case_id="oas.safety-clear-space", instruction="i"))
        >>> openhands_file_name(record)
        'oas.safety-clear-space__replay-openhands__01234567__t0.json'
    """
    parts = (record.case_id, record.config_hash, record.case_hash[:8] or "nohash", f"t{record.trial}")
    name = "__".join(_UNSAFE_NAME.sub("_", p).strip(".") or "_" for p in parts)
    return name[:_MAX_NAME] + ".json"


def export_openhands(records: Sequence[EpisodeRecord], folder: Path) -> OpenHandsExport:
    """Writes one OpenHands log per episode into ``folder`` (new files only; the latest record of an episode
    counts). Every target is checked before the first file is written, so a clash writes nothing.

    Raises:
        ConfigError: ``folder`` does not exist or is not a folder, or one of the files exists already.
    """
    if folder.is_symlink() or not folder.is_dir():
        raise ConfigError(f"--openhands {folder}: not an existing folder; create it first or choose another one")
    latest: dict[RecordKey, EpisodeRecord] = {}
    for record in records:
        latest.pop(record.key, None)  # a later record of the episode replaces the earlier one, and its place
        latest[record.key] = record
    targets = [(folder / openhands_file_name(r), r) for r in latest.values()]
    names = [path.name for path, _ in targets]
    if len(set(names)) != len(names):
        clash = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"--openhands {folder}: two episodes would both be written to {clash}; export them "
                          "from separate results files")
    for path, _ in targets:
        check_output_path(path, flag="--openhands", new=True)
    for path, record in targets:
        write_new(path, episode_log(record.trajectory, record.openhands_log), flag="--openhands")
    logger.info("wrote %d OpenHands logs to %s", len(targets), folder)
    return OpenHandsExport(files=tuple(p for p, _ in targets), errored=sum(r.status == "error" for _, r in targets),
                           replaced=len(records) - len(targets))
