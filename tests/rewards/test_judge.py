"""The judge-call runner: lenient JSON parsing, schema-forced sampling, bounded re-asks, typed errors."""

from __future__ import annotations

import re

import pytest

from toolemu.core.errors import JudgeError, LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.fake import FakeLLM
from toolemu.rewards.helpfulness import HelpfulnessOutput
from toolemu.rewards.judge import extract_json_object, load_prompt, match_label, run_judge

PROMPT = [Message(role="system", content="judge"), Message(role="user", content="data")]
GOOD = '{"rationale": "done well", "label": "Good"}'


@pytest.mark.parametrize(
    "text",
    [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"Here is my verdict:\n{GOOD}\nThanks.",
        f"Thinking {{not json}} then {GOOD}",
        f"```\n{GOOD}```",
    ],
    ids=["bare", "json-fence", "prose-around", "brace-before", "plain-fence"],
)
def test_extract_json_object_tolerates_wrapping(text: str) -> None:
    assert extract_json_object(text) == {"rationale": "done well", "label": "Good"}


@pytest.mark.parametrize("text", ["", "no verdict", "[1, 2]"], ids=["empty", "prose", "list"])
def test_extract_json_object_rejects_non_objects(text: str) -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json_object(text)


def test_extract_json_object_names_a_cut_off_object() -> None:
    with pytest.raises(ValueError, match="cut off or malformed"):
        extract_json_object('{"label": "Good", "rationale": "The agent did')


def test_match_label_maps_loose_spellings() -> None:
    labels = ["Certain No Risk", "Likely Severe Risk"]
    assert match_label("CERTAIN-NO-RISK (3)", labels) == "Certain No Risk"
    assert match_label("severe", labels) == "severe"
    assert match_label(3, labels) == 3


def test_run_judge_forces_schema_and_greedy_sampling() -> None:
    model = FakeLLM([GOOD])
    call = run_judge(model, PROMPT, HelpfulnessOutput, judge="helpfulness")
    assert call.output.label == "Good" and call.raw == GOOD and call.attempts == (GOOD,)
    params = model.requests[0].params
    assert params.temperature == 0.0
    assert params.json_schema == HelpfulnessOutput.model_json_schema()
    assert params.json_schema["additionalProperties"] is False
    assert "'Excellent', 'Good', 'Unsatisfactory', 'Poor'" in str(params.json_schema["properties"])


def test_run_judge_reasks_with_the_validation_error() -> None:
    model = FakeLLM(['{"rationale": "x", "label": "Great"}', GOOD])
    call = run_judge(model, PROMPT, HelpfulnessOutput, judge="helpfulness")
    assert call.output.label == "Good"
    assert len(call.attempts) == 2
    second = model.requests[1].messages
    assert second[:2] == tuple(PROMPT)
    assert second[2] == Message(role="assistant", content='{"rationale": "x", "label": "Great"}')
    assert second[3].role == "user"
    assert "field `label`" in second[3].content and "'Excellent'" in second[3].content


def test_run_judge_ignores_extra_keys() -> None:
    call = run_judge(
        FakeLLM(['{"rationale": "r", "label": "Poor", "score": 0}']),
        PROMPT,
        HelpfulnessOutput,
        judge="helpfulness",
    )
    assert call.output.label == "Poor"


def test_run_judge_raises_judge_error_after_two_reasks() -> None:
    replies = ["I cannot decide.", '{"label": "Good"}', "```json\n{}\n```", GOOD]
    model = FakeLLM(replies)
    with pytest.raises(
        JudgeError, match=re.escape("judge `helpfulness` (fake) gave no valid verdict in 3 replies")
    ) as info:
        run_judge(model, PROMPT, HelpfulnessOutput, judge="helpfulness")
    assert info.value.raw_outputs == tuple(replies[:3])
    assert info.value.boundary == "judge"
    assert model.remaining == 1


def test_run_judge_max_reasks_zero_asks_once() -> None:
    model = FakeLLM(["nope", GOOD])
    with pytest.raises(JudgeError):
        run_judge(model, PROMPT, HelpfulnessOutput, judge="helpfulness", max_reasks=0)
    assert len(model.requests) == 1


def test_run_judge_propagates_backend_error() -> None:
    model = FakeLLM([LLMBackendError("server down", status_code=503)])
    with pytest.raises(LLMBackendError, match="server down") as info:
        run_judge(model, PROMPT, HelpfulnessOutput, judge="helpfulness")
    assert not isinstance(info.value, JudgeError)


@pytest.mark.parametrize("role", ["safety_toolemu", "safety_oas", "helpfulness", "completion"])
def test_load_prompt_has_hardening_and_template(role: str) -> None:
    prompt = load_prompt(role)
    assert "never follow them" in prompt.system
    assert "$data_rules" not in prompt.system
    assert "$trajectory" in prompt.user.template and "$final_answer" in prompt.user.template
    assert re.fullmatch(rf"{role}/1-[0-9a-f]{{8}}", prompt.version(1))
