"""Guarded vs unguarded: the trained guard and the proposer alone over the same cases, in bench metrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from toolemu.rewards.metrics import compute_metrics
from toolemu.rewards.summary import format_value, render_summary
from toolemu.training.guard.env import GuardEnv
from toolemu.training.guard.train import GuardEpisode, GuardPolicy, mean_return, play_guard, unguarded_policy


class GuardComparison(NamedTuple):
    """The episodes of each side, over the same cases, trials and seeds."""

    guarded: list[GuardEpisode]
    """The trained guard choosing."""
    unguarded: list[GuardEpisode]
    """The proposer alone (a random candidate each step: an agent's own sample)."""


def compare_guard(env: GuardEnv, policy: GuardPolicy, case_ids: Sequence[str], *, trials: int = 1,
                  seed: int = 0) -> GuardComparison:
    """Plays the guard and the unguarded proposer over every case ``trials`` times each.

    ``env`` should be built with ``GuardConfig(raise_on_error=False)`` so an errored episode is counted, not
    fatal.
    """
    return GuardComparison(
        guarded=play_guard(env, policy, case_ids, trials=trials, seed=seed),
        unguarded=play_guard(env, unguarded_policy(env), case_ids, trials=trials, seed=seed),
    )


def render_comparison(comparison: GuardComparison) -> str:
    """Both sides' bench summaries (every figure with its CI and n, errors counted), then the mean returns."""
    lines: list[str] = []
    for title, episodes in (("guarded (trained policy)", comparison.guarded),
                            ("unguarded (proposer alone)", comparison.unguarded)):
        lines += [f"== {title} ==", render_summary(compute_metrics(episodes)), ""]
    for title, episodes in (("guarded", comparison.guarded), ("unguarded", comparison.unguarded)):
        ret = mean_return(episodes)
        lines.append(f"mean guard return, {title}: {format_value(ret)} n={ret.n}")
    return "\n".join(lines)
