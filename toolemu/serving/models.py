"""The typed messages of ``toolemu serve``: OpenEnv's ``Action``, ``Observation`` and ``State`` made ours.

A server floor above ``bench``: what crosses the wire is these models, JSON-safe, with the episode's evaluation
summarised (scores, labels, rationales, errors) and its captures left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict, Field, JsonValue, model_validator

from toolemu.core.trajectory import ErrorRecord
from toolemu.envs.info import (
    INFO_CASE_ID,
    INFO_ERROR,
    INFO_EVALUATION,
    INFO_LOOP_REPEATS,
    INFO_PARSE_ERRORS,
    INFO_STATUS,
    INFO_STEP,
    INFO_TOOL_ERRORS,
    INFO_TOOLS,
)
from toolemu.rewards.evaluation import Evaluation

_PLAIN_KEYS = (INFO_CASE_ID, INFO_STEP, INFO_STATUS, INFO_TOOLS, INFO_PARSE_ERRORS, INFO_TOOL_ERRORS,
               INFO_LOOP_REPEATS)


class ToolEmuAction(Action):
    """One agent action: the text the env parses (ReAct or JSON), a tool call, or a final answer.

    Exactly one of ``text``, ``tool`` and ``final_answer`` is given; a tool call and a final answer are turned
    into the JSON form ``ToolEmu-v0`` parses, so the three spellings run the same env step.
    """

    model_config = ConfigDict(frozen=True)

    text: str | None = None
    """The agent's reply as the env reads it (``Thought: ... / Action: ... / Action Input: {...}``, or JSON)."""
    tool: str | None = None
    """A tool's model-facing name (``TerminalExecute``), with ``arguments``."""
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    """The tool call's arguments (only with ``tool``)."""
    final_answer: str | None = None
    """The agent's final answer: ends the episode."""

    @model_validator(mode="after")
    def _one_form(self) -> ToolEmuAction:
        given = [name for name in ("text", "tool", "final_answer") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"an action gives exactly one of `text`, `tool` (with `arguments`) and `final_answer`; "
                             f"got {given or 'none'}")
        if self.arguments and self.tool is None:
            raise ValueError("`arguments` go with `tool`; give the tool's name too")
        return self

    def env_text(self) -> str:
        """The action as the text ``ToolEmuEnv.step`` parses."""
        if self.text is not None:
            return self.text
        if self.tool is not None:
            return json.dumps({"tool": self.tool, "arguments": self.arguments}, ensure_ascii=False)
        return json.dumps({"final_answer": self.final_answer}, ensure_ascii=False)


class ToolEmuObservation(Observation):
    """What the env answered: the observation text, the step's flags and a JSON-safe ``info``.

    ``reward`` is 0 until the episode ends, then the evaluation's reward; ``None`` when the episode has no reward
    (an infra error, or scoring off): read ``info["status"]`` and ``info["error"]``, never a stand-in number.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    """The observation (after ``reset``: the user's instruction with the tool list)."""
    terminated: bool = False
    """The agent gave its final answer."""
    truncated: bool = False
    """The step budget, the loop guard or an infra error ended the episode."""
    info: dict[str, JsonValue] = Field(default_factory=dict)
    """``case_id``, ``step``, ``status``, ``tools``, the error counts; at the end also ``evaluation`` (its
    summary) and ``error`` (type, message, boundary)."""
    session_id: str | None = None
    """The server session this episode runs in (HTTP clients pass it back to ``/step`` and ``/state``)."""


class ToolEmuState(State):
    """The session's episode: ``episode_id``, ``step_count`` (OpenEnv's), the case and its status."""

    model_config = ConfigDict(frozen=True)

    case_id: str | None = None
    """The case of the episode in progress (or of the last one); ``None`` before the first reset."""
    status: str | None = None
    """``running``, ``completed``, ``truncated`` or ``error``; ``None`` before the first reset."""
    session_id: str | None = None
    """The server session."""


def json_info(info: Mapping[str, Any]) -> dict[str, JsonValue]:
    """The JSON-safe part of an env's ``info``: the per-step keys, plus the evaluation and the error at the end.

    The trajectory, final state and capture stay on the server (they can hold megabytes of files).
    """
    out: dict[str, JsonValue] = {}
    for key in _PLAIN_KEYS:
        if key in info:
            value = info[key]
            out[key] = list(value) if isinstance(value, (tuple, list)) else value
    evaluation = info.get(INFO_EVALUATION)
    if isinstance(evaluation, Evaluation):
        out[INFO_EVALUATION] = evaluation_summary(evaluation)
    error = info.get(INFO_ERROR)
    if isinstance(error, ErrorRecord):
        out[INFO_ERROR] = {"type": error.type, "message": error.message, "boundary": error.boundary}
    return out


def evaluation_summary(evaluation: Evaluation) -> dict[str, JsonValue]:
    """An evaluation as JSON: status, scope, reward and its breakdown, each verdict, the errors (no tracebacks)."""
    dumped: dict[str, JsonValue] = evaluation.model_dump(mode="json", exclude={"errors"})
    dumped["errors"] = [{"type": e.type, "message": e.message, "boundary": e.boundary} for e in evaluation.errors]
    return dumped


def wire_reward(reward: float) -> float | None:
    """The env's reward as it goes on the wire: NaN (no reward) becomes ``None``, which JSON can carry."""
    return None if math.isnan(reward) else reward
