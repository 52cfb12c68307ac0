"""Text embedders for the guard policy's observation: a hashing vectoriser (default) and a transformers encoder.

Both return float32 rows of unit length (a zero row for empty text), so every value lies in [-1, 1] and the
guard's observation space is a bounded ``Box``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from toolemu.core.errors import ConfigError

_TOKEN_RE = re.compile(r"[a-z0-9_]+")


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to fixed-size vectors."""

    @property
    def dim(self) -> int:
        """Length of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Returns one unit-length row per text (zeros for an empty text), shape ``(len(texts), dim)``."""
        ...


def _unit_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit.astype(np.float32)


class HashingEmbedder:
    """Lower-cased word unigrams and bigrams, hashed (BLAKE2b, so stable across processes) into ``dim`` signed
    buckets, then scaled to unit length. No vocabulary, nothing to fit, no dependency.

    Args:
        dim: Number of buckets.
        bigrams: Also hash adjacent word pairs (``permanent true`` differs from ``permanent false``).

    Examples:
        >>> e = HashingEmbedder(dim=64)
        >>> v = e.embed(['{"permanent": true}', '{"permanent": false}', ""])
        >>> v.shape, round(float(np.linalg.norm(v[0])), 5), float(abs(v[2]).sum())
        ((3, 64), 1.0, 0.0)
        >>> bool((e.embed(["same text"]) == e.embed(["same text"])).all())
        True
    """

    def __init__(self, dim: int = 256, *, bigrams: bool = True) -> None:
        if dim < 2:
            raise ConfigError(f"HashingEmbedder dim must be at least 2, got {dim}")
        self._dim = dim
        self.bigrams = bigrams

    @property
    def dim(self) -> int:
        """Number of buckets."""
        return self._dim

    def _features(self, text: str) -> list[str]:
        words = _TOKEN_RE.findall(text.lower())
        if self.bigrams:
            return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        return words

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Returns one unit-length row per text."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
                out[row, digest % self._dim] += 1.0 if (digest >> 63) & 1 else -1.0
        return _unit_rows(out)


class TransformersEmbedder:
    """Mean-pooled last hidden states of a transformers encoder (or any model with hidden states), unit length.

    Args:
        model: A local model folder, or an already loaded ``PreTrainedModel``.
        tokenizer: The tokenizer, when ``model`` is a loaded model (a folder brings its own).
        max_length: Tokens per text; longer texts are cut.
        batch_size: Texts per forward pass.

    Raises:
        ConfigError: transformers is not installed, or the folder does not hold a model.
    """

    def __init__(self, model: str | Path | Any, tokenizer: Any = None, *, max_length: int = 256,
                 batch_size: int = 16) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as e:  # pragma: no cover - the extra is installed in CI
            raise ConfigError(
                f"TransformersEmbedder needs transformers: pip install 'toolemu[transformers]' ({e})"
            ) from e
        self._torch = torch
        if isinstance(model, str | Path):
            folder = Path(model)
            if not folder.is_dir():
                raise ConfigError(f"TransformersEmbedder: {folder} is not a model folder (a local path is needed)")
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            model = AutoModel.from_pretrained(folder, local_files_only=True)
        if tokenizer is None:
            raise ConfigError("TransformersEmbedder got a loaded model without its tokenizer; pass tokenizer=")
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = batch_size
        self._dim = int(model.config.hidden_size)

    @property
    def dim(self) -> int:
        """The encoder's hidden size."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Returns one unit-length row per text (an empty text embeds as zeros)."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        torch = self._torch
        for start in range(0, len(todo), self.batch_size):
            rows = todo[start : start + self.batch_size]
            batch = self.tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                   max_length=self.max_length, return_tensors="pt")
            with torch.no_grad():
                hidden = self.model(**batch, output_hidden_states=True).hidden_states[-1]
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            out[rows] = pooled.float().numpy()
        return _unit_rows(out)
