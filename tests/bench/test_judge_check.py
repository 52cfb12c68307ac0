"""``toolemu judges check``: reference runs played through the env and judged; failures are errors, not labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fakes.chat_server import FakeChatServer, RecordedRequest, ScriptedReply
from tests.fakes.models import fill
from toolemu.cli.main import _register_commands, cli
from toolemu.reports import load_judge_card

CASES = ["--case", "smartlock-let-cleaner-in", "--case", "email-threaten-neighbour"]


@pytest.fixture(scope="module", autouse=True)
def _commands() -> None:
    _register_commands()


def _respond(request: RecordedRequest) -> ScriptedReply:
    """The emulator fills its schema; the ToolEmu safety judge always says severe risk, the helpfulness judge
    Poor, and the OAS safety judge never gives a valid verdict."""
    fmt = request.body.get("response_format")
    assert isinstance(fmt, dict)
    schema = fmt["json_schema"]["schema"]
    verdicts = {"ToolEmuSafetyOutput": "Likely Severe Risk", "HelpfulnessOutput": "Poor"}
    if schema.get("title") == "OasSafetyOutput":
        return ScriptedReply(text="I think it is fine")
    if schema.get("title") in verdicts:
        return ScriptedReply(text=json.dumps({"rationale": "r", "label": verdicts[schema["title"]]}))
    return ScriptedReply(text=json.dumps({"notes": "n", "observation": fill(schema["properties"]["observation"])}))


@pytest.mark.enable_socket
def test_judges_check_counts_agreement_per_scale_and_failures_as_errors(tmp_path: Path) -> None:
    out = tmp_path / "m.judge-card.json"
    with FakeChatServer(default=_respond) as server:
        args = ["judges", "check", "--judge-model", "m", "--emulator-model", "m", "--base-url", server.base_url,
                "--api-key", "k", *CASES, "--out", str(out)]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    card = load_judge_card(out)
    # The two cases hold three safe and two unsafe reference runs.
    assert [i.label for i in card.items].count("safe") == 3 and card.n_reference_runs == 5
    toolemu, oas = card.safety
    # Always "unsafe": right on the two unsafe runs, a false alarm on the three safe ones.
    assert (toolemu.accuracy.value, toolemu.accuracy.n, toolemu.n_errors) == (0.4, 5, 0)
    assert (toolemu.false_safe_rate.value, toolemu.false_safe_rate.n) == (0.0, 2)
    assert (toolemu.false_unsafe_rate.value, toolemu.false_unsafe_rate.n) == (1.0, 3)
    # Never a valid verdict: five errors, no rate, neither label.
    assert (oas.n_errors, oas.accuracy.n, oas.accuracy.value) == (5, 0, None)
    assert all(i.judged_unsafe["oas"] is None and i.safety["oas"] is None for i in card.items)
    assert card.errors_by_boundary == {"judge": 5}
    # Always "Poor": right on the unhelpful (unsafe) runs, wrong on the three helpful safe ones.
    h = card.helpfulness
    assert (h.accuracy.value, h.accuracy.n, h.n_errors) == (0.4, 5, 0)
    assert (h.false_helpful_rate.value, h.false_helpful_rate.n) == (0.0, 2)
    assert (h.false_unhelpful_rate.value, h.false_unhelpful_rate.n) == (1.0, 3)
    assert [i.helpful for i in card.items] == [i.label == "safe" for i in card.items]
    assert card.judge_model.endswith("m") and "safety_toolemu" in card.versions
    assert "safety (toolemu): accuracy 0.400 [" in result.output
    assert "false-unsafe 1.000 [1.000, 1.000] n=3" in result.output
    assert "safety (oas): accuracy n/a n=0" in result.output and "errors 5" in result.output
    assert "helpfulness: accuracy 0.400 [" in result.output


def test_judges_check_without_reference_runs_is_a_one_line_error(tmp_path: Path) -> None:
    case = tmp_path / "c.yaml"
    case.write_text("id: bare\ninstruction: do it\ntoolkits: [Terminal]\n")
    result = CliRunner().invoke(cli, ["judges", "check", "--judge-model", "fake:x", "--emulator-model", "fake:x",
                                      "--suite", str(case)])
    assert result.exit_code == 1
    assert "error: the suite has no reference run to judge" in result.output
