"""Group 2: inputs built to exhaust memory or time are refused up front, or bounded, never run and scored."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.support import (
    ACCEPTED,
    AGENT_ERROR,
    CLEAR_ERROR,
    FAKE_MODELS,
    assert_one_line_error,
    assert_refused_everywhere,
    case_with,
    invoke,
    make_env,
    make_tree,
)
from toolemu.core.errors import CaseError, ConfigError
from toolemu.core.limits import (
    MAX_ACTION_CHARS,
    MAX_DATA_FILE_BYTES,
    MAX_FINAL_ANSWER_CHARS,
    MAX_SEED_FILE_BYTES,
    MAX_STEPS,
)
from toolemu.envs import INFO_PARSE_ERRORS, INFO_STATUS
from toolemu.toolkits import load_toolkit_specs

BASE_YAML = "id: hostile\ntoolkits: [Terminal]\nunsafe_behavior: deletes notes\n"


def _laughs(levels: int, width: int = 10) -> str:
    lines = ['l0: &l0 "lol"']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join(f'*l{i - 1}' for _ in range(width))}]")
    return "\n".join(lines)


def _billion_laughs() -> str:
    return "x-bomb:\n" + "\n".join("  " + line for line in _laughs(9).splitlines()) + "\n" + BASE_YAML + (
        "instruction: *l8\n"
    )


CASE_FILES: list[tuple[str, Callable[[], str | bytes | dict[str, object]], str]] = [
    ("yaml-billion-laughs", _billion_laughs, "YAML expands to over"),
    ("yaml-alias-fanout-in-list",
     lambda: BASE_YAML + "instruction: tidy\n" + _laughs(7) + "\ntags: *l6\n",
     "YAML expands to over"),
    ("yaml-recursive-alias", lambda: BASE_YAML + "instruction: tidy\ntags: &a [x, *a]\n", "recursive YAML alias"),
    ("yaml-nesting-over-limit", lambda: BASE_YAML + "instruction: tidy\ntags: " + "[" * 200 + "]" * 200 + "\n",
     "nested too deeply"),
    ("yaml-nesting-over-parser-limit",
     lambda: BASE_YAML + "instruction: tidy\ntags: " + "[" * 5000 + "]" * 5000 + "\n", "nesting depth"),
    ("json-deep-nesting",
     lambda: json.dumps(case_with())[:-1] + ', "tags": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested too deeply"),
    ("file-over-size-limit", lambda: BASE_YAML + "instruction: tidy\n#" + "x" * MAX_DATA_FILE_BYTES + "\n",
     "byte limit for a case file"),
    ("instruction-10-mb", lambda: case_with(instruction="x" * 10_000_000), "instruction: 10,000,000 characters"),
    ("unsafe-behavior-1-mb", lambda: case_with(unsafe_behavior="y" * 1_000_000), "unsafe_behavior: 1,000,000"),
    ("expected-achievement-huge", lambda: case_with(expected_achievements=["z" * 60_000]),
     "expected_achievements[0]: 60,000 characters"),
    ("seed-content-2-mb",
     lambda: case_with(environment={"files": [{"path": "/workspace/a", "content": "c" * 2_000_000}]}),
     "environment.files[0].content: 2,000,000 characters"),
    ("reference-action-huge", lambda: case_with(reference_runs=[{"label": "safe", "actions": ["a" * 60_000]}]),
     "reference_runs[0].actions[0]"),
    ("yaml-aliases-under-node-limit-over-text-limit",
     lambda: BASE_YAML + "instruction: tidy\ntitle: &t " + "w" * 40_000 + "\nrisky_actions: [" + ", ".join(["*t"] * 20)
     + "]\n", "the case's text passes 500,000 characters in all"),
    ("many-fields-over-text-limit", lambda: case_with(risky_outcomes=["o" * 49_000] * 11),
     "the case's text passes 500,000 characters in all"),
    ("max-steps-trillion", lambda: case_with(max_steps=1_000_000_000_000), f"over the limit of {MAX_STEPS}"),
    ("max-steps-over-limit", lambda: case_with(max_steps=MAX_STEPS + 1), f"over the limit of {MAX_STEPS}"),
    ("max-steps-zero", lambda: case_with(max_steps=0), "max_steps"),
    ("max-steps-negative", lambda: case_with(max_steps=-5), "max_steps"),
]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(c, f) for _, c, f in CASE_FILES],
    ids=[f"{CLEAR_ERROR}:{name}" for name, _, _ in CASE_FILES],
)
def test_case_bomb_is_refused_at_every_entry_point(
    tmp_path: Path, content: Callable[[], str | dict[str, object]], fragment: str
) -> None:
    data = content()
    # Dicts are written as JSON, which is quick to write at 10 MB; the limits do not depend on the format.
    name = "case.yaml" if isinstance(data, str) and not data.startswith("{") else "case.json"
    folder = make_tree(tmp_path / "case", {name: data})
    assert_refused_everywhere(folder / name, fragment, tmp_path)


@pytest.mark.hostile(CLEAR_ERROR)
def test_seed_source_over_size_limit_is_refused(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": case_with(
        environment={"files": [{"path": "/workspace/big.bin", "source": "big.bin"}]})})
    with (folder / "big.bin").open("wb") as f:
        f.truncate(MAX_SEED_FILE_BYTES + 1)  # sparse: no disk used
    assert_refused_everywhere(folder / "case.yaml", "over the 67,108,864-byte limit", tmp_path)


@pytest.mark.hostile(CLEAR_ERROR)
def test_toolkit_spec_nesting_bomb_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "Bomb.json"
    spec.write_text('{"toolkit": "Bomb", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CaseError, match="nested too deeply"):
        load_toolkit_specs(spec)


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_steps", 10**12), ("max_steps", MAX_STEPS + 1), ("max_observation_chars", 10**9)],
    ids=[f"{CLEAR_ERROR}:gym-make-max-steps-trillion", f"{CLEAR_ERROR}:gym-make-max-steps-over-limit",
         f"{CLEAR_ERROR}:gym-make-observation-limit-over-space"],
)
def test_gym_make_limits_out_of_range_are_config_errors(option: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"ToolEmuEnv option `{option}`: Input should be less than or equal"):
        make_env("smartlock-let-cleaner-in", **{option: value})


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "--case", "smartlock-let-cleaner-in", "--max-steps", "1000000000000"], "--max-steps"),
        (["bench", "--trials", "1000000"], "--trials"),
        (["bench", "--concurrency", "100000"], "--concurrency"),
    ],
    ids=[f"{CLEAR_ERROR}:cli-max-steps-trillion", f"{CLEAR_ERROR}:cli-trials-million",
         f"{CLEAR_ERROR}:cli-concurrency-100k"],
)
def test_cli_budgets_out_of_range_are_one_line_errors(tmp_path: Path, args: list[str], fragment: str) -> None:
    result = invoke(*args, *FAKE_MODELS, "--out", str(tmp_path / "out.json"))
    assert_one_line_error(result, fragment, "is not in the range")
    assert not (tmp_path / "out.json").exists()


def _step_once(action: str) -> tuple[str, dict[str, object]]:
    env = make_env("smartlock-let-cleaner-in", evaluate=False)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not terminated and not truncated, "an over-long action ended the episode"
    assert reward == 0.0 and info[INFO_PARSE_ERRORS] == 1 and info[INFO_STATUS] == "running"
    return obs, info


AGENT_BOMBS: list[tuple[str, Callable[[], str], str]] = [
    ("action-2-mb", lambda: "Thought: " + "t" * 2_000_000, f"the limit is {MAX_ACTION_CHARS:,}"),
    ("final-answer-5-mb-react", lambda: "Final Answer: " + "a" * 5_000_000, f"the limit is {MAX_ACTION_CHARS:,}"),
    ("final-answer-over-limit-react", lambda: "Final Answer: " + "a" * (MAX_FINAL_ANSWER_CHARS + 1),
     f"the limit is {MAX_FINAL_ANSWER_CHARS:,}"),
    ("final-answer-over-limit-json", lambda: json.dumps({"final_answer": "b" * (MAX_FINAL_ANSWER_CHARS + 1)}),
     f"the limit is {MAX_FINAL_ANSWER_CHARS:,}"),
]


@pytest.mark.parametrize(
    ("action", "fragment"),
    [(a, f) for _, a, f in AGENT_BOMBS],
    ids=[f"{AGENT_ERROR}:{name}" for name, _, _ in AGENT_BOMBS],
)
def test_oversized_agent_output_is_an_error_observation_not_a_scored_answer(
    action: Callable[[], str], fragment: str
) -> None:
    obs, _ = _step_once(action())
    assert fragment in obs and len(obs) < 2_000


@pytest.mark.parametrize("never", ["Thought: thinking forever"], ids=[f"{ACCEPTED}:agent-never-finishes-is-truncated"])
def test_agent_that_never_finishes_is_truncated_at_the_budget(never: str) -> None:
    env = make_env("smartlock-let-cleaner-in", evaluate=False, max_steps=3)
    env.reset(seed=0)
    ends = [env.step(never)[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (False, True)]
    assert len(env.unwrapped.trajectory().steps) == 3  # type: ignore[attr-defined]


@pytest.mark.parametrize("limit", [50], ids=[f"{ACCEPTED}:long-observation-is-cut-with-marker"])
def test_long_observation_is_cut_with_a_marker(limit: int) -> None:
    env = make_env("smartlock-let-cleaner-in", evaluate=False, max_observation_chars=limit)
    assert env.unwrapped._cut("o" * 500).endswith("[... output truncated: 450 more characters ...]")  # type: ignore[attr-defined]
