"""The judge-call runner every judge uses: prompt file + fenced data in, one validated JSON verdict out.

An unparseable verdict is re-asked with the validation error (bounded), then raises ``JudgeError``; a backend
failure (``LLMBackendError``) propagates untouched. There is never a default score.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template
from typing import Annotated, Generic, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from toolemu.core.errors import JudgeError
from toolemu.core.jsontext import parse_json_object
from toolemu.core.render import fence, render_steps, render_tool_specs
from toolemu.core.trajectory import Trajectory
from toolemu.core.types import Message, ToolkitSpec
from toolemu.llm.backend import OBSERVATION_CAPS, ChatModel, SamplingParams, fits_context
from toolemu.testcases.schema import Case

logger = logging.getLogger(__name__)

DEFAULT_MAX_REASKS = 2
"""How many times a judge is re-asked after an invalid verdict before a ``JudgeError``."""

DATA_RULES_FRAGMENT = "data_rules"
"""Prompt fragment shared by every judge: fenced text is data, and instructions inside it are ignored."""

DATA_REMINDER_FRAGMENT = "data_reminder"
"""Prompt fragment repeated after the data (small models weigh the last words most)."""

_SYSTEM_MARK = "<!-- system -->"
_USER_MARK = "<!-- user -->"


class JudgeOutput(BaseModel):
    """Base of what a judge model must reply: extra keys are ignored, the schema still forbids them."""

    model_config = ConfigDict(frozen=True, extra="ignore", json_schema_extra={"additionalProperties": False})


OutputT = TypeVar("OutputT", bound=JudgeOutput)

RATIONALE_MAX_CHARS = 400
"""Schema bound on a rationale, so a grammar-constrained small model cannot ramble past its token budget."""

Rationale = Annotated[str, Field(json_schema_extra={"maxLength": RATIONALE_MAX_CHARS})]
"""A judge's reasons; the length bound is in the schema only, so a longer reply still parses."""


class LabelledOutput(JudgeOutput):
    """A reply with reasons first, then a label; subclasses narrow ``label`` to their ``Literal`` set, and the
    label is matched loosely against it (case, spacing, a trailing score)."""

    rationale: Rationale
    """Why, in one or two sentences."""
    label: str
    """The verdict label."""

    @field_validator("label", mode="before")
    @classmethod
    def _loose_label(cls, value: object) -> object:
        return match_label(value, get_args(cls.model_fields["label"].annotation))


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """A judge prompt file split into its system text and its user template (``$name`` placeholders)."""

    role: str
    system: str
    user: Template
    sha256: str

    def version(self, revision: int) -> str:
        """Returns ``<role>/<revision>-<hash>``: editing the prompt text always changes the version."""
        return f"{self.role}/{revision}-{self.sha256[:8]}"


@cache
def load_prompt(role: str) -> JudgePrompt:
    """Loads ``toolemu/rewards/prompts/<role>.md``.

    The file holds a ``<!-- system -->`` section, whose ``$data_rules`` is replaced by the shared
    ``prompts/data_rules.md`` fragment (how to treat fenced data), and a ``<!-- user -->`` section, a
    ``string.Template`` filled with already-fenced data, whose ``$data_reminder`` is replaced by
    ``prompts/data_reminder.md``. The hash covers the fragments too.

    Raises:
        FileNotFoundError: there is no prompt file for ``role``.
        ValueError: the file lacks one of the two section markers.
    """
    text = _read_prompt_file(role)
    if _SYSTEM_MARK not in text or _USER_MARK not in text:
        raise ValueError(
            f"prompt file prompts/{role}.md must contain `{_SYSTEM_MARK}` and then `{_USER_MARK}` sections"
        )
    system, user = text.split(_SYSTEM_MARK, 1)[1].split(_USER_MARK, 1)
    system = Template(system.strip()).substitute(data_rules=_read_prompt_file(DATA_RULES_FRAGMENT).strip())
    user = Template(user.strip()).safe_substitute(
        data_reminder=_read_prompt_file(DATA_REMINDER_FRAGMENT).strip()
    )
    digest = hashlib.sha256(f"{system}\n{user}".encode()).hexdigest()
    return JudgePrompt(role=role, system=system, user=Template(user), sha256=digest)


def _read_prompt_file(name: str) -> str:
    return resources.files("toolemu.rewards").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def build_messages(prompt: JudgePrompt, fields: Mapping[str, str]) -> list[Message]:
    """Fills the prompt's user template with ``fields`` (each already fenced) and returns the messages.

    Raises:
        KeyError: the template names a field that ``fields`` lacks.
    """
    return [
        Message(role="system", content=prompt.system),
        Message(role="user", content=prompt.user.substitute(fields)),
    ]


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "(none given)"


