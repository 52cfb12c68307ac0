"""Benchmark runs: one episode (``run_episode``), a suite with concurrency and resume (``run_suite``)."""

from toolemu.bench.record import EpisodeRecord, append_record, read_records
from toolemu.bench.rollout import run_episode
from toolemu.bench.runner import config_hash, run_suite

__all__ = ["EpisodeRecord", "append_record", "config_hash", "read_records", "run_episode", "run_suite"]
