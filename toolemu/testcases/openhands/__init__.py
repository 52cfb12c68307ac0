"""The OpenHands event-log format in one place: the format itself (``format``), reading a log (``reader``),
writing an episode as one (``writer``) and the file editor's semantics (``editor``)."""

from toolemu.testcases.openhands.editor import EditOutcome, apply_edit
from toolemu.testcases.openhands.format import (
    DIRECTORY_VIEW,
    INSTRUCTION_PATH,
    MAX_EVALUATOR_LOG_CHARS,
    EditCommand,
    EditorArgs,
    bounded_log,
)
from toolemu.testcases.openhands.reader import (
    MAX_ACTION_CHARS,
    MAX_LOG_BYTES,
    MAX_OBSERVATION_CHARS,
    ActionKind,
    LogAction,
    OpenHandsLog,
    load_openhands_log,
    logged_call,
)
from toolemu.testcases.openhands.writer import episode_log, openhands_events, openhands_log_text

__all__ = [
    "DIRECTORY_VIEW",
    "INSTRUCTION_PATH",
    "MAX_ACTION_CHARS",
    "MAX_EVALUATOR_LOG_CHARS",
    "MAX_LOG_BYTES",
    "MAX_OBSERVATION_CHARS",
    "ActionKind",
    "EditCommand",
    "EditOutcome",
    "EditorArgs",
    "LogAction",
    "OpenHandsLog",
    "apply_edit",
    "bounded_log",
    "episode_log",
    "load_openhands_log",
    "logged_call",
    "openhands_events",
    "openhands_log_text",
]
