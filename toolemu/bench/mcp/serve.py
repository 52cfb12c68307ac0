"""``toolemu mcp``: a case served to MCP clients, each session's episode appended to a results file as it ends.

Over stdio the process plays one episode and exits when the client disconnects; over HTTP each session plays
an episode of its own, numbered as trials after those of this config already in the file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import anyio

from toolemu.bench.mcp.episode import McpEpisode
from toolemu.bench.mcp.http import McpHttpServer, SessionEpisodes
from toolemu.bench.mcp.server import serve_stdio
from toolemu.bench.record import EpisodeRecord, append_record, drop_truncated_tail, read_records
from toolemu.bench.run_config import ResolvedRun
from toolemu.bench.run_info import save_run_info
from toolemu.envs import ToolEmuEnv
from toolemu.testcases import Case

Announce = Callable[[EpisodeRecord], None]
"""Told of each record as it is written (the CLI prints a line)."""


class ResultsSink:
    """Appends the records of one served case to ``out``, numbering trials after those already there."""

    def __init__(self, out: Path, case: Case, run_hash: str, announce: Announce | None = None) -> None:
        self.out, self.case, self.run_hash = out, case, run_hash
        self._announce = announce
        self._lock = threading.Lock()
        self.records: list[EpisodeRecord] = []
        """What this sink wrote, in order."""
        done: set[int] = set()
        if out.exists():
            drop_truncated_tail(out)
            done = {r.trial for r in read_records(out) if r.case_id == case.id and r.config_hash == run_hash}
        self.first_trial = max(done, default=-1) + 1
        """The trial number of this server's first session."""

    def __call__(self, record: EpisodeRecord) -> None:
        """Appends ``record``."""
        with self._lock:
            append_record(self.out, record)
            self.records.append(record)
        if self._announce is not None:
            self._announce(record)

    def episode(self, index: int, run: ResolvedRun, *, seed: int) -> McpEpisode:
        """The ``index``-th session's episode over a fresh env."""
        env = ToolEmuEnv(self.case, run.env_config)
        trial = self.first_trial + index
        return McpEpisode(env, seed=seed + trial, config_hash=self.run_hash, trial=trial, on_record=self)


def serve_case_stdio(case: Case, run: ResolvedRun, *, out: Path, seed: int = 0,
                     announce: Announce | None = None) -> EpisodeRecord:
    """Plays one episode of ``case`` for the MCP client on this process's stdin and stdout; returns its record
    (the run's description is saved beside ``out``, as bench saves it)."""
    save_run_info(out, run.run_hash, run.info)
    sink = ResultsSink(out, case, run.run_hash, announce)
    episode = sink.episode(0, run, seed=seed)
    try:
        episode.start()
        if episode.record is None:
            anyio.run(serve_stdio, episode)
    finally:
        episode.finish()
        episode.env.close()
    return episode.finish()


def http_server(case: Case, run: ResolvedRun, *, out: Path, port: int, max_sessions: int, idle_timeout_s: float,
                seed: int = 0, announce: Announce | None = None) -> McpHttpServer:
    """The (not yet started) HTTP server of ``case``: each session an episode, appended to ``out`` as it ends
    (the run's description is saved beside ``out``)."""
    save_run_info(out, run.run_hash, run.info)
    sink = ResultsSink(out, case, run.run_hash, announce)
    episodes = SessionEpisodes(lambda i: sink.episode(i, run, seed=seed), idle_timeout_s=idle_timeout_s)
    return McpHttpServer(episodes, name=f"toolemu-{case.id}", port=port, max_sessions=max_sessions)
