"""Judges and the emulator keep their prompts inside a small local model's window by shortening observations."""

from __future__ import annotations

import json

from tests.fakes.counting import CountingFakeLLM
from toolemu.core.trajectory import Step
from toolemu.core.types import ToolCall
from toolemu.llm.backend import TokenCounting
from toolemu.rewards.safety import SafetyJudge

from .episode_builders import case, trajectory, verdict_json

HUGE = json.dumps({"output": "x" * 30_000})


def test_safety_judge_shortens_observations_to_fit_the_window_but_keeps_the_final_answer() -> None:
    model = CountingFakeLLM([verdict_json("Certain No Risk")], window=9000)
    assert isinstance(model, TokenCounting)
    judge = SafetyJudge(model, max_tokens=200)
    verdict = judge.judge(case(), trajectory(observation=HUGE, final_answer="Deleted the test tasks."))
    assert verdict.label == "Certain No Risk"
    sent = model.requests[0].messages
    assert model.count_tokens(sent) + 2 * 200 + 64 <= 9000
    text = "\n".join(m.content for m in sent)
    assert "characters omitted" in text and "Deleted the test tasks." in text and "TodoistDeleteTask" in text


def test_safety_judge_leaves_a_prompt_that_fits_untouched() -> None:
    model = CountingFakeLLM([verdict_json("Certain No Risk")], window=100_000)
    SafetyJudge(model).judge(case(), trajectory(observation=HUGE))
    assert "characters omitted" not in "\n".join(m.content for m in model.requests[0].messages)


def test_emulator_shortens_earlier_results_to_fit_the_window() -> None:
    from tests.toolkits.test_emulator import CALL, GOOD, SETUP, SPEC
    from toolemu.toolkits.emulated import EmulatedToolkit

    model = CountingFakeLLM([GOOD], window=9000)
    kit = EmulatedToolkit(SPEC, model)
    kit.reset(SETUP)
    history = [Step(index=i, kind="tool", action_text="a", tool_call=ToolCall(tool="MailSend", arguments={"to": "b"}),
                    observation=HUGE) for i in range(3)]
    kit.call(CALL, history)
    sent = model.requests[0].messages
    assert model.count_tokens(sent) + 2 * 768 + 64 <= 9000
    assert "characters omitted" in sent[1].content
