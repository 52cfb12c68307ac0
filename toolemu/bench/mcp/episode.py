"""``McpEpisode``: one ``ToolEmuEnv`` episode played by an MCP client, one tool call at a time.

Every case tool call becomes the JSON action ``{"tool": ..., "arguments": ...}`` and ``final_answer`` the action
``{"final_answer": ...}``, each sent through ``env.step``: parsing, validation, outcomes, the loop guard, the
step budget and the capture are the env's, as for an in-process agent. The episode ends at ``final_answer``, at
the step budget or loop guard, or when the client goes away (``finish``: captured and scored as ``truncated``).
No MCP SDK here: the server calls these methods from its handlers (``toolemu.bench.mcp.server``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from toolemu.bench.mcp.tools import FINAL_ANSWER_ARGUMENT, FINAL_ANSWER_TOOL, ToolListing, tool_listings
from toolemu.bench.record import EpisodeRecord
from toolemu.bench.rollout import record_from_info, reset_error_record
from toolemu.core.errors import HOSTILE_INPUT_FAULTS, CaseError, InfraError
from toolemu.core.trajectory import ErrorRecord
from toolemu.core.types import ToolCall
from toolemu.envs import INFO_PARSE_ERRORS, INFO_TOOL_ERRORS, ToolEmuEnv
from toolemu.llm import count_retries

logger = logging.getLogger(__name__)

RecordSink = Callable[[EpisodeRecord], None]
"""Receives the episode's record once, when it ends (``toolemu mcp --out`` appends it to the results file)."""


@dataclass(frozen=True, slots=True)
class ToolReply:
    """What one MCP tool call answers."""

    text: str
    """The observation (or why nothing ran)."""
    is_error: bool
    """The call was refused or failed: the MCP result's ``isError``."""
    ended: bool
    """The episode is over after this call."""


def tool_action(name: str, arguments: dict[str, JsonValue]) -> str:
    """The env action an MCP call of a case tool becomes (the env's JSON tool-call form).

    Examples:
        >>> tool_action("TerminalExecute", {"command": "ls"})
        '{"tool":"TerminalExecute","arguments":{"command":"ls"}}'
    """
    return ToolCall(tool=name, arguments=arguments).model_dump_json()


def final_action(answer: str) -> str:
    """The env action a ``final_answer`` call becomes.

    Examples:
        >>> final_action("Done.")
        '{"final_answer": "Done."}'
    """
    return json.dumps({"final_answer": answer}, ensure_ascii=False)


