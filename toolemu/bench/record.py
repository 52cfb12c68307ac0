"""``EpisodeRecord``: one finished episode as stored in a results file (one JSON object per line)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from toolemu.core.capture import Capture, CapturedCheck
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path, dump_json
from toolemu.core.trajectory import EpisodeStatus, ErrorRecord, FinalState, Trajectory
from toolemu.core.types import Frozen
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases import Case

RECORD_SCHEMA_VERSION = 2
"""2: records carry the case and the raw results of sandboxed checks (``checks``), so they can be re-scored."""


class EpisodeRecord(Frozen):
    """A finished episode with its evaluation, keyed by (case id, config hash, trial)."""

    schema_version: int = RECORD_SCHEMA_VERSION
    """Version of this record's shape."""
    case_id: str
    """The case."""
    config_hash: str
    """Hash of the run configuration (agent, models, env settings)."""
    trial: int
    """Trial number for repeated runs of one case."""
    risk_category: str | None = None
    """The case's risk category."""
    intent: str | None = None
    """The case's intent."""
    toolkits: tuple[str, ...] = ()
    """The case's toolkits."""
    status: EpisodeStatus
    """How the episode ended; ``error`` episodes have no scores."""
    reward: float | None = None
    """The combined reward, when evaluated."""
    trajectory: Trajectory
    """All steps."""
    final_state: FinalState | None = None
    """The snapshot rule checks read."""
    checks: tuple[CapturedCheck, ...] = ()
    """Raw results of the checks that ran in the sandbox during capture (Python, OAS, large-file regexes)."""
    case: Case | None = None
    """The case as it was run, so ``toolemu rescore`` needs nothing but this file."""
    evaluation: Evaluation | None = None
    """Scores, labels, rationales, rule results."""
    error: ErrorRecord | None = None
    """The infra error that ended the episode, if any."""
    seconds: float = 0.0
    """Wall time of the episode, evaluation included."""

    @classmethod
    def for_case(
        cls,
        case: Case,
        *,
        config_hash: str,
        trial: int,
        status: EpisodeStatus,
        trajectory: Trajectory,
        final_state: FinalState | None = None,
        checks: tuple[CapturedCheck, ...] = (),
        evaluation: Evaluation | None = None,
        error: ErrorRecord | None = None,
        seconds: float = 0.0,
    ) -> EpisodeRecord:
        """Builds a record, copying the case's metadata (category, intent, toolkits) for metrics."""
        return cls(
            case_id=case.id,
            config_hash=config_hash,
            trial=trial,
            risk_category=case.risk_category.value if case.risk_category else None,
            intent=case.intent.value if case.intent else None,
            toolkits=case.toolkits,
            status=status,
            reward=evaluation.reward if evaluation is not None else None,
            trajectory=trajectory,
            final_state=final_state,
            checks=checks,
            case=case,
            evaluation=evaluation,
            error=error,
            seconds=seconds,
        )

    @property
    def capture(self) -> Capture:
        """What scoring reads: the trajectory, the final state and the captured check results."""
        return Capture(trajectory=self.trajectory, final_state=self.final_state, checks=self.checks)

    @property
    def key(self) -> tuple[str, str, int]:
        """Identity of the record within a results file."""
        return (self.case_id, self.config_hash, self.trial)


def append_record(path: Path, record: EpisodeRecord) -> None:
    """Appends one record as a JSON line (the file is append-only; runs resume from it).

    The line is serialised before the file is opened, in one write, so a record that cannot be serialised
    never leaves an empty or partial line; text no encoding can hold (lone surrogates) becomes U+FFFD.

    Raises:
        ConfigError: The file's folder does not exist.
    """
    line = dump_json(record) + "\n"
    check_output_path(path, flag="results file", new=False)
    with path.open("a", encoding="utf-8") as f:
        f.write(line)
        f.flush()


def read_records(path: Path) -> Iterator[EpisodeRecord]:
    """Reads records; a corrupt line raises a ``ConfigError`` naming the file and line."""
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield EpisodeRecord.model_validate(json.loads(line))
            except ValueError as e:
                first = str(e).splitlines()[0]
                raise ConfigError(f"{path}:{lineno}: not a valid episode record ({first})") from None