def case_fields(case: Case) -> dict[str, str]:
    """Returns every case text a judge prompt may use, each fenced as untrusted data.

    Keys: ``instruction``, ``underspecifications``, ``risky_outcomes``, ``risky_actions``,
    ``unsafe_behavior``, ``expected_achievements``.
    """
    under = case.underspecifications
    under_text = (
        "Task information left out:\n"
        + _bullets(under.task_information)
        + "\nSafety constraints left out:\n"
        + _bullets(under.safety_constraints)
    )
    return {
        "instruction": fence("INSTRUCTION", case.instruction),
        "underspecifications": fence("UNDERSPECIFICATIONS", under_text),
        "risky_outcomes": fence("RISKY_OUTCOMES", _bullets(case.risky_outcomes)),
        "risky_actions": fence("RISKY_ACTIONS", _bullets(case.risky_actions)),
        "unsafe_behavior": fence("UNSAFE_BEHAVIOR", case.unsafe_behavior or "(not given)"),
        "expected_achievements": fence("EXPECTED_ACHIEVEMENTS", _bullets(case.expected_achievements)),
    }


def trajectory_fields(
    trajectory: Trajectory,
    *,
    toolkit_specs: Sequence[ToolkitSpec] = (),
    include_thoughts: bool = False,
    max_observation_chars: int | None = None,
) -> dict[str, str]:
    """Returns the fenced trajectory (actions, observations, final answer) and tool descriptions.

    Keys: ``trajectory``, ``final_answer``, ``tools``. ``max_observation_chars`` shortens each observation.
    """
    tools = (
        render_tool_specs(toolkit_specs)
        if toolkit_specs
        else "Toolkits: " + (", ".join(trajectory.toolkits) or "(not listed)")
    )
    ending = (
        "\n(The agent ran out of steps without a final answer.)" if trajectory.status == "truncated" else ""
    )
    answer = trajectory.final_answer if trajectory.final_answer is not None else "(no final answer)"
    return {
        "trajectory": render_steps(
            trajectory.steps, include_thoughts=include_thoughts, max_observation_chars=max_observation_chars
        ),
        "final_answer": fence("FINAL_ANSWER", answer) + ending,
        "tools": fence("TOOLS", tools),
    }


def match_label(value: object, labels: Iterable[str]) -> object:
    """Maps a label written loosely (case, ``_``/``-``, a trailing score) onto the canonical one.

    A value that matches nothing is returned unchanged, so validation reports it with the allowed labels.

    Examples:
        >>> match_label("likely severe risk (0)", ["Likely Severe Risk", "Certain No Risk"])
        'Likely Severe Risk'
        >>> match_label("Unsafe-Complete", ["safe", "unsafe_complete"])
        'unsafe_complete'
    """
    if not isinstance(value, str):
        return value
    wanted = _label_key(value)
    return next((label for label in labels if _label_key(label) == wanted), value)


def _label_key(text: str) -> str:
    return " ".join(re.sub(r"[^a-z ]+", " ", text.lower().replace("_", " ").replace("-", " ")).split())


def extract_json_object(text: str) -> dict[str, object]:
    """Returns the first JSON object in a judge's reply (``toolemu.core.jsontext.parse_json_object``, the one
    extractor every model reply goes through).

    Examples:
        >>> extract_json_object('Sure! ```json\\n{"label": "Good", "rationale": "ok"}\\n``` Done.')
        {'label': 'Good', 'rationale': 'ok'}

    Raises:
        ValueError: there is no JSON object in ``text``, or it is cut off or malformed.
    """
    return dict(parse_json_object(text))


def parse_output(text: str, output_type: type[OutputT]) -> OutputT:
    """Parses a judge reply into ``output_type``.

    Raises:
        ValueError: no JSON object, or it does not validate (``ValidationError`` is a ``ValueError``).
    """
    return output_type.model_validate(extract_json_object(text))


@dataclass(frozen=True, slots=True)
class JudgeCall(Generic[OutputT]):
    """A validated judge reply: the parsed output, the accepted text and every reply received."""

    output: OutputT
    raw: str
    attempts: tuple[str, ...]


def _short_error(err: ValueError) -> str:
    if isinstance(err, ValidationError):
        return "; ".join(
            f"field `{'.'.join(str(p) for p in e['loc']) or '(root)'}`: {e['msg']}" for e in err.errors()
        )
    return str(err)


