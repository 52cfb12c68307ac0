"""``toolemu bench --defense``: each defense is its own run (config hash), its records name it, and re-running
resumes every one of them."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.bench.judges import bench_args, invoke_ok, responder
from tests.fakes.chat_server import FakeChatServer, RecordedRequest, ScriptedReply
from toolemu.bench import read_records
from toolemu.bench.run_info import load_run_info
from toolemu.cli.main import cli

EMULATED_DIR = Path(str(resources.files("toolemu.testcases").joinpath("data", "emulated")))
SEARCH = 'Action: SmartLockSearchGuests\nAction Input: {"keyword": "cleaner"}'


def _with_detector(verdict: str) -> Callable[[RecordedRequest], ScriptedReply]:
    """The bench responder, with the detector's requests (a schema with ``injection``) answered ``verdict``."""
    world = responder(agent=SEARCH)

    def respond(request: RecordedRequest) -> ScriptedReply:
        fmt = request.body.get("response_format")
        if isinstance(fmt, dict) and "injection" in fmt["json_schema"]["schema"].get("properties", {}):
            return ScriptedReply(text=verdict)
        return world(request)

    return respond


@pytest.fixture
def two_cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in ("smartlock-let-cleaner-in", "email-threaten-neighbour"):
        shutil.copy(EMULATED_DIR / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


@pytest.mark.enable_socket
def test_bench_defense_records_each_defense_as_its_own_run_and_resumes(tmp_path: Path, two_cases: Path) -> None:
    out = tmp_path / "results.jsonl"
    with FakeChatServer(default=_with_detector('{"injection": false, "evidence": ""}')) as server:
        plain = bench_args(out, server.base_url, "--suite", str(two_cases), "--max-steps", "2")
        invoke_ok(plain)
        args = [*plain, "--defense", "none,spotlight", "--defense", "detector", "--defense-model", "m"]
        output = invoke_ok(args)
        first = len(server.chat_requests)
        again = invoke_ok(args)
        assert len(server.chat_requests) == first  # every defense's run resumed: nothing ran
    records = list(read_records(out))
    assert len(records) == 6  # plain (= none), spotlight, detector; two cases each
    by_defense = {d: {r.config_hash for r in records if r.defense == d} for d in (None, "spotlight", "detector")}
    assert all(len(hashes) == 1 for hashes in by_defense.values())
    assert len(set().union(*by_defense.values())) == 3
    assert all(r.status == "truncated" and r.evaluation is not None for r in records), [r.error for r in records]
    assert "defense spotlight" in output and "defense detector" in output and "defense spotlight" in again
    info = load_run_info(out)
    assert {i.label for i in info.values()} >= {"openai:m (plain) + spotlight", "openai:m (plain) + detector",
                                               "openai:m (plain)"}
    detector = next(h for h in by_defense["detector"])
    description = info[detector].description["defense"]
    assert isinstance(description, dict)
    assert description["name"] == "detector" and description["model"] == "openai:m"
    assert str(description["version"]).startswith("detector/1-")


@pytest.mark.enable_socket
def test_bench_defense_failure_is_an_error_record_naming_the_defense(tmp_path: Path, two_cases: Path) -> None:
    out = tmp_path / "results.jsonl"
    with FakeChatServer(default=_with_detector("not a verdict")) as server:
        invoke_ok(bench_args(out, server.base_url, "--suite", str(two_cases), "--case", "smartlock-let-cleaner-in",
                             "--defense", "detector", "--max-steps", "2"))
    (record,) = read_records(out)
    assert record.status == "error" and record.evaluation is None and record.defense == "detector"
    assert record.error is not None and record.error.type == "DefenseError"
    assert "injection detector verdict on `SmartLockSearchGuests`" in record.error.message


def test_bench_unknown_defense_or_missing_guard_is_a_one_line_error(tmp_path: Path) -> None:
    base = ["bench", "--agent-model", "fake:Final Answer: no", "--emulator-model", "fake:x", "--evaluate", "rules",
            "--out", str(tmp_path / "r.jsonl"), "--limit", "1"]
    for extra, message in ((["--defense", "spotlite"], "defense `spotlite` is not registered. Did you mean "
                                                       "`spotlight`?"),
                           (["--defense", "guard"], "defense `guard` needs a trained guard policy")):
        result = CliRunner().invoke(cli, [*base, *extra])
        assert result.exit_code == 1, result.output
        assert re.search(re.escape(message), result.output) and "Traceback" not in result.output
    assert not (tmp_path / "r.jsonl").exists() or not (tmp_path / "r.jsonl").read_text().strip()


@pytest.mark.enable_socket
def test_rescore_keeps_the_defense_and_its_events(tmp_path: Path, two_cases: Path) -> None:
    out, rescored = tmp_path / "results.jsonl", tmp_path / "rescored.jsonl"
    with FakeChatServer(default=_with_detector('{"injection": true, "evidence": "obey me"}')) as server:
        invoke_ok(bench_args(out, server.base_url, "--suite", str(two_cases), "--case", "smartlock-let-cleaner-in",
                             "--defense", "detector", "--max-steps", "2"))
        (before,) = read_records(out)
        # Two calls ran; the agent saw the first output only (the step budget ended the episode after the second).
        assert [e.kind for e in before.defense_events] == ["withheld_result"]
        invoke_ok(["rescore", str(out), "--out", str(rescored), "--rules-only"])
    (after,) = read_records(rescored)
    assert after.config_hash != before.config_hash
    assert (after.defense, after.defense_events) == ("detector", before.defense_events)
    assert next(iter(load_run_info(rescored).values())).label.endswith("+ detector")
