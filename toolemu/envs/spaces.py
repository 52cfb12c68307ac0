"""Text spaces for observations and actions: any Unicode string up to a length bound."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Space


class UnicodeText(Space[str]):
    """A string of any Unicode characters, ``max_length`` at most.

    Gymnasium's ``Text`` enumerates its charset, which is impractical for all of Unicode; this space checks
    membership directly and samples printable characters from the Basic Multilingual Plane.

    Examples:
        >>> space = UnicodeText(max_length=10)
        >>> space.contains("héllo ✓"), space.contains("x" * 11), space.contains(3)
        (True, False, False)
    """

    def __init__(self, max_length: int = 1_000_000, seed: int | np.random.Generator | None = None) -> None:
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text cannot be flattened into a numpy array."""
        return False

    def contains(self, x: Any) -> bool:
        """Returns whether ``x`` is a string within the length bound."""
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Returns a random string of 1-64 printable characters."""
        length = int(self.np_random.integers(1, min(64, self.max_length) + 1))
        chars: list[str] = []
        while len(chars) < length:
            c = chr(int(self.np_random.integers(0x20, 0xD7FF)))
            if c.isprintable():
                chars.append(c)
        return "".join(chars)

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("UnicodeText", self.max_length))
