"""Writes an episode as an OpenHands event log: what OAS evaluators read, and what ``toolemu export --openhands``
saves for OAS-side viewers and graders.

The events, in order (format: ``toolemu.testcases.openhands.format``):

- the user's instruction as the first ``message`` (its text once, in ``args.content``; the display line is
  empty, so a phrase of the instruction appears in the log once, as in OAS's logs where only the agent's read
  of ``/instruction/task.md`` held it: evaluators that count a phrase count what the agent wrote);
- each step: the action with the step's thought (``args.thought`` and the model response's text in
  ``tool_call_metadata``) and the observation answering it (``cause``). Our tools map onto OpenHands' kinds:
  ``TerminalExecute`` is ``run``, ``PythonExecute`` ``run_ipython``, ``FilesRead`` / ``FilesList`` the
  editor's ``read`` of a file / folder (a read of ``/instruction/task.md`` is one like any other),
  ``FilesWrite`` an LLM-based ``edit`` of the whole file (``start`` -1 when it appends), ``ChatSendMessage``
  ``chat``, and any other tool ``mcp``. A call that was refused or failed is answered by an ``error``
  observation; an unparseable reply is an agent ``message`` answered by one. A question the simulated user
  answered is an agent ``message`` and the user's reply;
- the final answer as ``finish`` (``args.final_thought``).

Observations hold the text the agent saw: a tool's JSON answer is unpacked (``output``, ``content``, the
folder's entries, the coworkers' replies; the exit code in ``extras``). The log has no timestamps (episodes
do not record when each step ran). It is a pure function of the trajectory, so a saved record can be written
again; ``episode_log`` cuts it to ``MAX_EVALUATOR_LOG_CHARS``.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from pydantic import JsonValue

from toolemu.core.trajectory import Step, Trajectory
from toolemu.core.types import ToolCall
from toolemu.testcases.openhands import format as oh


class _Call(NamedTuple):
    """One of our calls in OpenHands' terms."""

    kind: str
    args: dict[str, JsonValue]
    function: str
    arguments: dict[str, JsonValue]
    message: str


def openhands_events(trajectory: Trajectory) -> list[dict[str, JsonValue]]:
    """The episode as OpenHands events (see the module docstring).

    Examples:
        >>> from toolemu.core.types import ToolCall
        >>> step = Step(index=0, kind="tool", action_text="", thought="Look first.", observation='{"output": '
        ...             '"a.txt\\\\n", "exit_code": 0}', tool_call=ToolCall(tool="TerminalExecute",
        ...             arguments={"command": "ls"}))
        >>> events = openhands_events(Trajectory(case_id="c", instruction="Tidy up.", steps=(step,)))
        >>> [(e.get("action") or e.get("observation"), e["source"]) for e in events]
        [('message', 'user'), ('run', 'agent'), ('run', 'agent')]
        >>> events[1]["args"]["thought"], events[2]["content"], events[2]["cause"]
        ('Look first.', 'a.txt\\n', 1)
    """
    events: list[dict[str, JsonValue]] = []
    instruction: dict[str, JsonValue] = {"content": trajectory.instruction, "image_urls": None,
                                         "wait_for_response": False}
    events.append(oh.action_event(0, "user", oh.MESSAGE, instruction))
    for step in trajectory.steps:
        _step_events(step, events)
    return events


def openhands_log_text(trajectory: Trajectory) -> str:
    """The episode's OpenHands event log as JSON text (one line, as OpenHands saved it), not yet bounded."""
    return oh.log_text(openhands_events(trajectory))


def episode_log(trajectory: Trajectory, original: str | None = None) -> str:
    """The OpenHands event log an OAS evaluator reads for this episode, as one string: ``original`` (a replayed
    or imported run's own log text) when given, else the log written from the trajectory; either cut to
    ``MAX_EVALUATOR_LOG_CHARS``."""
    return oh.bounded_log(original if original is not None else openhands_log_text(trajectory))


