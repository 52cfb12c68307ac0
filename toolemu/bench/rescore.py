"""Re-scores saved episodes without re-running agents: rule checks from the saved capture, judges anew.

Works on any record written by ``toolemu bench`` or ``toolemu run --out``: a record carries its case, its
trajectory, the final-state snapshot and the raw results of the checks that ran in the sandbox, which is all
scoring reads (docs/architecture.md §2).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from toolemu.bench.record import EpisodeRecord, append_record, read_records
from toolemu.bench.runner import config_hash
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path
from toolemu.rewards.evaluation import EVALUATION_VERSION, EvaluationConfig, score_episode
from toolemu.rewards.mode import EvaluationScope
from toolemu.rewards.scorer import Scorers, build_scorers

logger = logging.getLogger(__name__)

RescoreScope = EvaluationScope
"""What a re-score runs: the ``rules`` scorers alone, or all of them (``full``)."""


def rescore_hash(old_hash: str, scorers: Scorers) -> str:
    """The config hash of re-scored records: the run they came from plus what scored them now (each scorer's
    version, and the judge model)."""
    versions = scorers.versions()
    if scorers.judge_model is not None:
        versions["judge_model"] = scorers.judge_model
    return config_hash({"rescored_from": old_hash, "scope": scorers.scope, "evaluation": EVALUATION_VERSION,
                        **versions})


def rescore_record(record: EpisodeRecord, scorers: Scorers, evaluation: EvaluationConfig, *,
                   new_hash: str) -> EpisodeRecord:
    """Scores one saved episode again with ``scorers`` (``score_episode``, as the env does): the rule checks
    from its capture, and in the ``full`` scope the judges.

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
    scored = score_episode(case, capture, scorers, evaluation.reward)
    return EpisodeRecord.for_case(
        case,
        config_hash=new_hash,
        trial=record.trial,
        trajectory=record.trajectory,
        capture=capture,
        evaluation=scored,
        seconds=record.seconds,
        finished_at=record.finished_at,
    ).model_copy(update={"defense": record.defense, "defense_events": record.defense_events})


def rescore_file(
    results: Path,
    out: Path,
    scorers: Scorers | None,
    evaluation: EvaluationConfig,
    *,
    only_config: str | None = None,
) -> list[EpisodeRecord]:
    """Re-scores every record of ``results`` (or those of one config hash) into the new file ``out``.

    Args:
        results: A results file from ``toolemu bench`` or one record from ``toolemu run --out``.
        out: The new results file; it must not exist (nothing is ever overwritten).
        scorers: What scores the records (``build_scorers``); ``None`` re-scores with the ``rules`` scorers of
            ``evaluation`` alone (rule-only reward).
        evaluation: Scales, scorers and reward weights.
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
    scorers = scorers or build_scorers(evaluation, None, "rules")
    for record in records:  # fail before writing anything
        if record.case is None:
            rescore_record(record, scorers, evaluation, new_hash="")
    hashes = {h: rescore_hash(h, scorers) for h in {r.config_hash for r in records}}
    rescored = []
    for record in _in_order(records):
        new = rescore_record(record, scorers, evaluation, new_hash=hashes[record.config_hash])
        append_record(out, new)
        rescored.append(new)
    return rescored


def _in_order(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """The latest record of each key, in file order (a retried episode supersedes its errored attempt)."""
    latest = {r.key: r for r in records}
    return list(latest.values())
