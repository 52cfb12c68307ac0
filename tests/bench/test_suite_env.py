"""ToolEmuSuite-v0: a case sampled per reset, seeded; picked by option; under Sync and Async vector envs."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv, VectorEnv

import toolemu  # noqa: F401 (registers the env ids)
from tests.fakes.models import world_model
from toolemu.agents import tool_call_text
from toolemu.bench import ToolEmuSuiteEnv
from toolemu.core.errors import ConfigError, NotRegisteredError
from toolemu.envs import INFO_CASE_ID, INFO_EVALUATION, INFO_STEP
from toolemu.testcases import load_case

CASES = ["smartlock-let-cleaner-in", "email-send-colleague-address", "bank-pay-phishing-invoice"]
SAFE_JUDGES = {"ToolEmuSafetyOutput": "Certain No Risk", "HelpfulnessOutput": "Excellent"}
REFUSAL = "Thought: not sure this is safe.\nFinal Answer: I would rather not do this."


def _suite(**kwargs: object) -> gym.Env[str, str]:
    model = world_model(SAFE_JUDGES)
    return gym.make("ToolEmuSuite-v0", cases=CASES, emulator_model=model, judge_model=model, **kwargs)


def _safe_actions(case_id: str) -> list[str]:
    run = next(r for r in load_case(case_id).reference_runs if r.label == "safe")
    return [a if isinstance(a, str) else tool_call_text(a) for a in run.actions]


def test_suite_env_samples_cases_from_the_seed_and_reports_the_case_id() -> None:
    def ids(seed: int) -> list[str]:
        env = _suite()
        first = [env.reset(seed=seed)[1][INFO_CASE_ID]]
        return first + [env.reset()[1][INFO_CASE_ID] for _ in range(11)]

    run = ids(3)
    assert run == ids(3)
    assert set(run) == set(CASES)  # 12 uniform draws over 3 cases
    assert run != ids(4)


def test_suite_env_option_picks_the_case_and_info_names_it_every_step() -> None:
    env = _suite()
    obs, info = env.reset(seed=0, options={"case": "email-send-colleague-address"})
    assert info[INFO_CASE_ID] == "email-send-colleague-address"
    assert load_case("email-send-colleague-address").instruction in obs
    _, reward, terminated, _, info = env.step(_safe_actions("email-send-colleague-address")[0])
    assert terminated and info[INFO_CASE_ID] == "email-send-colleague-address" and reward == 1.0


def test_suite_env_rejects_unknown_case_and_option_in_one_line() -> None:
    env = _suite()
    with pytest.raises(NotRegisteredError, match=re.escape("Did you mean `smartlock-let-cleaner-in`?")):
        env.reset(options={"case": "smartlock-let-cleanr-in"})
    with pytest.raises(ConfigError, match="unknown key `cases`"):
        env.reset(options={"cases": CASES[0]})
    with pytest.raises(ConfigError, match="listed twice"):
        ToolEmuSuiteEnv([CASES[0], CASES[0]], emulator_model=world_model(), evaluate=False)


def test_suite_env_resolves_each_model_once_for_every_case() -> None:
    env = ToolEmuSuiteEnv(CASES, emulator_model="fake:{}", evaluate="rules")
    for case_id in CASES:
        env.reset(seed=0, options={"case": case_id})
    models = {id(inner.models.emulator) for inner in env._envs.values()}
    assert len(env._envs) == 3 and len(models) == 1
    assert all(inner.models.judge is None for inner in env._envs.values())


def test_suite_env_passes_gymnasium_check_env() -> None:
    check_env(_suite().unwrapped, skip_render_check=True)


def _drive(vec: VectorEnv, steps: int) -> list[list[tuple[str, int, float]]]:
    """Sub-env 0 refuses at once (1 step); sub-env 1 plays the case's safe reference run (1 to 4 steps).

    Returns each sub-env's finished episodes as (case id, length, reward), checking NEXT_STEP autoreset: the
    step after an episode ends starts the next one (reward 0, step 0) whatever the action.
    """
    _, infos = vec.reset(seed=11)
    finished: list[list[tuple[str, int, float]]] = [[], []]
    autoreset = np.zeros(2, dtype=bool)
    for _ in range(steps):
        case_ids, positions = infos[INFO_CASE_ID], infos[INFO_STEP]
        # After an episode ends its info is the terminal one, and the next action is ignored.
        played = REFUSAL if autoreset[1] else _safe_actions(case_ids[1])[int(positions[1])]
        actions = (REFUSAL, played)
        _, rewards, terminated, truncated, infos = vec.step(actions)
        for i in range(2):
            if autoreset[i]:
                assert rewards[i] == 0.0 and infos[INFO_STEP][i] == 0
            elif terminated[i] or truncated[i]:
                assert infos[INFO_EVALUATION][i].status == "ok"
                finished[i].append((infos[INFO_CASE_ID][i], int(infos[INFO_STEP][i]), float(rewards[i])))
        autoreset = terminated | truncated
    vec.close()
    return finished


def _make() -> gym.Env[str, str]:
    return _suite()


def test_vector_envs_autoreset_episodes_of_different_lengths_sync_and_async_alike() -> None:
    sync = _drive(SyncVectorEnv([_make, _make]), 16)
    refusals, safe_runs = sync
    assert len(refusals) == 8 and all(length == 1 for _, length, _ in refusals)
    assert {length for _, length, _ in safe_runs} >= {1, 3}  # different lengths in one sub-env too
    assert all(length == len(_safe_actions(case)) for case, length, _ in safe_runs)
    assert all(reward == 1.0 for *_, reward in refusals + safe_runs)
    assert len({case for case, *_ in refusals + safe_runs}) > 1
    # Separate processes, the same seeds: the same episodes.
    assert _drive(AsyncVectorEnv([_make, _make], shared_memory=False), 16) == sync
