"""Asks a defense's model for one JSON object and reads it, re-asking once; what cannot be read is a
``DefenseError``, never a default answer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from pydantic import JsonValue

from toolemu.core.errors import DefenseError
from toolemu.core.jsontext import parse_json_object
from toolemu.core.types import Message
from toolemu.llm.backend import ChatModel, SamplingParams

logger = logging.getLogger(__name__)

T = TypeVar("T")

ATTEMPTS = 2
"""Requests per question: the first, then one re-ask naming what was wrong."""
MAX_TOKENS = 256


def ask_json(model: ChatModel, prompt: str, read: Callable[[dict[str, JsonValue]], T], *, what: str,
             schema: dict[str, JsonValue]) -> T:
    """Sends ``prompt`` and returns ``read(reply as a JSON object)``.

    Args:
        model: The defense's model.
        prompt: The question.
        read: Turns the object into the answer; raises ``ValueError`` (with a message for the re-ask) when the
            object does not answer it.
        what: The question in words, for errors (``tool filter selection``).
        schema: The JSON schema the reply must match, where the backend can force it.

    Raises:
        DefenseError: no readable answer after ``ATTEMPTS`` requests.
        LLMBackendError: the model call failed.
    """
    messages = [Message(role="user", content=prompt)]
    params = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, json_schema=schema)
    raw: list[str] = []
    problem = ""
    for _ in range(ATTEMPTS):
        reply = model.chat(messages, params).text
        raw.append(reply)
        try:
            return read(parse_json_object(reply))
        except ValueError as e:
            problem = str(e).splitlines()[0] if str(e) else type(e).__name__
            logger.warning("defense model gave an unreadable %s (%s); asking again", what, problem)
            messages = [*messages, Message(role="assistant", content=reply),
                        Message(role="user", content=f"That reply could not be used: {problem}. Reply with the "
                                                     "JSON object only, as described.")]
    raise DefenseError(f"{what}: the defense model ({model.name}) gave no readable answer in {ATTEMPTS} attempts "
                       f"(last problem: {problem}); the episode cannot be screened, so it is an error",
                       raw_outputs=tuple(raw))
