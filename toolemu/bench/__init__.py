"""Benchmark runs: one episode (``run_episode``), a suite with concurrency and resume (``run_suite``), case
selection, and re-scoring saved episodes (``rescore_file``)."""

from toolemu.bench.record import EpisodeRecord, append_record, case_hash, read_records, summarise_retries
from toolemu.bench.registration import SUITE_ENV_ID, register_suite_env
from toolemu.bench.rescore import rescore_file, rescore_record
from toolemu.bench.rollout import run_episode
from toolemu.bench.runner import config_hash, run_suite
from toolemu.bench.suite import needs_sandbox, select_cases
from toolemu.bench.suite_env import OPTION_CASE, SuiteRef, ToolEmuSuiteEnv, resolve_suite

__all__ = [
    "OPTION_CASE",
    "SUITE_ENV_ID",
    "EpisodeRecord",
    "SuiteRef",
    "ToolEmuSuiteEnv",
    "append_record",
    "case_hash",
    "config_hash",
    "needs_sandbox",
    "read_records",
    "register_suite_env",
    "rescore_file",
    "rescore_record",
    "resolve_suite",
    "run_episode",
    "run_suite",
    "select_cases",
    "summarise_retries",
]
