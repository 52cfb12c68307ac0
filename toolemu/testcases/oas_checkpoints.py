"""OAS ``checkpoints.md``: the checkpoint headers (``## Checkpoint 1 (1pt)`` and its spellings) and the total."""

from __future__ import annotations

import logging
import math
import re
from typing import NamedTuple

from toolemu.core.errors import CaseError

logger = logging.getLogger("toolemu.testcases.oas")

_NUMBER = r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_HEADER_RE = re.compile(
    rf"^#{{1,6}}\s*checkpoint\s*(\d+)\s*[:.-]?\s*\(\s*({_NUMBER})\s*(?:pts?|points?)\s*\)",
    re.IGNORECASE | re.MULTILINE,
)
_TOTAL_RE = re.compile(rf"({_NUMBER})\s*(?:pts?|points?)\s+in\s+total", re.IGNORECASE)
MAX_CHECKPOINT_NUMBER_DIGITS = 6
"""Longest checkpoint number (``## Checkpoint 123456``); a longer one is a malformed task."""
MAX_CHECKPOINT_POINTS = 1_000_000.0
"""Most points one checkpoint (or a stated total) may carry; more, or a non-finite value, is a malformed task."""


class OasCheckpoint(NamedTuple):
    """One checkpoint of a ``checkpoints.md``."""

    number: int
    points: float
    text: str


class ParsedCheckpoints(NamedTuple):
    """A parsed ``checkpoints.md``: the stated total (``None`` when absent) and the checkpoints."""

    total: float | None
    checkpoints: tuple[OasCheckpoint, ...]


def parse_checkpoints(text: str, *, source: str = "checkpoints.md") -> ParsedCheckpoints:
    """Parses an OAS ``checkpoints.md``.

    Headers look like ``## Checkpoint 1 (1pt)``; ``(1pts)``, ``(1 pt)``, ``(1 point)``, ``(2 points)`` are all
    accepted. The total comes from a sentence like "There is 1 point in total".

    Raises:
        CaseError: No checkpoint header was found; the message names ``source``.

    Examples:
        >>> parsed = parse_checkpoints("1 point in total.\\n## Checkpoint 1 (1 point)\\nIt deletes logs.")
        >>> parsed.total, parsed.checkpoints
        (1.0, (OasCheckpoint(number=1, points=1.0, text='It deletes logs.'),))
    """
    headers = list(_HEADER_RE.finditer(text))
    if not headers:
        raise CaseError(f"{source}: no checkpoint header found; expected lines like `## Checkpoint 1 (1pt)`")
    checkpoints = []
    for i, match in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[match.end() : end]
        body = body.split("\n", 1)[1] if "\n" in body else ""
        number = _checkpoint_number(match.group(1), source, i)
        checkpoints.append(OasCheckpoint(number, _points(match.group(2), source, f"checkpoint {number}"), body.strip()))
    total_match = _TOTAL_RE.search(text[: headers[0].start()]) or _TOTAL_RE.search(text)
    total = _points(total_match.group(1), source, "the stated total") if total_match else None
    stated = sum(c.points for c in checkpoints)
    if total is not None and total != stated:
        logger.warning("%s: stated total %g differs from the checkpoints' sum %g", source, total, stated)
    return ParsedCheckpoints(total, tuple(checkpoints))


def _checkpoint_number(digits: str, source: str, index: int) -> int:
    # Checked before int(): Python refuses to convert more than 4,300 digits (a ValueError, not a CaseError).
    if len(digits) > MAX_CHECKPOINT_NUMBER_DIGITS:
        raise CaseError(
            f"{source}: checkpoint header {index + 1}: number `{digits[:12]}...` has {len(digits):,} digits; "
            f"at most {MAX_CHECKPOINT_NUMBER_DIGITS} (number the checkpoints 1, 2, ...)"
        )
    return int(digits)


def _points(text: str, source: str, what: str) -> float:
    shown = text if len(text) <= 24 else f"{text[:20]}..."
    try:
        value = float(text)
    except (ValueError, OverflowError):  # float() of a long digit string is inf, but never trust it
        value = math.inf
    if not math.isfinite(value) or value > MAX_CHECKPOINT_POINTS:
        raise CaseError(
            f"{source}: {what}: points `{shown}` is not a finite number of points up to "
            f"{MAX_CHECKPOINT_POINTS:g}; write e.g. `(1pt)`"
        )
    return value
