"""Group 3: nothing that was done is lost, and no results file is overwritten, truncated or left empty."""

from __future__ import annotations

import json
import secrets
from collections import deque
from pathlib import Path

import pytest

from tests.fakes.chat_server import FakeChatServer, RecordedRequest, ScriptedReply
from tests.fakes.models import JUDGED_CHECK_TITLE, fill, judged_reply, world_model
from tests.fakes.oas_task import TASK, write_oas_task
from tests.fakes.toolemu_files import write_toolemu_files
from tests.hostile.support import ACCEPTED, FAKE_MODELS, NOTHING_WRITTEN, assert_one_line_error, invoke
from toolemu.bench import read_records, run_episode, run_suite
from toolemu.bench.record import EpisodeRecord, append_record
from toolemu.cli.render import render_record
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import dump_json, write_new, write_replace
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.testcases import load_case

CASE = "smartlock-let-cleaner-in"
CUT = "cut emoji \ud83d here"
VERDICTS = {"ToolEmuSafetyOutput": "Certain No Risk", "HelpfulnessOutput": "Excellent"}


def _responder(agent: list[str], *, rationale: str = "fine", observation_text: str | None = None) -> object:
    script = deque(agent)

    def respond(request: RecordedRequest) -> ScriptedReply:
        fmt = request.body.get("response_format")
        if not isinstance(fmt, dict):
            return ScriptedReply(text=script.popleft() if script else "Final Answer: done")
        schema = fmt["json_schema"]["schema"]
        if schema.get("title") in VERDICTS:
            return ScriptedReply(text=json.dumps({"rationale": rationale, "label": VERDICTS[schema["title"]]}))
        if schema.get("title") == JUDGED_CHECK_TITLE:
            return ScriptedReply(text=judged_reply("no"))
        observation = fill(schema["properties"]["observation"])
        if observation_text is not None and isinstance(observation, dict):
            observation = {k: observation_text if isinstance(v, str) else v for k, v in observation.items()}
        return ScriptedReply(text=json.dumps({"notes": "n", "observation": observation}))

    return respond


def _server_args(server: FakeChatServer) -> list[str]:
    return ["--agent-model", "m", "--emulator-model", "m", "--judge-model", "m", "--base-url", server.base_url,
            "--api-key", "k"]


def _actions() -> list[str]:
    run = next(r for r in load_case(CASE).reference_runs if r.label == "safe")
    return [a for a in run.actions if isinstance(a, str)]


SURROGATES = [
    ("agent-final-answer", {"agent": ["Final Answer: " + CUT]}),
    ("agent-thought", {"agent": ["Thought: " + CUT + "\nFinal Answer: ok"]}),
    ("judge-rationale", {"agent": ["Final Answer: ok"], "rationale": CUT}),
    ("emulator-observation", {"agent": _actions(), "observation_text": CUT}),
]


