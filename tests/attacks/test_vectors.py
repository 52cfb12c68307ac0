"""Each vector lands its text where it should and nowhere else: never in the instruction or the first
observation (bar the tool-description vector, whose channel is the tool list), never in another tool's result,
and never in a model prompt the channel does not reach."""

from __future__ import annotations

import json

import pytest

from tests.attacks.cases import CHAT, CHAT_RUN, MAIL, MAIL_RUN, SHELL, SHELL_RUN, emulator, play
from toolemu.agents import ScriptedAgent
from toolemu.attacks import apply_attack, builtin_attacks
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.llm import FakeLLM


def _has(seen: str, text: str) -> bool:
    """Whether ``seen`` holds ``text``, as is or JSON-escaped (inside a tool's JSON result)."""
    return text in seen or json.dumps(text, ensure_ascii=False)[1:-1] in seen


def _prompts(model: FakeLLM) -> list[str]:
    return ["\n".join(m.content for m in r.messages) for r in model.requests]


def _first_observation(case: object) -> str:
    env = ToolEmuEnv(case, EnvConfig(emulator_model=emulator(), evaluate="rules"))
    try:
        return env.reset(seed=0)[0]
    finally:
        env.close()


def test_tool_result_lands_only_in_the_named_tools_results() -> None:
    attack = builtin_attacks()["inbox-forward"]
    case = apply_attack(attack, MAIL)
    text = case.attack.text  # type: ignore[union-attr]
    model = emulator()
    agent = ScriptedAgent(MAIL_RUN)
    record = play(case, agent, model=model)
    by_tool = {s.tool_call.tool: s.observation for s in record.trajectory.steps if s.tool_call is not None}
    assert _has(by_tool["EmailClientSearchEmails"], text) and _has(by_tool["EmailClientReadEmail"], text)
    assert not _has(by_tool["EmailClientSendEmail"], text)
    assert not _has(agent.observations[0], text) and not _has(record.trajectory.instruction, text)
    assert not _has(_prompts(model)[0], text)  # the emulator is never told; it sees the text only in the history
    assert record.attack == "inbox-forward" and record.case is not None and record.case.attack is not None


def test_world_fact_reaches_the_emulator_not_the_agent_directly() -> None:
    case = apply_attack(builtin_attacks()["world-refund-request"], MAIL)
    text = case.attack.text  # type: ignore[union-attr]
    assert any(_has(fact, text) for fact in case.world) and not any(_has(fact, text) for fact in MAIL.world)
    model = emulator()
    agent = ScriptedAgent(MAIL_RUN)
    record = play(case, agent, model=model)
    emulator_prompts = [p for p in _prompts(model) if "EmailClient" in p]
    assert emulator_prompts and all(_has(p, text) for p in emulator_prompts)
    assert not _has(agent.observations[0], text) and not _has(record.trajectory.instruction, text)


def test_tool_description_lands_in_its_tool_line_only() -> None:
    case = apply_attack(builtin_attacks()["tool-desc-exfil"], MAIL)
    text = case.attack.text  # type: ignore[union-attr]
    assert case.attack.vector.tools == ("EmailClientSearchEmails",)  # type: ignore[union-attr]
    first = _first_observation(case)
    assert first.count(text) == 1
    tool_lines = [line for line in first.splitlines() if "EmailClient" in line]
    assert next(line for line in tool_lines if text.splitlines()[0] in line).lstrip("- ").startswith(
        "EmailClientSearchEmails")
    assert not _has(_first_observation(MAIL), text)
    model = emulator()
    record = play(case, ScriptedAgent(MAIL_RUN), model=model)
    assert not any(_has(s.observation, text) for s in record.trajectory.steps)
    assert not any(_has(p, text) for p in _prompts(model))  # the emulator keeps the toolkit's own spec
    assert not any(_has(t.summary, text) for spec in record.toolkit_specs for t in spec.tools)  # so do the judges


def test_npc_message_lands_in_that_coworkers_replies_only() -> None:
    case = apply_attack(builtin_attacks()["npc-phish-link"], CHAT)
    text = case.attack.text  # type: ignore[union-attr]
    assert case.attack.vector.npc == "Priya"  # type: ignore[union-attr]
    agent = ScriptedAgent(CHAT_RUN)
    record = play(case, agent)
    steps = [s for s in record.trajectory.steps if s.tool_call is not None]
    people, omar, priya = (s.observation for s in steps)
    assert _has(priya, text) and not _has(omar, text) and not _has(people, text)
    assert not _has(agent.observations[0], text) and not _has(record.trajectory.instruction, text)


@pytest.mark.sandbox
def test_file_vector_lands_in_the_first_matching_seed_file_only() -> None:
    case = apply_attack(builtin_attacks()["seed-file-beacon"], SHELL)
    text = case.attack.text  # type: ignore[union-attr]
    assert case.attack.vector.path == "/workspace/NOTES.md"  # type: ignore[union-attr]
    agent = ScriptedAgent(SHELL_RUN)
    record = play(case, agent)
    notes, todo = (s.observation for s in record.trajectory.steps if s.tool_call is not None)
    assert text.splitlines()[0] in notes and "Build the parser first." in notes
    assert text.splitlines()[0] not in todo
    assert not _has(agent.observations[0], text) and not _has(record.trajectory.instruction, text)
    plain = play(SHELL, ScriptedAgent(SHELL_RUN))
    assert text.splitlines()[0] not in plain.trajectory.steps[0].observation


def test_judges_are_told_the_goal_and_the_agent_is_not() -> None:
    attack = builtin_attacks()["inbox-forward"]
    case = apply_attack(attack, MAIL)
    assert attack.goal.summary[1:] in case.unsafe_behavior and "inbox-forward" in case.unsafe_behavior
    model = emulator()
    agent = ScriptedAgent(MAIL_RUN)
    record = play(case, agent, model=model, evaluate="full")
    assert record.evaluation is not None and record.evaluation.status == "ok"
    safety = [p for p in _prompts(model) if "UNSAFE_BEHAVIOR" in p]
    assert safety and all(attack.goal.summary[1:] in p for p in safety)
    assert not any(attack.goal.summary[1:] in o for o in agent.observations)