def _step_events(step: Step, events: list[dict[str, JsonValue]]) -> None:
    thought = (step.thought or "").strip()
    call_id = f"toolemu_{step.index}"
    if step.kind == "final":
        answer = step.final_answer or ""
        metadata = oh.function_call(oh.FINISH_FUNCTION, {"message": answer}, call_id, thought)
        args: dict[str, JsonValue] = {"final_thought": answer, "task_completed": None, "outputs": {},
                                      "thought": thought}
        events.append(oh.action_event(len(events), "agent", oh.FINISH, args, message=thought, metadata=metadata))
        return
    if step.kind == "ask_user":
        question = step.final_answer or ""
        events.append(oh.action_event(len(events), "agent", oh.MESSAGE, _said(question, True), message=question))
        reply = step.observation.removeprefix("User: ")
        events.append(oh.action_event(len(events), "user", oh.MESSAGE, _said(reply, False), message=reply))
        return
    if step.tool_call is None:  # an unparseable reply: what the model said, and the env's answer
        cause = len(events)
        events.append(oh.action_event(cause, "agent", oh.MESSAGE, _said(step.action_text, False),
                                      message=step.action_text))
        events.append(oh.observation_event(len(events), oh.ERROR, cause, step.observation,
                                           extras={"error_id": ""}, message=step.observation,
                                           source="environment"))
        return
    call = _call(step.tool_call)
    metadata = oh.function_call(call.function, call.arguments, call_id, thought)
    cause = len(events)
    events.append(oh.action_event(cause, "agent", call.kind, {**call.args, "thought": thought},
                                  message=call.message, metadata=metadata))
    if not step.executed:
        events.append(oh.observation_event(len(events), oh.ERROR, cause, step.observation,
                                           extras={"error_id": ""}, message=step.observation, metadata=metadata))
        return
    content, extras, message, success = _answer(call, step.observation)
    events.append(oh.observation_event(len(events), call.kind, cause, content, extras=extras, message=message,
                                       metadata=metadata, success=success))


def _said(text: str, wait: bool) -> dict[str, JsonValue]:
    return {"content": text, "image_urls": None, "wait_for_response": wait}


def _string(arguments: dict[str, JsonValue], name: str) -> str:
    value = arguments.get(name)
    return value if isinstance(value, str) else oh.text(value)


def _call(tool_call: ToolCall) -> _Call:
    """The call as an OpenHands action: kind, ``args``, the function the model called and its arguments."""
    tool, arguments = tool_call.tool, dict(tool_call.arguments)
    if tool == oh.TERMINAL_TOOL:
        command = _string(arguments, "command")
        return _Call(oh.RUN, {"command": command, "is_input": False, "blocking": False, "hidden": False,
                              "confirmation_state": "confirmed"},
                     oh.EXECUTE_BASH, {"command": command}, f"Running command: {command}")
    if tool == oh.PYTHON_TOOL:
        code = _string(arguments, "code")
        return _Call(oh.RUN_IPYTHON, {"code": code, "include_extra": True, "confirmation_state": "confirmed",
                                      "kernel_init_code": ""},
                     oh.EXECUTE_IPYTHON, {"code": code}, f"Running Python code interactively: {code}")
    if tool in (oh.READ_TOOL, oh.LIST_TOOL):
        path = _string(arguments, "path")
        return _Call(oh.READ, {"path": path, "start": 0, "end": -1, "impl_source": "oh_aci", "view_range": None},
                     oh.STR_REPLACE_EDITOR, {"command": "view", "path": path}, f"Reading file: {path}")
    if tool == oh.WRITE_TOOL:
        path, content = _string(arguments, "path"), _string(arguments, "content")
        start = -1 if arguments.get("append") is True else 1
        edit: dict[str, JsonValue] = {"path": path, "content": content, "start": start, "end": -1}
        return _Call(oh.EDIT, {**edit, "command": "", "impl_source": "llm_based_edit"}, oh.EDIT_FILE, edit, "")
    if tool in (oh.CHAT_TOOL, oh.LOGGED_CHAT_TOOL):
        native = tool == oh.CHAT_TOOL
        npc = _string(arguments, "to" if native else "npc")
        text = _string(arguments, "message" if native else "content")
        return _Call(oh.CHAT, {"content": text, "npc_name": npc}, oh.CHAT_FUNCTION,
                     {"name": npc, "message": text}, f"I am chatting with NPC user {npc}")
    if tool == oh.EDITOR_TOOL:
        return _editor_call(arguments)
    return _Call(oh.MCP, {"name": tool, "arguments": arguments}, tool, arguments, f"Calling tool {tool}")


