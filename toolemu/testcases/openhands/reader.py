"""Reads an OpenHands event log (the runs OpenAgentSafety released) into replayable actions.

The format is ``toolemu.testcases.openhands.format``. The agent actions we replay: ``run`` (a shell command),
``run_ipython`` (a Python cell), ``edit`` (the file editor: ``create``, ``str_replace``, ``insert``,
``undo_edit``, or an LLM edit of a line range), ``read`` (the editor's ``view``), ``chat`` (a message to a
coworker, answered in the log) and ``message`` / ``finish`` (what the agent tells the user). Everything else
(``recall``, ``think``, ``browse``, ``mcp``, ``system``, condensation, state changes, user messages) is skipped
with a note.

Real logs are messy: fields go missing, ``args`` is sometimes a JSON or Python-literal string, outputs run to
megabytes, and bytes are not always UTF-8. The reader never crashes on such data: it keeps what it can use and
says what it dropped (``OpenHandsLog.notes``); only a file that is not JSON at all is a ``CaseError``.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from toolemu.core.errors import CaseError
from toolemu.core.trajectory import NpcMessage
from toolemu.core.types import Frozen, ToolCall
from toolemu.core.untrusted import scrub_surrogates
from toolemu.testcases.openhands import format as oh
from toolemu.testcases.openhands.format import EditorArgs

MAX_LOG_BYTES = 256 * 1024 * 1024
"""Largest log read."""
MAX_OBSERVATION_CHARS = 100_000
"""Recorded observations are kept up to this length (head and tail around a marker)."""
MAX_ACTION_CHARS = 1_000_000
"""A command, cell or file text longer than this is not replayed (noted)."""

ActionKind = Literal["command", "python", "edit", "view", "chat", "message", "finish"]


class LogAction(Frozen):
    """One agent action of the log, with what the log recorded as its result."""

    event_id: str
    """The event's ``id`` (its position when it has none)."""
    kind: ActionKind
    """What the agent did."""
    text: str = ""
    """``command``: the command line; ``python``: the cell; ``chat`` / ``message`` / ``finish``: the text."""
    editor: EditorArgs | None = None
    """``edit`` / ``view``: the editor call."""
    npc: str | None = None
    """``chat``: who the message went to."""
    observation: str | None = None
    """What the log recorded as the result (bounded), when an observation answered this action."""
    reply: str | None = None
    """``chat``: the coworker's recorded answer."""
    replier: str | None = None
    """``chat``: who answered (the log's ``npc_name`` of the observation)."""
    thought: str = ""
    """The model's reasoning before the action (``args.thought``; for ``finish`` it is part of ``text``)."""
    timestamp: datetime | None = None
    """When the agent emitted the action (the event's ``timestamp``, in UTC), if the log says."""
    duration_s: float | None = None
    """Seconds from the action to the observation that answered it (how long a command ran in the original
    run), when both carry a timestamp."""


class OpenHandsLog(Frozen):
    """A parsed OpenHands event log."""

    path: str
    """Where it was read from."""
    text: str
    """The log's JSON text, as an OAS evaluator read it (it greps this string)."""
    actions: tuple[LogAction, ...] = ()
    """The agent's actions, in order."""
    notes: tuple[str, ...] = Field(default_factory=tuple)
    """What the reader skipped or repaired, one line each."""
    started_at: datetime | None = None
    """The earliest event ``timestamp`` (UTC): when the original run began."""
    ended_at: datetime | None = None
    """The latest event ``timestamp`` (UTC): when the original run ended (its evaluator ran right after)."""

    @property
    def final_answer(self) -> str | None:
        """What the agent finally told the user: its ``message`` texts and the ``finish`` text, in order."""
        said = [a.text for a in self.actions if a.kind in ("message", "finish") and a.text.strip()]
        return "\n\n".join(said) if said else None

    @property
    def finished(self) -> bool:
        """Whether the agent ended the run itself (a ``finish`` action)."""
        return any(a.kind == "finish" for a in self.actions)

    @property
    def npc_messages(self) -> tuple[NpcMessage, ...]:
        """The recorded coworker conversation: each ``chat`` message and its reply, in order."""
        messages: list[NpcMessage] = []
        for action in self.actions:
            if action.kind == "chat":
                npc = action.npc or "unknown"
                messages.append(NpcMessage(npc=npc, direction="to_npc", content=action.text))
                if action.reply:
                    messages.append(NpcMessage(npc=action.replier or npc, direction="from_npc",
                                               content=action.reply))
        return tuple(messages)