class McpEpisode:
    """One episode of ``env`` for one MCP session; thread-safe (calls are played one at a time, in order).

    Args:
        env: The env (built for the case, not yet reset); the caller closes it after ``finish``.
        seed: The episode's seed.
        config_hash: The config hash its record carries.
        trial: The trial number its record carries.
        on_record: Called once with the record when the episode ends.
    """

    def __init__(self, env: ToolEmuEnv, *, seed: int | None = None, config_hash: str = "", trial: int = 0,
                 on_record: RecordSink | None = None) -> None:
        self.env = env
        self._seed, self._hash, self._trial = seed, config_hash, trial
        self._on_record = on_record
        self._lock = threading.Lock()
        self._start = time.perf_counter()
        self._retries: Counter[str] = Counter()
        self._counts = (0, 0)
        self._record: EpisodeRecord | None = None
        self._observation = ""
        self._started = False
        self.tools: tuple[ToolListing, ...] = ()
        """The tools the client is shown (set by ``start``)."""

    # -- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Resets the env; a world that cannot be set up ends the episode at once in an error record.

        Raises:
            ConfigError: a case tool is named ``final_answer``.
        """
        with self._lock:
            self._start = time.perf_counter()
            try:
                with count_retries() as retries:
                    obs, _ = self.env.reset(seed=self._seed)
            except (InfraError, CaseError) as e:
                self._retries.update(retries)
                self._end(reset_error_record(self.env, e, config_hash=self._hash, trial=self._trial,
                                             seconds=self._seconds(), llm_retries=dict(self._retries)))
                return
            self._retries.update(retries)
            self._observation = obs
            has_user = self.env.case.user is not None and self.env.models.user is not None  # as ``reset`` decides
            self.tools = tool_listings(self.env.toolbox.specs, user=has_user)
            self._started = True

    @property
    def started(self) -> bool:
        """Whether ``start`` set the episode up (a failed reset ends it instead)."""
        return self._started or self._record is not None

    @property
    def instruction(self) -> str:
        """The user's request (the case's instruction)."""
        return self.env.case.instruction

    @property
    def first_observation(self) -> str:
        """What an in-process agent is shown first (the tools rendered as text and the instruction)."""
        return self._observation

    @property
    def record(self) -> EpisodeRecord | None:
        """The record, once the episode has ended."""
        return self._record

    def finish(self, error: ErrorRecord | None = None) -> EpisodeRecord:
        """Ends the episode if it is still running and returns its record (the same one on every call).

        Without ``error`` a running episode (the client went away without ``final_answer``) is captured and
        scored as ``truncated``; with ``error`` it ends in that error, unscored.
        """
        with self._lock:
            if self._record is not None:
                return self._record
            if not self._started:  # the client left before the episode could start
                return self._end(self._error_record(error or ErrorRecord(
                    type="NotStarted", message="the episode ended before it started", boundary="infra")))
            with count_retries() as retries:
                info = self.env.abort(error) if error is not None else self.env.truncate()
            self._retries.update(retries)
            return self._end(self._from_info(info))

    # -- calls ---------------------------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any] | None) -> ToolReply:
        """Plays one MCP tool call as one env step (``final_answer`` included) and says what it answers."""
        with self._lock:
            if self._record is not None:
                return ToolReply(f"The episode has ended ({self._record.status}); no more tool calls are run.",
                                 is_error=True, ended=True)
            args = dict(arguments or {})
            if name == FINAL_ANSWER_TOOL:
                answer = args.get(FINAL_ANSWER_ARGUMENT)
                if set(args) != {FINAL_ANSWER_ARGUMENT} or not isinstance(answer, str):
                    return ToolReply(f"`{FINAL_ANSWER_TOOL}` takes one argument, `{FINAL_ANSWER_ARGUMENT}`: your "
                                     "reply to the user as a string. Nothing was recorded.", is_error=True,
                                     ended=False)
                action = final_action(answer)
            else:
                try:
                    action = tool_action(name, args)
                except HOSTILE_INPUT_FAULTS as e:  # arguments no action can hold (nested past any bound)
                    return ToolReply(f"Could not read the arguments of `{name}`: {type(e).__name__}. Send flatter "
                                     "arguments. Nothing was run.", is_error=True, ended=False)
            try:
                with count_retries() as retries:
                    obs, _, terminated, truncated, info = self.env.step(action)
            except Exception as e:  # the server's boundary: a bug in a step ends this episode, never the server
                logger.exception("episode %s: a step raised; recorded as an error", self.env.case.id)
                self._retries.update(retries)
                error = ErrorRecord.from_exception(e, "infra", "mcp tool call")
                running = self.env.trajectory().status == "running"
                self._end(self._from_info(self.env.abort(error)) if running else self._error_record(error))
                return ToolReply(f"The episode ended in an error on the server's side: {type(e).__name__}.",
                                 is_error=True, ended=True)
            self._retries.update(retries)
            counts = (int(info[INFO_PARSE_ERRORS]), int(info[INFO_TOOL_ERRORS]))
            refused = counts != self._counts
            self._counts = counts
            if not (terminated or truncated):
                return ToolReply(obs, is_error=refused, ended=False)
            record = self._end(self._from_info(info))
            return ToolReply(_ending(obs, record, self.env.max_steps), is_error=refused or record.status == "error",
                             ended=True)

    # -- internals -----------------------------------------------------------------------------------------

    def _seconds(self) -> float:
        return time.perf_counter() - self._start

    def _from_info(self, info: dict[str, Any]) -> EpisodeRecord:
        return record_from_info(self.env, info, config_hash=self._hash, trial=self._trial, seconds=self._seconds(),
                                llm_retries=dict(self._retries))

    def _error_record(self, error: ErrorRecord) -> EpisodeRecord:
        return EpisodeRecord.for_case(self.env.case, config_hash=self._hash, trial=self._trial,
                                      trajectory=self.env.trajectory(error), error=error, seconds=self._seconds(),
                                      finished_at=time.time(), llm_retries=dict(self._retries))

    def _end(self, record: EpisodeRecord) -> EpisodeRecord:
        self._record = record
        logger.info("mcp episode %s ended: %s", record.case_id, record.status)
        if self._on_record is not None:
            self._on_record(record)
        return record


def _ending(observation: str, record: EpisodeRecord, max_steps: int) -> str:
    """The text of the call that ended the episode: its observation and why nothing more runs."""
    if record.status == "completed":
        why = "Your final answer was recorded; the task is over."
    elif record.status == "truncated":
        used = len(record.trajectory.steps) >= max_steps
        reason = f"the step budget ({max_steps} steps) is used up" if used else "the same call was repeated too often"
        why = f"The task is over: {reason}. No more tool calls are run."
    else:
        what = record.error.type if record.error is not None else "error"
        why = f"The task ended in an error on the server's side ({what}); it is not scored."
    return f"{observation}\n{why}" if observation else why
