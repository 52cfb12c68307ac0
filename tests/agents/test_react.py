"""ReAct agent: prompt variants, chat history, stop strings, cutting self-written observations, errors."""

from __future__ import annotations

import itertools

import pytest

from tests.fakes.counting import CountingFakeLLM
from toolemu.agents import Agent, ReActAgent, ReActVariant, system_prompt
from toolemu.core.errors import ConfigError, EnvStateError, LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.backend import ChatResponse
from toolemu.llm.fake import FakeLLM

FIRST = "User instruction: list my files.\nTools:\nTerminalExecute: runs a command."
STEP = 'Thought: look first.\nAction: TerminalExecute\nAction Input: {"command": "ls"}'
FINAL = "Thought: done.\nFinal Answer: You have two files."


def test_react_variants_share_format_but_differ() -> None:
    prompts = {v: system_prompt(v) for v in ("plain", "safety", "helpful_safe")}
    for a, b in itertools.combinations(prompts.values(), 2):
        assert a != b
    for text in prompts.values():
        assert "Action Input:" in text and "Final Answer:" in text and "Never write\nan Observation" in text
    assert "ask the user" in prompts["safety"] and "ask the user" not in prompts["plain"]
    assert "do every safe part" in prompts["helpful_safe"]


def test_react_unknown_variant_is_config_error() -> None:
    with pytest.raises(
        ConfigError, match="ReAct variant `paranoid` is unknown; use one of plain, safety, helpful_safe"
    ):
        ReActAgent(FakeLLM(), variant="paranoid")  # type: ignore[arg-type]


@pytest.mark.parametrize("variant", ["plain", "safety", "helpful_safe"])
def test_react_agent_sends_variant_prompt_and_keeps_history(variant: ReActVariant) -> None:
    model = FakeLLM([STEP, FINAL])
    agent = ReActAgent(model, variant=variant, max_tokens=128, seed=3)
    assert isinstance(agent, Agent)
    agent.reset(FIRST)
    assert agent.act(FIRST) == STEP
    assert agent.act('{"output": "a.txt b.txt", "exit_code": 0}') == FINAL
    first, second = model.requests
    assert first.messages == (
        Message(role="system", content=system_prompt(variant)),
        Message(role="user", content=FIRST),
    )
    assert second.messages[2:] == (
        Message(role="assistant", content=STEP),
        Message(role="user", content='Observation: {"output": "a.txt b.txt", "exit_code": 0}'),
    )
    params = first.params
    assert "\nObservation:" in params.stop
    assert (params.temperature, params.max_tokens, params.seed, params.json_schema) == (0.0, 128, 3, None)
    assert agent.messages[-1] == Message(role="assistant", content=FINAL)
    assert agent.version.startswith(f"react_{variant}/2-")


def test_react_agent_cuts_a_self_written_observation() -> None:
    rambling = STEP + "\nObservation: a.txt (made up)\nThought: done\nFinal Answer: a.txt"
    # A ChatResponse is returned as-is by FakeLLM, like a backend that ignores stop strings.
    agent = ReActAgent(FakeLLM([ChatResponse(text=rambling, model="fake")]))
    agent.reset(FIRST)
    assert agent.act(FIRST) == STEP


def test_react_agent_stops_before_a_second_step() -> None:
    looping = STEP + "\n" + STEP.replace("look first", "again") + "\n" + STEP
    model = FakeLLM([looping])  # a text reply is cut at the first stop string, as llama.cpp and servers do
    agent = ReActAgent(model)
    agent.reset(FIRST)
    assert agent.act(FIRST) == STEP
    assert "\nThought:" in model.requests[0].params.stop
    # A backend that ignores stop strings: the reply is cut by the agent itself.
    agent = ReActAgent(FakeLLM([ChatResponse(text=looping, model="fake")]))
    agent.reset(FIRST)
    assert agent.act(FIRST) == STEP


def test_react_agent_asks_again_when_the_reply_starts_with_a_stop() -> None:
    # "\nThought: ..." as the very first tokens is cut to nothing by the "\nThought:" stop: the agent asks again
    # with the observation stops only, and gets the step.
    model = FakeLLM(["\n" + STEP, "\n" + STEP])
    agent = ReActAgent(model)
    agent.reset(FIRST)
    assert agent.act(FIRST) == STEP
    first, second = model.requests
    assert "\nThought:" in first.params.stop and "\nThought:" not in second.params.stop
    assert "\nObservation:" in second.params.stop and second.messages == first.messages


def test_react_agent_reset_starts_a_fresh_history() -> None:
    model = FakeLLM([STEP, FINAL])
    agent = ReActAgent(model)
    agent.reset(FIRST)
    agent.act(FIRST)
    agent.reset("Second task")
    agent.act("Second task")
    assert [m.role for m in model.requests[1].messages] == ["system", "user"]
    assert model.requests[1].messages[1].content == "Second task"


def test_react_agent_act_before_reset_is_error() -> None:
    with pytest.raises(EnvStateError, match=r"act\(\) called before reset\(\)"):
        ReActAgent(FakeLLM([FINAL])).act(FIRST)


def test_react_agent_backend_error_propagates() -> None:
    agent = ReActAgent(FakeLLM([LLMBackendError("rate limited", status_code=429, retryable=True)]))
    agent.reset(FIRST)
    with pytest.raises(LLMBackendError, match="rate limited"):
        agent.act(FIRST)


def test_react_agent_keeps_the_prompt_in_the_window_and_the_instruction_always() -> None:
    model = CountingFakeLLM([STEP] * 12, window=2200)
    agent = ReActAgent(model, max_tokens=100)
    agent.reset(FIRST)
    agent.act(FIRST)
    for i in range(10):
        agent.act(f'{{"output": "{i}{"x" * 300}"}}')
    for request in model.requests:
        assert model.count_tokens(request.messages) <= 2200 - 100
        assert request.messages[0].content == system_prompt("plain") and request.messages[1].content == FIRST
    last = model.requests[-1].messages
    assert last[-1].content.startswith('Observation: {"output": "9x')  # the newest observation is whole
    assert any(m.content.startswith("Observation: [omitted to fit") for m in last)


def test_react_agent_without_a_window_never_trims() -> None:
    model = FakeLLM([STEP] * 4)
    agent = ReActAgent(model)
    agent.reset(FIRST)
    for obs in (FIRST, "a" * 5000, "b" * 5000, "c" * 5000):
        agent.act(obs)
    assert not any("omitted" in m.content for m in model.requests[-1].messages)
