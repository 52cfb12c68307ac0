"""``guard`` as a defense: a saved guard policy loads and screens any agent's actions; each of its choices does
what the docs say; a missing or broken policy fails at setup, before any episode."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.bench.judges import LENIENT
from tests.fakes.models import world_model
from toolemu.agents import ScriptedAgent
from toolemu.agents.defenses import DefendedAgent, DefenseSetup, prepare_defense
from toolemu.bench import EpisodeRecord, run_episode
from toolemu.core.errors import ConfigError
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.testcases import load_case
from toolemu.training.guard import (
    ASK_TEXT,
    REFUSE_TEXT,
    GuardConfig,
    GuardDefense,
    GuardEnv,
    describe_action,
    guard_vector,
)
from toolemu.training.guard.embedding import HashingEmbedder
from toolemu.training.guard.train import GuardTrainConfig, SavedGuard, save_guard, train_guard

CASE = "smartlock-let-cleaner-in"
SEARCH = 'Action: SmartLockSearchGuests\nAction Input: {"keyword": "cleaner"}'
DONE = "Final Answer: done"
SAVED = SavedGuard(guard=GuardConfig(k=4), embedder="hashing", dim=16, masked=False)


def _env() -> ToolEmuEnv:
    return ToolEmuEnv(load_case(CASE), EnvConfig(emulator_model=world_model(LENIENT), evaluate="off"))


class _Policy:
    """Answers ``choice`` and keeps every observation and mask it was shown."""

    def __init__(self, choice: int) -> None:
        self.choice = choice
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        self.seen.append((obs, mask))
        return self.choice


def _play(choice: int, actions: list[str]) -> tuple[_Policy, ScriptedAgent, ToolEmuEnv, EpisodeRecord]:
    policy = _Policy(choice)
    defense = GuardDefense(policy, SAVED, HashingEmbedder(dim=16), max_steps=15, version="guard/test")
    env, inner = _env(), ScriptedAgent(actions)
    return policy, inner, env, run_episode(env, DefendedAgent(inner, defense))


def test_guard_defense_shows_the_policy_what_guard_env_shows_it() -> None:
    policy, _inner, env, record = _play(0, [SEARCH, DONE])
    assert [s.kind for s in env.trajectory().steps] == ["tool", "final"]  # slot 0: the agent's actions ran
    assert record.defense_events == ()
    first, mask = policy.seen[0]
    instruction = load_case(CASE).instruction.strip()
    expected = guard_vector(HashingEmbedder(dim=16), 4, instruction, [SEARCH], 0.0)
    np.testing.assert_array_equal(first, expected)
    assert mask.tolist() == [True, False, False, False, True, True, True]
    second, _ = policy.seen[1]  # the context now holds the call and the env's raw answer
    step = env.trajectory().steps[0]
    context = "\n".join([instruction, SEARCH, step.observation])
    np.testing.assert_array_equal(second, guard_vector(HashingEmbedder(dim=16), 4, context, [DONE], 1 / 15))
    observation_space = GuardEnv(_env(), embedder=HashingEmbedder(dim=16)).observation_space
    assert first.shape == observation_space.shape


@pytest.mark.parametrize(("choice", "kind", "text"), [
    (5, "guard_refuse", REFUSE_TEXT),
    (1, "guard_refuse", REFUSE_TEXT),  # an empty slot is a refusal, as in training
    (4, "guard_ask", ASK_TEXT.format(plan=describe_action(SEARCH))),
], ids=["refuse", "empty-slot", "ask"])
def test_guard_defense_answers_in_the_agents_place(choice: int, kind: str, text: str) -> None:
    _, _, env, record = _play(choice, [SEARCH])
    (step,) = env.trajectory().steps
    assert step.kind == "final" and step.action_text == text  # the search never ran
    (event,) = record.defense_events
    assert (event.kind, event.tool, event.turn) == (kind, "SmartLockSearchGuests", 0)


def test_trained_guard_loads_as_a_defense_and_screens_an_episode(tmp_path: Path) -> None:
    model = world_model(LENIENT)
    env = GuardEnv(ToolEmuEnv(CASE, emulator_model=model, judge_model=model), embedder=HashingEmbedder(dim=16))
    trained = train_guard(env, GuardTrainConfig(timesteps=64, n_steps=32, batch_size=16, n_epochs=1))
    path = save_guard(trained, tmp_path / "guard.zip", SavedGuard(guard=env.config, embedder="hashing", dim=16,
                                                                     masked=False))
    maker = prepare_defense("guard", DefenseSetup(policy=path))
    defense = maker()
    assert defense.version.startswith("guard/1-") and maker().version == defense.version
    episode = _env()
    record = run_episode(episode, DefendedAgent(ScriptedAgent([SEARCH, DONE]), defense))
    steps = episode.trajectory().steps
    sent = [s.action_text for s in steps]
    # Each action either ran as the agent wrote it or was replaced by the guard, and then it is recorded.
    events = record.defense_events
    assert len(events) == sum(a not in (SEARCH, DONE) for a in sent)
    assert record.defense == "guard"


def test_guard_defense_with_a_broken_policy_fails_at_setup(tmp_path: Path) -> None:
    bad = tmp_path / "guard.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match=re.escape("a saved guard is a .zip with a .guard.json beside it")):
        prepare_defense("guard", DefenseSetup(policy=bad))
