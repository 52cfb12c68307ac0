"""All toolemu exceptions, under one base class. The class name says whose fault it is.

``ToolCallError`` is the agent's fault and becomes an observation; ``InfraError`` is nobody's fault the agent
can fix and ends the episode with ``status="error"``; everything else is a usage or data error.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class Error(Exception):
    """Base class of every exception toolemu raises on purpose."""


HOSTILE_INPUT_FAULTS: tuple[type[Exception], ...] = (OSError, ValueError, RecursionError, OverflowError)
"""What untrusted input (a case, a task folder, an agent's action, what the agent left in the sandbox) can make
library code raise besides a toolemu ``Error``: ``OSError`` (``shutil.Error`` too: a file that cannot be read,
copied or listed), ``ValueError`` (pydantic's ``ValidationError``, ``UnicodeError``, Python's 4,300-digit
int-string limit), ``RecursionError`` (nesting too deep) and ``OverflowError`` (``float(10**400)``).

Only the named boundaries catch these (a tool call, an episode's capture and scoring, ``reset``, a bench
worker, one task of an import, a CLI command), each turning them into a typed error record with the
traceback; anything else is a bug and keeps its traceback."""


class ConfigError(Error):
    """Raised when a configuration value (model spec, flag, env var) is missing or invalid."""


class BuildError(ConfigError):
    """Raised when building or installing the portable llama.cpp runtime fails; the message names the step."""


class NotRegisteredError(Error, KeyError):
    """Raised when an id is not in a registry; the message suggests close matches."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        close = difflib.get_close_matches(name, self.known, n=1)
        hint = f" Did you mean `{close[0]}`?" if close else ""
        shown = ", ".join(self.known[:12]) + (" ..." if len(self.known) > 12 else "")
        super().__init__(f"{kind} `{name}` is not registered.{hint} Known: {shown or '(none)'}")

    def __str__(self) -> str:
        return str(self.args[0])


class CaseError(Error):
    """Raised when a case (or toolkit spec) file is malformed; the message names file and field."""


class EnvStateError(Error):
    """Raised on misuse of an env: ``step`` before ``reset`` or after the episode ended."""


class CapacityError(Error):
    """Raised when a server already holds its bound of concurrent sessions (``toolemu serve --max-sessions``)."""


class ToolCallError(Error):
    """An agent-facing error: unknown tool, bad arguments, or a tool-level failure.

    The env turns it into an error observation for the agent; it never escapes ``step()``.
    """


class ActionParseError(ToolCallError):
    """The agent's text could not be parsed into a tool call or a final answer."""


class InfraError(Error):
    """Not the agent's fault: a model backend, judge, emulator or sandbox failed.

    An ``InfraError`` is never converted into a reward; the episode ends with ``status="error"``.
    """

    boundary: str = "infra"


class LLMBackendError(InfraError):
    """A chat model call failed.

    Attributes:
        status_code: HTTP status when the backend is HTTP-based, else ``None``.
        retryable: Whether retrying the same request may succeed (429, 5xx, timeouts).
        request_id: The provider's request id when known.
    """

    boundary = "llm"

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool = False,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = retryable
        self.request_id = request_id


class EndpointTimeoutError(LLMBackendError):
    """An HTTP model endpoint did not answer within the per-attempt timeout (retryable)."""


class EndpointUnreachableError(LLMBackendError):
    """An HTTP model endpoint could not be connected to, or dropped the connection (retryable)."""


class MalformedResponseError(LLMBackendError):
    """An endpoint answered with a body that is not a chat completion: not JSON (an HTML error page), JSON cut
    short, the wrong shape, or no choices. Retryable: load balancers and servers under load send these."""


class FixtureMissingError(LLMBackendError):
    """A replaying ``FakeLLM`` had no recording for a request."""


class EmulatorError(InfraError):
    """The tool emulator did not produce a valid observation within its retry budget."""

    boundary = "emulator"


class DefenseError(InfraError):
    """A defense wrapped around the agent could not decide: its model failed, or gave no answer that parses
    within its retry budget (a tool filter's selection, a detector's verdict). The episode ends in error;
    an undecided screen is never read as "clean".

    Attributes:
        raw_outputs: The defense model's replies, in order, for debugging.
    """

    boundary = "agent"

    def __init__(self, message: str, *, raw_outputs: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.raw_outputs = raw_outputs


class JudgeError(InfraError):
    """A judge produced no parseable verdict within its retry budget.

    Attributes:
        raw_outputs: The judge model's replies, in order, for debugging.
    """

    boundary = "judge"

    def __init__(self, message: str, *, raw_outputs: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.raw_outputs = raw_outputs


class SandboxError(InfraError):
    """The sandbox could not start, crashed, or could not be snapshotted."""

    boundary = "sandbox"


class ServiceError(SandboxError):
    """An emulated web service of the episode (``toolemu.services``) could not start, died, or did not answer."""


class PersonError(InfraError):
    """A simulated person (an NPC or the simulated user) gave no valid reply within its retry budget.

    Attributes:
        raw_outputs: The model's rejected replies, in order, for debugging.
    """

    boundary = "npc"

    def __init__(self, message: str, *, raw_outputs: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.raw_outputs = raw_outputs


class CheckError(InfraError):
    """A rule check crashed; the check's result is an error, never "safe"."""

    boundary = "check"


ANY_EXPECTED_FAULT: tuple[type[Exception], ...] = (Error, *HOSTILE_INPUT_FAULTS)
"""A toolemu ``Error`` or one of ``HOSTILE_INPUT_FAULTS``: what a boundary that must never lose a finished
record (closing an env after its episode) catches and logs."""
