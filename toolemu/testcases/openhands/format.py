"""The OpenHands event-log format (the runs OpenAgentSafety released and graded): event kinds, field names, the
tools' function names, and our tools' names. The reader, the writer and the editor take every name from here.

An OpenHands log is a JSON list of events. Each has an ``id`` and a ``source`` (``user``, ``agent``,
``environment``). An *action* event names its kind in ``action`` and its arguments in ``args`` (the model's
reasoning in ``args.thought``); an *observation* event names its kind in ``observation``, points at the action it
answers through ``cause`` (that action's ``id``), holds the result in ``content`` and details in ``extras``.
``message`` is a display line. Agent events carry ``tool_call_metadata``: the function the model called and the
model's response. OAS graded a run with ``grade_checkpoints(open(log).read())``: the log's JSON text, one line,
as ``json.dumps`` writes it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Literal

from pydantic import JsonValue

from toolemu.core.types import Frozen
from toolemu.core.untrusted import scrub_surrogates

Source = Literal["user", "agent", "environment"]
"""Who produced an event."""

RUN = "run"
"""Action and observation: a shell command (``args.command``; ``extras.metadata.exit_code``)."""
RUN_IPYTHON = "run_ipython"
"""Action and observation: a Python cell (``args.code``)."""
EDIT = "edit"
"""Action and observation: the file editor changes a file (``EditorArgs``)."""
READ = "read"
"""Action and observation: the file editor shows a file or a folder (``args.path``)."""
CHAT = "chat"
"""Action and observation (OpenAgentSafety's): a message to a coworker (``args.content``, ``args.npc_name``),
answered by the coworker's reply (``content``, ``extras.npc_name``)."""
MESSAGE = "message"
"""Action: a message between the user and the agent (``args.content``)."""
FINISH = "finish"
"""Action: the agent ends the run (``args.final_thought``, its last words to the user)."""
MCP = "mcp"
"""Action and observation: a call of any other tool (``args.name``, ``args.arguments``)."""
ERROR = "error"
"""Observation: the action failed or was refused (``content`` says why)."""
SKIPPED_ACTIONS = frozenset({
    "recall", "think", "system", "browse", "browse_interactive", "change_agent_state", "condensation",
    "condensation_request", "delegate", "null", MCP, "reject", "push", "send_pr",
})
"""Action kinds that are not replayed (no effect on the files, or outside what the sandbox offers)."""

EXECUTE_BASH = "execute_bash"
"""The function the model calls for ``run``."""
EXECUTE_IPYTHON = "execute_ipython_cell"
"""The function the model calls for ``run_ipython``."""
STR_REPLACE_EDITOR = "str_replace_editor"
"""The function the model calls for ``read`` and for the editor's ``edit`` commands."""
EDIT_FILE = "edit_file"
"""The function the model calls for an LLM-based ``edit`` (``content`` over a line range)."""
CHAT_FUNCTION = "chat"
"""The function the model calls for ``chat`` (arguments ``name`` and ``message``)."""
FINISH_FUNCTION = "finish"
"""The function the model calls for ``finish`` (argument ``message``)."""

DIRECTORY_VIEW = "Here's the files and directories"
"""How the editor's ``view`` of a folder begins (a file's view shows its lines)."""
INSTRUCTION_PATH = "/instruction/task.md"
"""Where OAS put the task for the agent to read."""

TERMINAL_TOOL = "TerminalExecute"
"""Our tool for ``run``."""
PYTHON_TOOL = "PythonExecute"
"""Our tool for ``run_ipython``."""
READ_TOOL = "FilesRead"
"""Our tool for the ``read`` of a file."""
LIST_TOOL = "FilesList"
"""Our tool for the ``read`` of a folder."""
WRITE_TOOL = "FilesWrite"
"""Our tool for writing a file, an LLM-based ``edit`` of the whole file (``start`` -1: appended)."""
CHAT_TOOL = "ChatSendMessage"
"""Our tool for ``chat`` (arguments ``to`` and ``message``)."""
LOGGED_CHAT_TOOL = "ChatMessage"
"""The tool an imported log's ``chat`` is recorded as (arguments ``npc`` and ``content``)."""
EDITOR_TOOL = "OpenHandsEditor"
"""The tool an imported log's editor calls are recorded as (``EditorArgs`` as arguments)."""

MAX_EVALUATOR_LOG_CHARS = 8 * 1024 * 1024
"""An evaluator reads at most this much of a log (head and tail around a marker); records keep as much."""

EditCommand = Literal["create", "str_replace", "insert", "undo_edit", "view", "llm_edit"]


class EditorArgs(Frozen):
    """One call of the OpenHands file editor (``str_replace_editor`` / ``oh_aci``, or the LLM-based editor)."""

    command: EditCommand
    """What to do; ``llm_edit`` replaces the lines ``start``..``end`` with ``content``."""
    path: str
    """The file (absolute inside the sandbox)."""
    file_text: str | None = None
    """``create``: the new file's text."""
    old_str: str | None = None
    """``str_replace``: the text to replace (must occur exactly once)."""
    new_str: str | None = None
    """``str_replace`` / ``insert``: the replacement or inserted text."""
    insert_line: int | None = None
    """``insert``: insert after this line (0 = at the top)."""
    view_range: tuple[int, int] | None = None
    """``view``: the lines to show (``end`` -1 = to the end)."""
    content: str | None = None
    """``llm_edit``: the new text of the line range."""
    start: int = 1
    """``llm_edit``: first line replaced (1-based; -1 = append after the last line)."""
    end: int = -1
    """``llm_edit``: last line replaced (-1 = the last line)."""


def bounded_log(text: str) -> str:
    """``text`` cut to ``MAX_EVALUATOR_LOG_CHARS`` (its head and tail around a marker) when longer.

    Examples:
        >>> bounded_log("[]")
        '[]'
    """
    if len(text) <= MAX_EVALUATOR_LOG_CHARS:
        return text
    half = MAX_EVALUATOR_LOG_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def log_text(events: list[dict[str, JsonValue]]) -> str:
    """The events as the log's text: one line, as OpenHands saved it (``json.dumps`` defaults, so non-ASCII
    text is escaped, as evaluators saw it)."""
    return json.dumps(events)


# --- reading events (untrusted JSON: any field may be missing or of another type) ---

def mapping(value: object) -> dict[str, object]:
    """``args``/``extras`` as a dict: a dict, or a JSON or Python-literal string of one; else empty."""
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str) and value.strip().startswith("{"):
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, Mapping):
                return {str(k): v for k, v in parsed.items()}
    return {}


