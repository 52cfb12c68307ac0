"""A metrics sink for training: namespaced keys (``train/...``, ``rollout/...``) to a stream, JSONL and TensorBoard.

TensorBoard is written only when ``tensorboard`` is installed.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"


def _tensorboard_writer(folder: Path) -> Any | None:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # torch imports tensorboard lazily; it is optional
        logger.info("tensorboard is not installed; metrics go to %s only", METRICS_FILE)
        return None
    return SummaryWriter(log_dir=str(folder))


class MetricsSink:
    """Records one dict of scalars per step.

    Args:
        folder: Where ``metrics.jsonl`` (appended to, so a resumed run continues it) and TensorBoard event
            files go; ``None`` keeps nothing on disk.
        stream: Also writes one line per step here (the CLI passes stdout); ``None`` for silence.
        tensorboard: Write TensorBoard events too, when the package is installed.
    """

    def __init__(self, folder: Path | None = None, *, stream: TextIO | None = None, tensorboard: bool = True) -> None:
        self.folder = folder
        self.stream = stream
        self.history: list[dict[str, float]] = []
        """Every record written, in order (``step`` included)."""
        self._file: TextIO | None = None
        self._tb: Any | None = None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            self._file = (folder / METRICS_FILE).open("a", encoding="utf-8")
            self._tb = _tensorboard_writer(folder / "tensorboard") if tensorboard else None

    def record(self, step: int, metrics: dict[str, float]) -> None:
        """Writes ``metrics`` for ``step``; NaN values are written as ``null`` in JSONL."""
        row = {"step": float(step), **metrics}
        self.history.append(row)
        if self._file is not None:
            clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            clean["step"] = step
            self._file.write(json.dumps(clean, sort_keys=True) + "\n")
            self._file.flush()
        if self._tb is not None:
            for key, value in metrics.items():
                self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self.stream is not None:
            shown = " ".join(f"{k}={v:.4g}" for k, v in sorted(metrics.items()))
            self.stream.write(f"step {step}: {shown}\n")
            self.stream.flush()

    def close(self) -> None:
        """Closes the files."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._tb is not None:
            self._tb.close()
            self._tb = None

    def __enter__(self) -> MetricsSink:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
