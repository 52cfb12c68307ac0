"""``McpCommandAgent``: an external MCP-speaking agent under ``toolemu bench --agent-mcp-command``.

For each episode the env's MCP server starts on a free loopback port, at an unguessable path (one session, one
episode), and the command runs through the shell with the server's URL in ``$TOOLEMU_MCP_URL``, ``{url}`` and
``{instruction}`` in the command replaced by the shell-quoted URL and user instruction, and the instruction
(UTF-8) on its stdin. The command runs on the host, as an in-process agent would: the case's tools, not the
agent, are what is sandboxed.

The episode ends at ``final_answer`` (or the step budget), or when the command exits or deletes its session
(then it is scored as ``truncated``). A command that exits non-zero, is killed, runs past ``timeout_s``, or
exits without ever opening a session is an error record (boundary ``agent``), never a score.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import secrets
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from toolemu.bench.mcp.episode import McpEpisode
from toolemu.bench.mcp.http import McpHttpServer, SessionEpisodes
from toolemu.bench.record import EpisodeRecord
from toolemu.core.trajectory import ErrorRecord
from toolemu.envs import ToolEmuEnv

logger = logging.getLogger(__name__)

URL_ENV = "TOOLEMU_MCP_URL"
"""The environment variable holding the episode's MCP endpoint."""
URL_PLACEHOLDER = "{url}"
INSTRUCTION_PLACEHOLDER = "{instruction}"
OUTPUT_TAIL_CHARS = 2000
"""How much of the command's output (stdout and stderr) an error record keeps."""


def command_line(command: str, *, url: str, instruction: str) -> str:
    """The shell command line of one episode: the placeholders replaced by shell-quoted values.

    Examples:
        >>> command_line("agent --url {url} {instruction}", url="http://127.0.0.1:1/mcp", instruction="it's me")
        'agent --url http://127.0.0.1:1/mcp \\'it\\'"\\'"\\'s me\\''
    """
    return command.replace(URL_PLACEHOLDER, shlex.quote(url)).replace(INSTRUCTION_PLACEHOLDER,
                                                                       shlex.quote(instruction))


@dataclass(frozen=True, slots=True)
class McpCommandAgent:
    """An ``EpisodeDriver`` that runs ``command`` against the episode's MCP server."""

    command: str
    """The agent's shell command."""
    timeout_s: float
    """Wall-clock bound on the command, per episode."""

    def play(self, env: ToolEmuEnv, *, seed: int, config_hash: str, trial: int) -> EpisodeRecord:
        """Plays one episode: starts the server, runs the command until it exits, ends the episode."""
        episode = McpEpisode(env, seed=seed, config_hash=config_hash, trial=trial)
        episode.start()
        if episode.record is not None:  # the world could not be set up: no agent runs
            return episode.record
        episodes = SessionEpisodes(lambda _: episode, max_episodes=1, idle_timeout_s=self.timeout_s,
                                   close_envs=False)
        path = f"/mcp/{secrets.token_urlsafe(16)}"
        with McpHttpServer(episodes, name=f"toolemu-{env.case.id}", max_sessions=1, path=path) as server:
            failure = self._run(command_line(self.command, url=server.url, instruction=episode.instruction),
                                server.url, episode.instruction, opened=lambda: episodes.opened > 0)
            record = episode.finish(failure)
        if failure is not None and record.status != "error":  # it ended before the command failed: unscored
            return _as_error(record, failure)
        return record

    def _run(self, line: str, url: str, instruction: str, *, opened: Callable[[], bool]) -> ErrorRecord | None:
        """Runs the command line; returns why it failed, or ``None`` when it exited 0 after opening a session."""
        start = time.monotonic()
        try:
            proc = subprocess.Popen(line, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=os.environ | {URL_ENV: url},
                                    start_new_session=True)
        except OSError as e:
            return _failure(f"the agent command could not start: {e}")
        tail: collections.deque[str] = collections.deque()
        threads = [threading.Thread(target=_feed, args=(proc.stdin, instruction), daemon=True),
                   threading.Thread(target=_drain, args=(proc.stdout, tail), daemon=True)]
        for t in threads:
            t.start()
        try:
            code = proc.wait(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _kill_group(proc)
        for t in threads:
            t.join(timeout=5)
        output = "".join(tail)[-OUTPUT_TAIL_CHARS:]
        took = time.monotonic() - start
        logger.debug("agent command exited %s after %.1fs; output tail: %s", code, took, output)
        if code is None:
            return _failure(f"the agent command ran past its timeout ({self.timeout_s:g}s) and was killed", output)
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            return _failure(f"the agent command {how}", output)
        if not opened():
            return _failure("the agent command exited without opening an MCP session "
                            f"(it reads the server's URL from ${URL_ENV} or {URL_PLACEHOLDER})", output)
        return None


def _failure(message: str, output: str = "") -> ErrorRecord:
    text = f"{message}; its output ended: {output.strip()}" if output.strip() else message
    return ErrorRecord(type="AgentCommandError", message=text, boundary="agent")


def _as_error(record: EpisodeRecord, error: ErrorRecord) -> EpisodeRecord:
    """``record`` (an episode that ended before its agent failed) as an error record: kept, never scored."""
    trajectory = record.trajectory.model_copy(update={"status": "error", "error": error})
    return record.model_copy(update={"status": "error", "error": error, "evaluation": None, "reward": None,
                                     "trajectory": trajectory})


def _feed(stdin: IO[bytes] | None, text: str) -> None:
    if stdin is None:
        return
    # An agent that does not read its stdin closes it early (a broken pipe): it has the instruction from its
    # command line instead, so there is nothing to report.
    with contextlib.suppress(OSError):
        stdin.write(text.encode("utf-8"))
    with contextlib.suppress(OSError):
        stdin.close()


def _drain(stdout: IO[bytes] | None, tail: collections.deque[str]) -> None:
    """Keeps the last ``OUTPUT_TAIL_CHARS`` of the command's output (all of it is read, so it never blocks)."""
    if stdout is None:
        return
    kept = 0
    fd = stdout.fileno()
    for chunk in iter(lambda: os.read(fd, 4096), b""):
        text = chunk.decode("utf-8", "replace")
        tail.append(text)
        kept += len(text)
        while kept - len(tail[0]) > OUTPUT_TAIL_CHARS:
            kept -= len(tail.popleft())


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kills what is left of the command's process group (children it left behind), then reaps it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # no process left in the group
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
