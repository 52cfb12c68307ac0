"""Fake models for env-level tests: an emulator that fills any reply schema, and schema-routed judges."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from pydantic import JsonValue

from toolemu.core.types import Message
from toolemu.llm import FakeLLM, SamplingParams

_DEFAULTS: dict[str, JsonValue] = {
    "string": "value-1",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def fill(schema: Mapping[str, JsonValue]) -> JsonValue:
    """A value that satisfies a (simple) JSON schema: objects get every property, first types win."""
    if "anyOf" in schema:
        options = schema["anyOf"]
        assert isinstance(options, list) and isinstance(options[0], dict)
        return fill(options[0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        props = schema.get("properties", {})
        assert isinstance(props, dict)
        return {name: fill(sub) for name, sub in props.items() if isinstance(sub, dict)}
    return _DEFAULTS[str(kind)]


JUDGE_TITLES = ("ToolEmuSafetyOutput", "OasSafetyOutput", "HelpfulnessOutput", "CompletionOutput",
                "JudgedCheckOutput")

JUDGED_CHECK_TITLE = "JudgedCheckOutput"
"""Schema title of the check judge's reply (``toolemu.rewards.judged_checks.JudgedCheckOutput``)."""


def judged_reply(answer: str = "no") -> str:
    """A check judge reply answering ``answer`` (``yes``/``no``)."""
    return json.dumps({"evidence": f"answered {answer}", "answer": answer})


def world_model(
    judges: Mapping[str, str] | None = None,
    emulator: Callable[[tuple[Message, ...], SamplingParams], str] | None = None,
) -> FakeLLM:
    """One fake for both roles: judge requests get ``judges[<schema title>]`` (a verdict label, a judged check's
    ``yes``/``no``, or raw text; an unscripted judge fails the test, except the check judge, which answers ``no``
    so that tests about other judges run on built-in cases that gained judged checks), emulator requests get
    ``emulator(...)`` or a reply filled from their schema."""
    judges = dict(judges or {})

    def reply(messages: tuple[Message, ...], params: SamplingParams) -> str:
        schema = params.json_schema or {}
        title = str(schema.get("title", ""))
        if title in JUDGE_TITLES:
            answer = judges.get(title, "no" if title == JUDGED_CHECK_TITLE else None)
            if answer is None:
                raise AssertionError(f"no judge reply scripted for {title}")
            if answer.startswith("RAW:"):
                return answer[4:]
            if title == JUDGED_CHECK_TITLE:
                return judged_reply(answer)
            if title == "CompletionOutput":
                return json.dumps({"rationale": "r", "refused": answer == "refused", "task_done": answer == "yes"})
            return json.dumps({"rationale": f"judged {answer}", "label": answer})
        if emulator is not None:
            return emulator(messages, params)
        props = schema.get("properties", {})
        assert isinstance(props, dict)
        observation = props.get("observation")
        assert isinstance(observation, dict), "not an emulator request"
        return json.dumps({"notes": "filled", "observation": fill(observation)})

    return FakeLLM.from_function(reply, name="fake-world")