def _editor_call(arguments: dict[str, JsonValue]) -> _Call:
    """An imported log's editor call (``EditorArgs`` as arguments) in the shape it came in."""
    editor = oh.EditorArgs.model_validate(arguments)
    if editor.command == "view":
        view: dict[str, JsonValue] = {"command": "view", "path": editor.path}
        return _Call(oh.READ, {"path": editor.path, "start": 0, "end": -1, "impl_source": "oh_aci",
                               "view_range": list(editor.view_range) if editor.view_range else None},
                     oh.STR_REPLACE_EDITOR, view, f"Reading file: {editor.path}")
    if editor.command == "llm_edit":
        edit: dict[str, JsonValue] = {"path": editor.path, "content": editor.content or "", "start": editor.start,
                                      "end": editor.end}
        return _Call(oh.EDIT, {**edit, "command": "", "impl_source": "llm_based_edit"}, oh.EDIT_FILE, edit, "")
    fields: dict[str, JsonValue] = {k: v for k, v in editor.model_dump(mode="json").items()
                                    if k in ("command", "path", "file_text", "old_str", "new_str", "insert_line")}
    return _Call(oh.EDIT, {**fields, "impl_source": "oh_aci"}, oh.STR_REPLACE_EDITOR,
                 {k: v for k, v in fields.items() if v is not None}, "")


def _answer(call: _Call, observation: str) -> tuple[str, dict[str, JsonValue], str, bool | None]:
    """The observation of an executed call: content, extras, display line, success."""
    answer = _json_object(observation)
    if call.kind in (oh.RUN, oh.RUN_IPYTHON) and isinstance(answer.get("output"), str):
        code = answer.get("exit_code")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else -1
        output = str(answer["output"])
        if call.kind == oh.RUN:
            command = call.args["command"]
            extras: dict[str, JsonValue] = {"command": command, "metadata": {"exit_code": exit_code}, "hidden": False}
            return output, extras, f"Command `{command}` executed with exit code {exit_code}.", exit_code == 0
        return output, {"code": call.args["code"]}, "Code executed in IPython cell.", exit_code == 0
    if call.kind == oh.READ:
        path = str(call.args["path"])
        entries = answer.get("entries")
        if isinstance(entries, list):
            names = [_entry(e) for e in entries]
            listing = f"{oh.DIRECTORY_VIEW} in {path}:\n" + "\n".join(f"{path.rstrip('/')}/{n}" for n in names)
            return listing, {"path": path, "impl_source": "oh_aci"}, f"I read the file {path}.", None
        content = answer.get("content")
        shown = content if isinstance(content, str) else observation
        return shown, {"path": path, "impl_source": "oh_aci"}, f"I read the file {path}.", None
    if call.kind == oh.EDIT:
        path = str(call.args["path"])
        return observation, {"path": path, "impl_source": "llm_based_edit"}, f"I edited the file {path}.", None
    if call.kind == oh.CHAT:
        replies = answer.get("replies")
        said = [r for r in replies if isinstance(r, dict)] if isinstance(replies, list) else []
        npc = _string(said[0], "from") if said else str(call.args["npc_name"])
        content = "\n\n".join(_string(r, "message") for r in said) if said else observation
        return content, {"npc_name": npc}, f"Chat with {npc}", None
    return observation, {"name": call.function, "arguments": call.arguments}, observation, None


def _json_object(text: str) -> dict[str, JsonValue]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _entry(entry: JsonValue) -> str:
    if isinstance(entry, dict):
        name = _string(entry, "name")
        return f"{name}/" if entry.get("type") in ("dir", "directory", "folder") else name
    return oh.text(entry)
