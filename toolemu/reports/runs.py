"""Results files read as runs: one ``Run`` per config hash, labelled, with the per-episode facts reports show.

A run is every record of one config hash across the files given (files from several machines merge); of a
case and trial recorded more than once, the latest record counts (a retried episode supersedes its errored
attempt, an edited case its old record).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolemu.bench.record import EpisodeRecord, read_records
from toolemu.bench.run_info import RunInfo, load_run_info
from toolemu.core.errors import ConfigError

Verdict = Literal["safe", "unsafe", "error", "unscored"]
"""An episode's outcome as reports show it: the reward's safety decision, or why there is none."""
Disagreement = Literal["judge_safe_rules_unsafe", "judge_unsafe_rules_safe"]
"""The safety judge (first scale) and the rule checks disagree, in this direction."""


@dataclass(frozen=True, slots=True)
class Run:
    """The records of one config hash, with how to name it."""

    config_hash: str
    """The config hash."""
    label: str
    """Column name in reports: the agent and variant when known, else the config hash."""
    sources: tuple[Path, ...]
    """Files the records came from."""
    records: tuple[EpisodeRecord, ...]
    """The latest record of each (case, trial), in file order."""
    info: RunInfo | None
    """The run description, when a ``.configs.json`` beside a source has it."""
    superseded: int = 0
    """Earlier records of a case and trial that a later one replaced (retried errors, edited cases)."""

    @property
    def judge_model(self) -> str | None:
        """The judge model most of the run's evaluations name (``None`` for rule-only runs)."""
        names = Counter(r.evaluation.judge_model for r in self.records
                        if r.evaluation is not None and r.evaluation.judge_model is not None)
        return names.most_common(1)[0][0] if names else None

    @property
    def judge_versions(self) -> dict[str, str]:
        """Judge name -> version, as the run's evaluations record them."""
        versions: dict[str, str] = {}
        for r in self.records:
            if r.evaluation is not None:
                versions |= {k: v for k, v in r.evaluation.versions.items() if k != "evaluation"}
        return versions


def verdict_of(record: EpisodeRecord) -> Verdict:
    """The episode's outcome: the reward's safety decision, ``error`` (episode or evaluation failed) or
    ``unscored`` (not evaluated)."""
    ev = record.evaluation
    if record.status == "error" or (ev is not None and ev.status == "error"):
        return "error"
    if ev is None or ev.reward_breakdown is None:
        return "unscored"
    return "unsafe" if ev.reward_breakdown.unsafe else "safe"


def disagreement_of(record: EpisodeRecord) -> Disagreement | None:
    """Whether the first safety verdict and the rule checks disagree (both must exist)."""
    ev = record.evaluation
    if ev is None or not ev.safety or ev.rules is None or ev.rules.unsafe is None:
        return None
    judge_unsafe = ev.safety[0].unsafe
    if judge_unsafe == ev.rules.unsafe:
        return None
    return "judge_unsafe_rules_safe" if judge_unsafe else "judge_safe_rules_unsafe"


def error_of(record: EpisodeRecord) -> str | None:
    """The boundary of the first failure (``None`` when nothing failed)."""
    if record.error is not None:
        return record.error.boundary
    ev = record.evaluation
    if ev is not None and ev.errors:
        return ev.errors[0].boundary
    return "unevaluated" if ev is None and record.status == "error" else None


def load_runs(paths: Sequence[Path], configs: Sequence[str] = ()) -> list[Run]:
    """Reads results files into runs, one per config hash, in order of first appearance.

    Args:
        paths: Results files (``toolemu bench --out``) or single records (``toolemu run --out``).
        configs: Keep only these config hashes (all when empty).

    Raises:
        ConfigError: A file is not a results file, holds no record, or a wanted config hash is in none.
    """
    latest: dict[str, dict[tuple[str, int, str | None], EpisodeRecord]] = {}
    sources: dict[str, list[Path]] = {}
    superseded: Counter[str] = Counter()
    infos: dict[str, RunInfo] = {}
    for path in paths:
        records = list(read_records(path, allow_truncated_tail=True))
        if not records:
            raise ConfigError(f"{path}: holds no episode record; give a results file from `toolemu bench --out`")
        infos |= load_run_info(path)
        for r in records:
            if configs and r.config_hash not in configs:
                continue
            episode = (r.case_id, r.trial, r.attack)  # an attacked episode is its own, beside the unattacked one
            if latest.setdefault(r.config_hash, {}).pop(episode, None) is not None:
                superseded[r.config_hash] += 1
            latest[r.config_hash][episode] = r
            if path not in sources.setdefault(r.config_hash, []):
                sources[r.config_hash].append(path)
    missing = [c for c in configs if c not in latest]
    if missing:
        known = sorted({r.config_hash for p in paths for r in read_records(p, allow_truncated_tail=True)})
        raise ConfigError(f"--config {', '.join(missing)}: no record has this config hash; the files hold "
                          f"{', '.join(known) or 'none'}")
    labels = {h: infos[h].label if h in infos else h for h in latest}
    repeated = {lab for lab, n in Counter(labels.values()).items() if n > 1}
    return [
        Run(
            config_hash=h,
            label=f"{labels[h]} [{h}]" if labels[h] in repeated else labels[h],
            sources=tuple(sources[h]),
            records=tuple(latest[h].values()),
            info=infos.get(h),
            superseded=superseded[h],
        )
        for h in latest
    ]
