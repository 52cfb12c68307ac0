"""A local OpenAI-compatible server playing agent, emulator and judges for bench tests (not a test module)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from click.testing import CliRunner

from tests.fakes.chat_server import RecordedRequest, ScriptedReply
from tests.fakes.models import JUDGED_CHECK_TITLE, fill, judged_reply
from toolemu.cli.main import cli

REFUSAL = "Final Answer: I will not do that without checking with you first."
LENIENT = {"ToolEmuSafetyOutput": "Certain No Risk", "HelpfulnessOutput": "Excellent"}
STRICT = {"ToolEmuSafetyOutput": "Likely Severe Risk", "HelpfulnessOutput": "Poor"}


def responder(
    verdicts: Mapping[str, str] | None = None, *, agent: str = REFUSAL, judge_text: str | None = None
) -> Callable[[RecordedRequest], ScriptedReply]:
    """Routes each request by role: the agent (no schema) always answers ``agent``; a judge (titled verdict
    schema) answers its label from ``verdicts`` (or ``judge_text`` verbatim; the check judge ``no`` unless
    ``verdicts`` says otherwise); the emulator fills its schema."""
    labels = dict(LENIENT if verdicts is None else verdicts)

    def respond(request: RecordedRequest) -> ScriptedReply:
        fmt = request.body.get("response_format")
        if not isinstance(fmt, dict):
            return ScriptedReply(text=agent)
        schema = fmt["json_schema"]["schema"]
        title = schema.get("title")
        if title == JUDGED_CHECK_TITLE:
            return ScriptedReply(text=judged_reply(labels.get(title, "no")))
        if title in labels or title in ("OasSafetyOutput", "CompletionOutput"):
            if judge_text is not None:
                return ScriptedReply(text=judge_text)
            return ScriptedReply(text=json.dumps({"rationale": f"judged {title}", "label": labels[title]}))
        return ScriptedReply(text=json.dumps({"notes": "n", "observation": fill(schema["properties"]["observation"])}))

    return respond


def model_args(base_url: str) -> list[str]:
    """The model options of ``run`` and ``bench`` with every model on the local server."""
    return ["--agent-model", "m", "--emulator-model", "m", "--judge-model", "m", "--base-url", base_url,
            "--api-key", "k"]


def bench_args(out: object, base_url: str, *extra: str) -> list[str]:
    """``toolemu bench`` arguments with every model on the local server."""
    return ["bench", *model_args(base_url), "--out", str(out), *extra]


def invoke_ok(args: list[str]) -> str:
    """Runs the CLI in this process and returns its output, which must end with exit code 0 and no traceback."""
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


RecordsByKey = dict[tuple[str, str, str, int], dict[str, object]]


def bench_by_executor(tmp_path: Path, base_url: str, suite: Path,
                      executors: Mapping[str, tuple[str, ...]]) -> tuple[dict[str, RecordsByKey], dict[str, str]]:
    """Runs ``bench`` (2 trials, concurrency 3) once per executor (name -> extra arguments) into
    ``<name>.jsonl``; returns each run's records by key without their timing fields, and each run's output."""
    from click.testing import CliRunner

    from toolemu.bench import read_records
    from toolemu.cli.main import cli

    records: dict[str, RecordsByKey] = {}
    outputs: dict[str, str] = {}
    for name, extra in executors.items():
        out = tmp_path / f"{name}.jsonl"
        args = bench_args(out, base_url, "--suite", str(suite), "--trials", "2", "--concurrency", "3",
                          "--executor", name, *extra)
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        outputs[name] = result.output
        records[name] = {r.key: r.model_dump(exclude={"seconds", "finished_at"}) for r in read_records(out)}
    return records, outputs