@pytest.mark.enable_socket
@pytest.mark.parametrize(
    "script", [s for _, s in SURROGATES], ids=[f"{ACCEPTED}:run-out-surrogate-{n}" for n, _ in SURROGATES]
)
def test_run_out_survives_lone_surrogates_in_model_output(tmp_path: Path, script: dict[str, object]) -> None:
    out = tmp_path / "episode.json"
    with FakeChatServer(default=_responder(**script)) as server:  # type: ignore[arg-type]
        result = invoke("run", "--case", CASE, *_server_args(server), "--out", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    record = EpisodeRecord.model_validate(json.loads(text))
    assert record.status == "completed" and "\ufffd" in text


@pytest.mark.enable_socket
@pytest.mark.parametrize("trials", [2], ids=[f"{ACCEPTED}:bench-results-surrogate-agent"])
def test_bench_results_survive_lone_surrogates(tmp_path: Path, trials: int) -> None:
    out = tmp_path / "results.jsonl"
    with FakeChatServer(default=_responder(["Final Answer: " + CUT] * trials)) as server:  # type: ignore[arg-type]
        result = invoke("bench", "--case", CASE, "--trials", str(trials), *_server_args(server), "--out", str(out))
    assert result.exit_code == 0, result.output
    records = list(read_records(out))
    assert len(records) == trials and all(r.status == "completed" for r in records)


class _RawAgent:
    """An agent whose text never passed through a ``ChatResponse`` (a user's own agent)."""

    def reset(self, observation: str) -> None:
        self.turn = 0

    def act(self, observation: str) -> str:
        self.turn += 1
        return "Thought: " + CUT + "\nFinal Answer: " + CUT


@pytest.mark.parametrize("agent", [_RawAgent()], ids=[f"{ACCEPTED}:raw-agent-surrogate-record-and-render"])
def test_raw_agent_surrogates_are_replaced_in_the_record(tmp_path: Path, agent: _RawAgent) -> None:
    model = world_model(VERDICTS)
    env = ToolEmuEnv(CASE, EnvConfig(emulator_model=model, judge_model=model))
    record = run_episode(env, agent, seed=0)  # type: ignore[arg-type]
    env.close()
    render_record(record).encode("utf-8")
    append_record(tmp_path / "r.jsonl", record)
    (back,) = read_records(tmp_path / "r.jsonl")
    assert back.trajectory.final_answer == "cut emoji \ufffd here"


@pytest.mark.parametrize("text", [CUT], ids=[f"{ACCEPTED}:dump-json-scrubs-surrogates"])
def test_dump_json_replaces_surrogates_that_reached_a_model(text: str) -> None:
    from toolemu.core.types import Message

    assert json.loads(dump_json(Message(role="assistant", content=text)))["content"] == "cut emoji \ufffd here"


def _results_file(tmp_path: Path) -> tuple[Path, bytes]:
    out = tmp_path / "results.jsonl"
    model = world_model(VERDICTS)
    records = run_suite([load_case(CASE)], lambda: _RawAgent(), EnvConfig(emulator_model=model, judge_model=model),  # type: ignore[arg-type,return-value]
                        run_hash="h", out=out, progress=False)
    assert len(records) == 1
    return out, out.read_bytes()


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_run_out_never_overwrites_an_existing_results_file(tmp_path: Path) -> None:
    out, before = _results_file(tmp_path)
    result = invoke("run", "--case", CASE, *FAKE_MODELS, "--out", str(out))
    assert_one_line_error(result, f"--out {out}: already exists")
    assert out.read_bytes() == before
    assert "reward" not in result.output, "the episode ran although its output could not be written"


MISSING = f"/nonexistent-{secrets.token_hex(4)}"
OUT_PATHS = [
    ("run-out-folder-at-root", ["run", "--case", CASE], f"{MISSING}/x.json", "does not exist"),
    ("run-out-nested-missing", ["run", "--case", CASE], "{tmp}/a/b/x.json", "does not exist"),
    ("run-out-is-folder", ["run", "--case", CASE], "{tmp}", "is a directory"),
    ("run-out-existing-empty-file", ["run", "--case", CASE], "{tmp}/empty.json", "already exists"),
    ("bench-out-folder-at-root", ["bench", "--case", CASE], f"{MISSING}/r.jsonl", "does not exist"),
    ("bench-out-nested-missing", ["bench", "--case", CASE], "{tmp}/a/b/r.jsonl", "does not exist"),
    ("schema-out-folder-at-root", ["cases", "schema"], f"{MISSING}/s.json", "does not exist"),
]


@pytest.mark.parametrize(
    ("args", "out", "fragment"),
    [(a, o, f) for _, a, o, f in OUT_PATHS],
    ids=[f"{NOTHING_WRITTEN}:{name}" for name, *_ in OUT_PATHS],
)
def test_bad_out_path_is_a_clear_error_and_creates_nothing(
    tmp_path: Path, args: list[str], out: str, fragment: str
) -> None:
    (tmp_path / "empty.json").write_text("")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    models = FAKE_MODELS if args[0] != "cases" else []
    result = invoke(*args, *models, "--out", out.format(tmp=tmp_path))
    assert_one_line_error(result, fragment)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert not Path(MISSING).exists()
    assert (tmp_path / "empty.json").read_text() == ""


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_bench_refuses_a_file_that_is_not_a_results_file(tmp_path: Path) -> None:
    other = tmp_path / "episode.json"
    other.write_text('{\n  "not": "results"\n}\n')
    result = invoke("bench", "--case", CASE, *FAKE_MODELS, "--out", str(other))
    assert_one_line_error(result, f"{other}:1: not a valid episode record")
    assert other.read_text() == '{\n  "not": "results"\n}\n'


@pytest.mark.parametrize("again", [1], ids=[f"{ACCEPTED}:bench-resumes-appending-only"])
def test_bench_on_existing_results_appends_and_keeps_every_line(tmp_path: Path, again: int) -> None:
    out, before = _results_file(tmp_path)
    model = world_model(VERDICTS)
    run_suite([load_case(CASE)], lambda: _RawAgent(), EnvConfig(emulator_model=model, judge_model=model),  # type: ignore[arg-type,return-value]
              run_hash="h", out=out, trials=1 + again, progress=False)
    after = out.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == 2


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_schema_out_refuses_to_overwrite_a_results_file(tmp_path: Path) -> None:
    out, before = _results_file(tmp_path)
    assert_one_line_error(invoke("cases", "schema", "--out", str(out)), "is not a JSON schema; refusing")
    assert out.read_bytes() == before


@pytest.mark.parametrize("twice", [2], ids=[f"{ACCEPTED}:schema-out-replaces-its-own-schema"])
def test_schema_out_replaces_an_earlier_schema(tmp_path: Path, twice: int) -> None:
    out = tmp_path / "case.schema.json"
    for _ in range(twice):
        assert invoke("cases", "schema", "--out", str(out)).exit_code == 0
    assert json.loads(out.read_text())["title"] == "Case"
    assert [p.name for p in tmp_path.iterdir()] == ["case.schema.json"]


@pytest.mark.parametrize(
    "command",
    ["import-toolemu", "import-oas"],
    ids=[f"{NOTHING_WRITTEN}:import-toolemu-out-missing-parent", f"{NOTHING_WRITTEN}:import-oas-out-missing-parent"],
)
def test_import_into_missing_parent_is_a_clear_error(command: str, tmp_path: Path) -> None:
    out = f"{MISSING}/cases"
    if command == "import-toolemu":
        cases, toolkits = write_toolemu_files(tmp_path)
        args = [str(cases), "--toolkits", str(toolkits)]
    else:
        args = [str(write_oas_task(tmp_path / TASK))]
    result = invoke("cases", command, *args, "--out", out)
    assert result.exit_code == 1 and "does not exist" in result.output, result.output
    assert not Path(MISSING).exists()


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_write_new_never_replaces_and_write_replace_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    write_new(path, "first")
    with pytest.raises(ConfigError, match="already exists"):
        write_new(path, "second")
    assert path.read_text() == "first"
    with pytest.raises(UnicodeEncodeError):
        write_replace(path, "bad \ud800")  # the old file survives a failed write, and no temp file stays
    assert path.read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["x.json"]
    write_replace(path, "third")
    assert path.read_text() == "third"


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_append_record_into_missing_folder_creates_nothing(tmp_path: Path) -> None:
    out, _ = _results_file(tmp_path)
    (record,) = read_records(out)
    with pytest.raises(ConfigError, match="does not exist"):
        append_record(tmp_path / "missing" / "r.jsonl", record)
    assert not (tmp_path / "missing").exists()


@pytest.mark.enable_socket
@pytest.mark.parametrize("status", [401], ids=[f"{ACCEPTED}:run-out-writes-error-episodes"])
def test_run_out_keeps_an_errored_episode(tmp_path: Path, status: int) -> None:
    out = tmp_path / "episode.json"
    with FakeChatServer(default=ScriptedReply(status=status, error_message="bad key")) as server:
        result = invoke("run", "--case", CASE, *_server_args(server), "--out", str(out))
    assert result.exit_code == 2
    assert json.loads(out.read_text())["status"] == "error"
