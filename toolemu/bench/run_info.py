"""What each config hash of a results file stands for, in a small JSON file beside it (``<results>.configs.json``).

Records carry only the config hash; ``toolemu bench`` writes the run description the hash was computed from
(agent model, prompt variant, emulator, judge, settings) here, so reports can name their columns. The file is
optional: a results file without it (or merged from several machines) is reported under its hashes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pydantic import JsonValue, TypeAdapter, ValidationError

from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import write_replace
from toolemu.core.types import Frozen

logger = logging.getLogger(__name__)

CONFIGS_SUFFIX = ".configs.json"


class RunInfo(Frozen):
    """One config hash's description."""

    agent: str
    """The agent's model name."""
    variant: str = ""
    """The agent's prompt variant."""
    judge: str | None = None
    """The judge model's name (``None``: rule checks only)."""
    description: dict[str, JsonValue]
    """Everything the config hash was computed from."""
    defense: str | None = None
    """The defense the agent ran behind (``None``: none)."""

    @property
    def label(self) -> str:
        """``agent (variant)``, with ``+ defense`` when there is one: how reports name the run.

        Examples:
            >>> RunInfo(agent="llama:embedded", variant="safety", description={}).label
            'llama:embedded (safety)'
            >>> RunInfo(agent="fake", description={}, defense="spotlight").label
            'fake + spotlight'
        """
        label = f"{self.agent} ({self.variant})" if self.variant else self.agent
        return f"{label} + {self.defense}" if self.defense else label


_ADAPTER = TypeAdapter(dict[str, RunInfo])


def configs_path(results: Path) -> Path:
    """The description file beside ``results``.

    Examples:
        >>> configs_path(Path("runs/results.jsonl")).as_posix()
        'runs/results.jsonl.configs.json'
    """
    return results.with_name(results.name + CONFIGS_SUFFIX)


def load_run_info(results: Path) -> dict[str, RunInfo]:
    """Reads the descriptions beside ``results``; ``{}`` when there is none.

    Raises:
        ConfigError: The file exists but is not a valid description file.
    """
    path = configs_path(results)
    if not path.is_file():
        return {}
    try:
        return _ADAPTER.validate_json(path.read_bytes())
    except ValidationError as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"{path}: not a valid run description file ({first}); remove it or fix it") from None


def save_run_info(results: Path, config_hash: str, info: RunInfo) -> None:
    """Adds (or replaces) ``config_hash``'s description beside ``results``, atomically.

    Raises:
        ConfigError: The folder does not exist, or the existing file is not valid.
    """
    known = load_run_info(results)
    if known.get(config_hash) == info:
        return
    known[config_hash] = info
    data = {k: v.model_dump(mode="json") for k, v in sorted(known.items())}
    write_replace(configs_path(results), json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
