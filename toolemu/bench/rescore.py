"""Re-scores saved episodes without re-running agents: rule checks from the saved capture, judges anew.

Works on any record written by ``toolemu bench`` or ``toolemu run --out``: a record carries its case, its
trajectory, the final-state snapshot and the raw results of the checks that ran in the sandbox, which is all
scoring reads (docs/architecture.md §2).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from toolemu.bench.record import EpisodeRecord, append_record, read_records
from toolemu.bench.runner import config_hash
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path
from toolemu.rewards.evaluation import (
    EVALUATION_VERSION,
    EvaluationConfig,
    Judges,
    evaluate_episode,
    evaluate_rules,
)

logger = logging.getLogger(__name__)

RescoreScope = Literal["rules", "full"]


def rescore_hash(old_hash: str, judges: Judges | None, scope: RescoreScope) -> str:
    """The config hash of re-scored records: the run they came from plus what scored them now."""
    versions = {}
    if judges is not None:
        parts = [*judges.safety, judges.helpfulness, *([judges.completion] if judges.completion else [])]
        versions = {j.name: j.version for j in parts}
        versions[judges.checks.name] = judges.checks.version
        versions["judge_model"] = judges.helpfulness.model.name
    return config_hash({"rescored_from": old_hash, "scope": scope, "evaluation": EVALUATION_VERSION, **versions})


def rescore_record(
    record: EpisodeRecord, judges: Judges | None, evaluation: EvaluationConfig, *, new_hash: str
) -> EpisodeRecord:
    """Scores one saved episode again: the rule checks from its capture, and (with ``judges``) the judges.

    Raises:
        ConfigError: the record does not carry its case (written by an older version).
    """
    case = record.case
    if case is None:
        raise ConfigError(
            f"record of case `{record.case_id}` (trial {record.trial}) carries no case, so it cannot be re-scored; "
            "run it again with `toolemu bench`"
        )
    capture = record.capture
    if judges is None:
        scored = evaluate_rules(case, capture, evaluation.reward)
    else:
        scored = evaluate_episode(
            case,
            capture,
            safety_judge=judges.safety,
            helpfulness_judge=judges.helpfulness,
            completion_judge=judges.completion,
            check_judge=judges.checks,
            reward_config=evaluation.reward,
            toolkit_specs=capture.toolkit_specs,
        )
    return EpisodeRecord.for_case(
        case,
        config_hash=new_hash,
        trial=record.trial,
        trajectory=record.trajectory,
        capture=capture,
        evaluation=scored,
        seconds=record.seconds,
        finished_at=record.finished_at,
    )


def rescore_file(
    results: Path,
    out: Path,
    judges: Judges | None,
    evaluation: EvaluationConfig,
    *,
    only_config: str | None = None,
) -> list[EpisodeRecord]:
    """Re-scores every record of ``results`` (or those of one config hash) into the new file ``out``.

    Args:
        results: A results file from ``toolemu bench`` or one record from ``toolemu run --out``.
        out: The new results file; it must not exist (nothing is ever overwritten).
        judges: The judges to run; ``None`` re-scores the rule checks alone (rule-only reward).
        evaluation: Scales and reward weights.
        only_config: Re-score only records with this config hash.

    Raises:
        ConfigError: ``out`` exists or is ``results``, no record matched, or a record carries no case.
    """
    check_output_path(out, flag="--out", new=True)
    records = [r for r in read_records(results, allow_truncated_tail=True)
               if only_config is None or r.config_hash == only_config]
    if not records:
        which = f" with config {only_config}" if only_config else ""
        raise ConfigError(f"{results} holds no episode record{which} to re-score")
    for record in records:  # fail before writing anything
        if record.case is None:
            rescore_record(record, judges, evaluation, new_hash="")
    scope: RescoreScope = "rules" if judges is None else "full"
    hashes = {h: rescore_hash(h, judges, scope) for h in {r.config_hash for r in records}}
    rescored = []
    for record in _in_order(records):
        new = rescore_record(record, judges, evaluation, new_hash=hashes[record.config_hash])
        append_record(out, new)
        rescored.append(new)
    return rescored


def _in_order(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """The latest record of each key, in file order (a retried episode supersedes its errored attempt)."""
    latest = {r.key: r for r in records}
    return list(latest.values())
