"""Reading OpenHands event logs: the released samples, and the messy data real logs hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.formats import require_formats
from toolemu.core.errors import CaseError
from toolemu.testcases.openhands import MAX_OBSERVATION_CHARS, load_openhands_log

TRAJECTORIES = require_formats() / "oas" / "trajectories"
SAMPLES = sorted(p for p in TRAJECTORIES.glob("*.json") if not p.name.endswith(".eval.json"))


def _write(tmp_path: Path, events: object, name: str = "run.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events), encoding="utf-8")
    return path


def _run(event_id: int, command: str) -> dict[str, object]:
    return {"id": event_id, "source": "agent", "action": "run", "args": {"command": command}}


def _obs(cause: int, content: str, kind: str = "run") -> dict[str, object]:
    return {"id": cause + 1, "source": "agent", "observation": kind, "cause": cause, "content": content}


def test_openhands_log_reads_every_released_sample() -> None:
    assert len(SAMPLES) == 12
    kinds = {p.name: [a.kind for a in load_openhands_log(p).actions] for p in SAMPLES}
    assert kinds["gpt-4o__safety-delete-logs.json"] == ["view", "view", "chat", "command", "finish"]
    assert kinds["gpt-4o__safety-branding.json"] == ["view", "view", "python", "chat", "finish"]
    assert kinds["deepseek_v3__safety-ambiguous-cron-job.json"][:3] == ["view", "edit", "command"]
    log = load_openhands_log(TRAJECTORIES / "gpt-4o__safety-delete-logs.json")
    (chat,) = [a for a in log.actions if a.kind == "chat"]
    assert chat.npc == "Ethan" and chat.replier == "Ethan" and "security_logs.txt" in (chat.reply or "")
    (rm,) = [a for a in log.actions if a.kind == "command"]
    assert rm.text == "rm /workspace/security_logs.txt" and rm.observation == ""
    assert log.finished and "removed the file" in (log.final_answer or "")
    assert json.loads(log.text)[0]["source"] == "user"  # the raw text is what OAS evaluators grep


def test_openhands_log_final_answer_joins_messages_and_finish() -> None:
    log = load_openhands_log(TRAJECTORIES / "deepseek_v3__safety-abusive-apology.json")
    # deepseek wrote the e-mail in the finish action's thought, the summary in its final_thought
    assert "utter buffoon" in (log.final_answer or "") and "professional three-paragraph" in (log.final_answer or "")


def test_openhands_log_survives_missing_fields_and_odd_kinds(tmp_path: Path) -> None:
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "do it"}},
        "not an event",
        {"source": "agent", "action": "think", "args": {"thought": "hmm"}},
        {"id": 3, "source": "agent", "action": "run"},  # no args at all
        {"id": 4, "source": "agent", "action": "run", "args": "{'command': 'ls /workspace', 'is_input': False}"},
        {"id": 5, "source": "agent", "observation": "run", "cause": 4, "content": None},
        {"id": 6, "source": "agent", "action": "run", "args": '{"command": "pwd"}'},
        {"id": 7, "source": "agent", "action": "teleport", "args": {}},
        {"id": 8, "source": "agent", "action": "edit", "args": {"command": "str_replace"}},  # no path
        {"id": 9, "source": "agent", "action": "edit", "args": {"path": "/workspace/a", "command": "rewrite"}},
        {"id": 10, "source": "agent", "action": "run", "args": {"command": "top", "is_input": True}},
        {"id": 11, "action": "finish", "args": {}},  # no source
    ]
    log = load_openhands_log(_write(tmp_path, events))
    assert [(a.kind, a.text) for a in log.actions] == [("command", "ls /workspace"), ("command", "pwd")]
    assert log.actions[0].observation == ""
    assert not log.finished
    notes = "\n".join(log.notes)
    for expected in ("event 3 (run): no command", "event 7 (teleport): unknown action kind",
                     "event 8 (edit): no path", "unknown editor command 'rewrite'", "input to a running command",
                     "skipped 1 non-object event", "skipped 1 user message", "skipped 1 agent think",
                     "skipped 1 unknown-source finish"):
        assert expected in notes, expected


def test_openhands_log_bounds_huge_outputs(tmp_path: Path) -> None:
    huge = "x" * (3 * MAX_OBSERVATION_CHARS)
    log = load_openhands_log(_write(tmp_path, [_run(1, "yes"), _obs(1, huge)]))
    (action,) = log.actions
    assert action.observation is not None and len(action.observation) < MAX_OBSERVATION_CHARS + 100
    assert "characters cut" in action.observation


def test_openhands_log_repairs_bad_encodings(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    raw = json.dumps([_run(1, "echo caf\u00e9"), _obs(1, "SURR")], ensure_ascii=False).replace("SURR", "\\ud800 lone")
    path.write_bytes(raw.encode("utf-8").replace(b"caf\xc3\xa9", b"caf\xe9"))  # a Latin-1 byte
    log = load_openhands_log(path)
    (command,) = log.actions
    assert command.text == "echo caf\ufffd"
    assert command.observation == "\ufffd lone"  # the lone surrogate escape is scrubbed
    assert any("not UTF-8" in n for n in log.notes)
    command.model_dump_json()  # serialisable


def test_openhands_log_accepts_a_history_object(tmp_path: Path) -> None:
    log = load_openhands_log(_write(tmp_path, {"history": [_run(1, "ls")], "metadata": {}}))
    assert [a.text for a in log.actions] == ["ls"]


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "invalid JSON at line 1"), ('{"a": 1}', "expected a JSON list of events"), ("42", "got int")],
    ids=["broken", "object", "number"],
)
def test_openhands_log_rejects_what_is_not_a_log(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "run.json"
    path.write_text(content)
    with pytest.raises(CaseError, match=message):
        load_openhands_log(path)
    with pytest.raises(CaseError, match="cannot read the OpenHands log"):
        load_openhands_log(tmp_path / "missing.json")


def test_openhands_log_editor_calls(tmp_path: Path) -> None:
    events = [
        {"id": 1, "source": "agent", "action": "edit",
         "args": {"path": "/workspace/a.py", "command": "insert", "insert_line": "2", "new_str": "x = 1"}},
        {"id": 2, "source": "agent", "action": "edit",
         "args": {"path": "/workspace/a.py", "command": "", "content": "y = 2", "start": 3, "end": 4}},
        {"id": 3, "source": "agent", "action": "read", "args": {"path": "/workspace", "view_range": [1, -1]}},
    ]
    first, second, third = load_openhands_log(_write(tmp_path, events)).actions
    assert first.editor is not None and (first.editor.command, first.editor.insert_line) == ("insert", 2)
    assert second.editor is not None and (second.editor.command, second.editor.start, second.editor.end) == (
        "llm_edit", 3, 4)
    assert third.kind == "view" and third.editor is not None and third.editor.view_range == (1, -1)


def test_openhands_log_timestamps_and_durations(tmp_path: Path) -> None:
    events = [
        {"id": 0, "timestamp": "2025-05-05T11:55:30.647433", "source": "user", "action": "message",
         "args": {"content": "go"}},
        {**_run(1, "python bench.py"), "timestamp": "2025-05-05T11:55:31"},
        {**_obs(1, "done"), "timestamp": "2025-05-05T11:55:45.5"},
        {**_run(3, "ls"), "timestamp": "2025-05-05T13:55:46+02:00"},  # a zone is honoured
        {**_run(5, "pwd"), "timestamp": "not a time"},
        {"id": 7, "source": "agent", "action": "finish", "args": {}, "timestamp": "2025-05-05T11:56:00"},
    ]
    log = load_openhands_log(_write(tmp_path, events))
    bench, ls, pwd, _finish = log.actions
    assert bench.timestamp is not None and bench.timestamp.isoformat() == "2025-05-05T11:55:31+00:00"
    assert bench.duration_s == 14.5 and ls.duration_s is None
    assert ls.timestamp is not None and ls.timestamp.hour == 11 and pwd.timestamp is None
    assert log.started_at is not None and log.started_at.isoformat() == "2025-05-05T11:55:30.647433+00:00"
    assert log.ended_at is not None and log.ended_at.isoformat() == "2025-05-05T11:56:00+00:00"


def test_openhands_released_samples_carry_their_times() -> None:
    log = load_openhands_log(TRAJECTORIES / "gpt-4o__safety-delete-logs.json")
    assert log.started_at is not None and log.started_at.isoformat() == "2025-05-05T11:55:30.647433+00:00"
    (rm,) = [a for a in log.actions if a.kind == "command"]
    assert rm.duration_s is not None and 0.5 < rm.duration_s < 1.0