def text(value: object) -> str:
    """A field as text: strings as they are, other values as JSON, ``None`` as empty."""
    if value is None:
        return ""
    return scrub_surrogates(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def action_of(event: Mapping[str, object]) -> str | None:
    """The event's action kind; ``None`` for an observation (or an event without a kind)."""
    kind = event.get("action")
    return kind if isinstance(kind, str) else None


def is_observation(event: Mapping[str, object]) -> bool:
    """Whether the event is an observation answering an action."""
    return "observation" in event and event.get("cause") is not None


def cause_of(event: Mapping[str, object]) -> str:
    """The ``id`` of the action an observation answers."""
    return str(event.get("cause"))


def event_id(event: Mapping[str, object], position: int) -> str:
    """The event's ``id``, or its position in the log when it has none."""
    return str(event.get("id", position))


def source_of(event: Mapping[str, object]) -> str | None:
    """Who produced the event (``Source``), when it says."""
    source = event.get("source")
    return source if isinstance(source, str) else None


def args_of(event: Mapping[str, object]) -> dict[str, object]:
    """An action's arguments."""
    return mapping(event.get("args"))


def extras_of(event: Mapping[str, object]) -> dict[str, object]:
    """An observation's details."""
    return mapping(event.get("extras"))


def content_of(event: Mapping[str, object]) -> str:
    """An observation's result, as text."""
    return text(event.get("content"))


def message_of(event: Mapping[str, object]) -> str:
    """An event's display line, as text."""
    return text(event.get("message"))


# --- writing events ---

def function_call(function: str, arguments: Mapping[str, JsonValue], call_id: str,
                  thought: str | None) -> dict[str, JsonValue]:
    """``tool_call_metadata``: the function the model called, as the model's response held it (its text before
    the call, then the call with its arguments as a JSON string)."""
    call: dict[str, JsonValue] = {"function": {"arguments": json.dumps(dict(arguments)), "name": function},
                                  "id": call_id, "type": "function"}
    message: dict[str, JsonValue] = {"content": thought or None, "role": "assistant", "tool_calls": [call]}
    return {"function_name": function, "tool_call_id": call_id,
            "model_response": {"choices": [{"index": 0, "message": message}]}, "total_calls_in_response": 1}


def action_event(event_id: int, source: Source, kind: str, args: Mapping[str, JsonValue], *, message: str = "",
                 metadata: dict[str, JsonValue] | None = None) -> dict[str, JsonValue]:
    """An action event."""
    event: dict[str, JsonValue] = {"id": event_id, "source": source, "message": message, "action": kind,
                                   "args": dict(args)}
    if metadata is not None:
        event["tool_call_metadata"] = metadata
    return event


def observation_event(event_id: int, kind: str, cause: int, content: str, *, extras: Mapping[str, JsonValue],
                      message: str = "", metadata: dict[str, JsonValue] | None = None,
                      success: bool | None = None, source: Source = "agent") -> dict[str, JsonValue]:
    """An observation event answering the action ``cause``."""
    event: dict[str, JsonValue] = {"id": event_id, "source": source, "message": message, "cause": cause,
                                   "observation": kind, "content": content, "extras": dict(extras)}
    if metadata is not None:
        event["tool_call_metadata"] = metadata
    if success is not None:
        event["success"] = success
    return event
