"""Paired comparison of two runs on the cases they share: each figure's difference with a paired bootstrap CI.

The per-episode values are the metrics' own (``EPISODE_VALUES``), so a difference is always between the same
figures ``compute_metric_set`` reports. Pairing by case (and trial) removes the between-case variance that two
independent intervals would carry: the CI is the percentile bootstrap of the per-case differences.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from toolemu.core.types import Frozen
from toolemu.rewards.evaluation import Evaluation
from toolemu.rewards.metrics import EPISODE_VALUES, BootstrapConfig, MetricValue, bootstrap_mean


class PairedDifference(Frozen):
    """One figure of run A and run B over the episodes where both have it, and B minus A."""

    metric: str
    """The ``MetricSet`` field."""
    a: MetricValue
    """Run A's figure over the paired episodes."""
    b: MetricValue
    """Run B's figure over the same episodes."""
    difference: MetricValue
    """B minus A, with the paired bootstrap CI; ``n`` is the number of pairs."""


class Comparison(Frozen):
    """Two runs compared on their shared keys (case, trial)."""

    n_shared: int
    """Keys present in both runs."""
    n_only_a: int
    """Keys only run A has (not compared)."""
    n_only_b: int
    """Keys only run B has (not compared)."""
    n_errored: int
    """Shared keys left out because either run's episode is errored or unevaluated."""
    differences: tuple[PairedDifference, ...]
    """One entry per figure that has at least one pair, in ``EPISODE_VALUES`` order."""
    bootstrap: BootstrapConfig
    """How the intervals were computed."""


def compare_evaluations(
    a: Mapping[Hashable, Evaluation | None],
    b: Mapping[Hashable, Evaluation | None],
    bootstrap: BootstrapConfig | None = None,
) -> Comparison:
    """Compares two runs episode by episode on the keys both hold.

    An errored or unevaluated episode on either side drops its key from every figure and is counted in
    ``n_errored``, never read as a value.

    Args:
        a: Run A's evaluations by key (usually ``(case_id, trial)``); ``None`` for an unevaluated episode.
        b: Run B's, keyed the same way.
        bootstrap: Resamples, confidence and seed.

    Examples:
        >>> from toolemu.rewards.verdict import SafetyVerdict
        >>> def ev(label, score):
        ...     v = SafetyVerdict(scale="oas", label=label, score=score, rationale="", raw="", version="v")
        ...     return Evaluation(status="ok", safety=(v,), reward=0.0)
        >>> a = {"x": ev("safe", 0), "y": ev("safe", 0)}
        >>> b = {"x": ev("unsafe_complete", 2), "y": ev("safe", 0), "z": ev("safe", 0)}
        >>> c = compare_evaluations(a, b)
        >>> c.n_shared, c.n_only_b
        (2, 1)
        >>> d = next(d for d in c.differences if d.metric == "unsafe_rate")
        >>> d.a.value, d.b.value, d.difference.value, d.difference.n
        (0.0, 0.5, 0.5, 2)
    """
    cfg = bootstrap if bootstrap is not None else BootstrapConfig()
    shared = [k for k in a if k in b]
    pairs: list[tuple[Evaluation, Evaluation]] = []
    errored = 0
    for key in shared:
        ea, eb = a[key], b[key]
        if ea is None or eb is None or ea.status != "ok" or eb.status != "ok":
            errored += 1
            continue
        pairs.append((ea, eb))
    differences = []
    for metric, select in EPISODE_VALUES.items():
        values = [(va, vb) for va, vb in ((select(x), select(y)) for x, y in pairs)
                  if va is not None and vb is not None]
        if not values:
            continue
        differences.append(PairedDifference(
            metric=metric,
            a=bootstrap_mean([va for va, _ in values], cfg),
            b=bootstrap_mean([vb for _, vb in values], cfg),
            difference=bootstrap_mean([vb - va for va, vb in values], cfg),
        ))
    return Comparison(
        n_shared=len(shared),
        n_only_a=sum(1 for k in a if k not in b),
        n_only_b=sum(1 for k in b if k not in a),
        n_errored=errored,
        differences=tuple(differences),
        bootstrap=cfg,
    )
