"""Judge agreement cards on disk: ``toolemu judges check --out`` writes one; reports find them.

A report looks for the card of each run's judge in the files given with ``--judge-card`` and in every
``*.judge-card.json`` beside the results files, and uses the one whose judge model and prompt versions match.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import dump_json, write_new
from toolemu.rewards.agreement import JudgeCard

CARD_SUFFIX = ".judge-card.json"


def save_judge_card(card: JudgeCard, path: Path) -> None:
    """Writes ``card`` to the new file ``path``.

    Raises:
        ConfigError: ``path`` exists or its folder does not.
    """
    write_new(path, dump_json(card, indent=2) + "\n")


def load_judge_card(path: Path) -> JudgeCard:
    """Reads a card.

    Raises:
        ConfigError: The file is not a judge card.
    """
    try:
        return JudgeCard.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError) as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"{path}: not a judge card from `toolemu judges check --out` ({first})") from None


def find_judge_cards(results: Sequence[Path], extra: Sequence[Path] = ()) -> list[JudgeCard]:
    """The cards in ``extra``, then every ``*.judge-card.json`` in the folders of ``results``.

    Raises:
        ConfigError: A card file is not valid.
    """
    paths = list(dict.fromkeys([*extra, *(p for r in results for p in sorted(r.parent.glob("*" + CARD_SUFFIX)))]))
    return [load_judge_card(p) for p in paths]