def logged_call(action: LogAction) -> ToolCall | None:
    """The log action as one of our recorded calls (an imported log's steps); the editor's calls and the chat
    keep OpenHands' own shape; ``None`` for what the agent said to the user."""
    if action.kind == "chat":
        return ToolCall(tool=oh.LOGGED_CHAT_TOOL, arguments={"npc": action.npc or "unknown", "content": action.text})
    if action.kind == "command":
        return ToolCall(tool=oh.TERMINAL_TOOL, arguments={"command": action.text})
    if action.kind == "python":
        return ToolCall(tool=oh.PYTHON_TOOL, arguments={"code": action.text})
    if action.editor is None:
        return None
    args = {k: v for k, v in action.editor.model_dump(mode="json").items() if v is not None}
    return ToolCall(tool=oh.EDITOR_TOOL, arguments=args)


def load_openhands_log(path: str | Path) -> OpenHandsLog:
    """Reads an OpenHands event log (see the module docstring for what is kept and what is skipped).

    Raises:
        CaseError: The file is missing, larger than ``MAX_LOG_BYTES``, not JSON, or holds no list of events.
    """
    path = Path(path)
    try:
        # O_NONBLOCK: a FIFO named as the log must be refused, not waited on for a writer that never comes.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise CaseError(f"{path}: not a regular file; an OpenHands log must be a plain file")
            if st.st_size > MAX_LOG_BYTES:
                raise CaseError(
                    f"{path}: OpenHands log of {st.st_size} bytes is over the {MAX_LOG_BYTES}-byte limit"
                )
            data = f.read(MAX_LOG_BYTES + 1)
        if len(data) > MAX_LOG_BYTES:
            raise CaseError(f"{path}: OpenHands log is over the {MAX_LOG_BYTES}-byte limit")
    except OSError as e:
        raise CaseError(f"{path}: cannot read the OpenHands log: {e.strerror or e}") from None
    notes: list[str] = []
    text = data.decode("utf-8", "replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        notes.append(f"bytes that are not UTF-8 were replaced by U+FFFD ({text.count(chr(0xFFFD))} characters)")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        where = f"line {e.lineno} column {e.colno}"
        raise CaseError(f"{path}: not an OpenHands log: invalid JSON at {where}: {e.msg}") from None
    events = _events(raw)
    if events is None:
        raise CaseError(
            f"{path}: not an OpenHands log: expected a JSON list of events (or an object with `history`), "
            f"got {type(raw).__name__}"
        )
    if len(text) > oh.MAX_EVALUATOR_LOG_CHARS:
        notes.append(f"the log's text ({len(text):,} characters) is over the {oh.MAX_EVALUATOR_LOG_CHARS:,} an "
                     "evaluator reads: evaluators read its head and tail")
    stamps = [t for t in (_timestamp(e) for e in events) if t is not None]
    return OpenHandsLog(path=str(path), text=scrub_surrogates(text), actions=_actions(events, notes),
                        notes=tuple(notes), started_at=min(stamps, default=None), ended_at=max(stamps, default=None))


def _timestamp(event: object) -> datetime | None:
    """An event's ``timestamp`` in UTC; OpenHands writes naive ISO times, read as UTC. ``None`` when absent or
    not an ISO time."""
    raw = event.get("timestamp") if isinstance(event, dict) else None
    if not isinstance(raw, str) or len(raw) > 64:
        return None
    try:
        value = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _events(raw: object) -> list[object] | None:
    if isinstance(raw, list):
        return raw
    if isinstance(raw, dict):
        for key in ("history", "events", "trajectory"):
            if isinstance(raw.get(key), list):
                return list(raw[key])
    return None


def _bounded(text: str) -> str:
    if len(text) <= MAX_OBSERVATION_CHARS:
        return text
    half = MAX_OBSERVATION_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def _int(value: object, default: int | None = None) -> int | None:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return default


def _actions(events: list[object], notes: list[str]) -> tuple[LogAction, ...]:
    answers: dict[str, dict[str, object]] = {}
    for event in events:
        if isinstance(event, dict) and oh.is_observation(event):
            answers.setdefault(oh.cause_of(event), event)
    actions: list[LogAction] = []
    skipped: dict[str, int] = {}
    for position, event in enumerate(events):
        if not isinstance(event, dict):
            skipped["non-object event"] = skipped.get("non-object event", 0) + 1
            continue
        kind = oh.action_of(event)
        if kind is None:
            continue  # an observation (or an event without a kind); observations are read through `cause`
        event_id = oh.event_id(event, position)
        source = oh.source_of(event)
        if source != "agent":
            what = f"{source or 'unknown-source'} {kind}"
            skipped[what] = skipped.get(what, 0) + 1
            continue
        answer = answers.get(event_id)
        action = _action(event_id, kind, oh.args_of(event), answer, event, notes)
        if action is None:
            skipped[f"agent {kind}"] = skipped.get(f"agent {kind}", 0) + 1
        else:
            actions.append(_timed(action, event, answer))
    notes.extend(f"skipped {n} {what} event(s)" for what, n in sorted(skipped.items()))
    return tuple(actions)


def _timed(action: LogAction, event: dict[str, object], answer: dict[str, object] | None) -> LogAction:
    started, answered = _timestamp(event), _timestamp(answer)
    duration = (answered - started).total_seconds() if started and answered and answered >= started else None
    return action.model_copy(update={"timestamp": started, "duration_s": duration})


def _action(event_id: str, kind: str, args: dict[str, object], answer: dict[str, object] | None,
            event: dict[str, object], notes: list[str]) -> LogAction | None:
    observation = _bounded(oh.content_of(answer)) if answer is not None else None
    thought = oh.text(args.get("thought"))
    where = f"event {event_id} ({kind})"
    if kind in oh.SKIPPED_ACTIONS:
        return None
    if kind in (oh.RUN, oh.RUN_IPYTHON):
        text = oh.text(args.get("command" if kind == oh.RUN else "code"))
        if not text.strip():
            notes.append(f"{where}: no command to run; skipped")
            return None
        if len(text) > MAX_ACTION_CHARS:
            notes.append(f"{where}: {len(text)}-character input is over the replay limit; skipped")
            return None
        if kind == oh.RUN and args.get("is_input") in (True, "true", "True"):
            notes.append(f"{where}: input to a running command ({text[:40]!r}) cannot be replayed; skipped")
            return None
        return LogAction(event_id=event_id, kind="command" if kind == oh.RUN else "python", text=text,
                         observation=observation, thought=thought)
    if kind in (oh.EDIT, oh.READ):
        editor = _editor(kind, args, notes, where)
        if editor is None:
            return None
        return LogAction(event_id=event_id, kind="view" if editor.command == "view" else "edit", editor=editor,
                         observation=observation, thought=thought)
    if kind == oh.CHAT:
        replier = oh.extras_of(answer).get("npc_name") if answer is not None else None
        return LogAction(event_id=event_id, kind="chat", text=oh.text(args.get("content")),
                         npc=oh.text(args.get("npc_name")) or None, observation=observation,
                         reply=observation, replier=oh.text(replier) or None, thought=thought)
    if kind == oh.MESSAGE:
        return LogAction(event_id=event_id, kind="message",
                         text=oh.text(args.get("content")) or oh.message_of(event))
    if kind == oh.FINISH:
        parts = [thought, oh.text(args.get("final_thought"))]
        text = "\n\n".join(p for p in parts if p.strip()) or oh.message_of(event)
        return LogAction(event_id=event_id, kind="finish", text=text)
    notes.append(f"{where}: unknown action kind; skipped")
    return None


def _editor(kind: str, args: dict[str, object], notes: list[str], where: str) -> EditorArgs | None:
    path = oh.text(args.get("path"))
    if not path:
        notes.append(f"{where}: no path; skipped")
        return None
    if kind == oh.READ:
        command = "view"
    else:
        command = oh.text(args.get("command"))
        if not command:
            # OpenHands' LLM-based edit: `content` replaces lines start..end (start -1: appended).
            if args.get("content") is None:
                notes.append(f"{where}: edit without command or content; skipped")
                return None
            command = "llm_edit"
    if command not in ("create", "str_replace", "insert", "undo_edit", "view", "llm_edit"):
        notes.append(f"{where}: unknown editor command {command!r}; skipped")
        return None
    raw_range = args.get("view_range")
    view_range = None
    if isinstance(raw_range, list | tuple) and len(raw_range) == 2:
        lo, hi = _int(raw_range[0]), _int(raw_range[1])
        if lo is not None and hi is not None:
            view_range = (lo, hi)
    texts = {k: (oh.text(args[k]) if args.get(k) is not None else None)
             for k in ("file_text", "old_str", "new_str", "content")}
    if any(v is not None and len(v) > MAX_ACTION_CHARS for v in texts.values()):
        notes.append(f"{where}: edit text over the replay limit; skipped")
        return None
    return EditorArgs.model_validate({
        "command": command, "path": path, "insert_line": _int(args.get("insert_line")), "view_range": view_range,
        "start": _int(args.get("start"), 1) or 1, "end": _int(args.get("end"), -1) or -1, **texts,
    })