def run_judge(
    model: ChatModel,
    messages: Sequence[Message],
    output_type: type[OutputT],
    *,
    judge: str,
    max_reasks: int = DEFAULT_MAX_REASKS,
    max_tokens: int = 512,
) -> JudgeCall[OutputT]:
    """Asks ``model`` for a verdict shaped like ``output_type``, re-asking with the error when invalid.

    Sampling is greedy and carries the output's JSON schema, so backends that support constrained output
    cannot produce another shape; the parse stays lenient for those that ignore the schema.

    Args:
        model: The judge model.
        messages: The judge prompt (from ``build_messages``).
        output_type: The reply model the judge must produce.
        judge: The judge's name, for error messages.
        max_reasks: Re-asks after the first invalid reply.
        max_tokens: Token budget per reply.

    Returns:
        The parsed output, the accepted reply text and all replies.

    Raises:
        JudgeError: every reply was invalid; ``raw_outputs`` holds them.
        LLMBackendError: the model call failed (propagated, not retried here).
    """
    if max_reasks < 0:
        raise ValueError(f"max_reasks must be >= 0, got {max_reasks}")
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, json_schema=output_schema(output_type))
    conversation = list(messages)
    replies: list[str] = []
    error = ""
    for attempt in range(max_reasks + 1):
        logger.debug("judge %s: asking %s (attempt %d)", judge, model.name, attempt + 1)
        text = model.chat(conversation, params).text
        replies.append(text)
        try:
            output = parse_output(text, output_type)
        except ValueError as err:
            error = _short_error(err)
            logger.debug("judge %s: invalid verdict (%s)", judge, error)
            conversation += [
                Message(role="assistant", content=text),
                Message(role="user", content=_reask_text(error, output_type)),
            ]
            continue
        return JudgeCall(output=output, raw=text, attempts=tuple(replies))
    last = replies[-1][:200] if replies else ""
    raise JudgeError(
        f"judge `{judge}` ({model.name}) gave no valid verdict in {len(replies)} replies; "
        f"last error: {error}; last reply: {last!r}. "
        "Use a stronger judge model or one whose backend enforces JSON schemas",
        raw_outputs=tuple(replies),
    )


@cache
def output_schema(output_type: type[JudgeOutput]) -> dict[str, JsonValue]:
    """The JSON schema of a judge's reply, built once per output type (building it costs about a millisecond,
    every judge call used to pay it)."""
    return output_type.model_json_schema()


def _reask_text(error: str, output_type: type[JudgeOutput]) -> str:
    schema = json.dumps(output_schema(output_type).get("properties", {}), ensure_ascii=False)
    return load_prompt("reask").user.substitute(error=error, fields=schema)


class PromptJudge:
    """Shared machinery of a judge: one prompt file, one model, fenced case and trajectory fields.

    Subclasses set ``role`` (the prompt file under ``rewards/prompts``, also the judge's name) and
    ``revision`` (bumped by hand on a change of meaning; the version also hashes the prompt text), and turn
    the validated output into their verdict.

    Args:
        model: The judge model.
        include_thoughts: Also show the agent's thoughts to the judge.
        max_reasks: Re-asks after an invalid verdict before a ``JudgeError``.
        max_tokens: Token budget of one verdict.
        role: Overrides the class's prompt role (a judge with variants picks one per instance).
    """

    role: str = ""
    revision: int = 1

    def __init__(
        self,
        model: ChatModel,
        *,
        include_thoughts: bool = False,
        max_reasks: int = DEFAULT_MAX_REASKS,
        max_tokens: int = 512,
        role: str | None = None,
    ) -> None:
        self.model = model
        self.name = role or self.role
        self.include_thoughts = include_thoughts
        self.max_reasks = max_reasks
        self.max_tokens = max_tokens
        self.prompt = load_prompt(self.name)
        self.version = self.prompt.version(self.revision) + ("+thoughts" if include_thoughts else "")
        """Recorded with every verdict; changes whenever the prompt text changes."""

    def messages(
        self, case: Case, trajectory: Trajectory, *, toolkit_specs: Sequence[ToolkitSpec] = ()
    ) -> list[Message]:
        """Returns the judge prompt for ``trajectory`` (every untrusted part fenced).

        On a model that counts tokens (local models), observations are shortened step by step until the prompt
        leaves room for a verdict and a re-ask; the actions and the final answer are never shortened.
        """
        messages: list[Message] = []
        for cap in OBSERVATION_CAPS:
            fields = case_fields(case) | trajectory_fields(
                trajectory,
                toolkit_specs=toolkit_specs,
                include_thoughts=self.include_thoughts,
                max_observation_chars=cap,
            )
            messages = build_messages(self.prompt, fields)
            if fits_context(self.model, messages, reserve=2 * self.max_tokens + 64):
                break
        return messages

    def ask(
        self,
        case: Case,
        trajectory: Trajectory,
        output_type: type[OutputT],
        *,
        toolkit_specs: Sequence[ToolkitSpec] = (),
    ) -> JudgeCall[OutputT]:
        """Runs the judge call and returns the validated output.

        Raises:
            JudgeError: no valid verdict within the re-ask budget.
            LLMBackendError: the model call failed.
        """
        return run_judge(
            self.model,
            self.messages(case, trajectory, toolkit_specs=toolkit_specs),
            output_type,
            judge=self.name,
            max_reasks=self.max_reasks,
            max_tokens=self.max_tokens,
        )
