"""Group 4: inputs that used to be accepted and scored without a word are now refused with a clear error."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from tests.hostile.support import (
    ACCEPTED,
    CLEAR_ERROR,
    FAKE_MODELS,
    GOOD_YAML,
    NOTHING_WRITTEN,
    assert_one_line_error,
    assert_refused_everywhere,
    case_with,
    invoke,
    make_env,
    make_tree,
)
from toolemu.bench import run_suite
from toolemu.core.errors import CaseError, ConfigError
from toolemu.core.types import ToolkitSpec
from toolemu.envs import EnvConfig
from toolemu.llm import FakeLLM
from toolemu.testcases import load_case

OWN_TOOLKITS = Path(str(resources.files("toolemu.toolkits").joinpath("specs", "SmartLock.json")))
"""A valid ToolEmu toolkit file (one object): a built-in spec."""

CHECK = "checks:\n  - kind: command_run\n    pattern: rm\n"

CASE_TEXTS: list[tuple[str, str, str, str]] = [
    ("yaml-duplicate-top-level-key", "case.yaml", GOOD_YAML + "instruction: Delete everything.\n",
     "duplicate key 'instruction' (first at line 2)"),
    ("yaml-duplicate-nested-key", "case.yaml", GOOD_YAML + CHECK + "    pattern: shred\n", "duplicate key 'pattern'"),
    ("yaml-duplicate-key-in-flow-map", "case.yaml", GOOD_YAML + "underspecifications: {task_information: [], "
     "task_information: [x]}\n", "duplicate key 'task_information'"),
    ("json-duplicate-key", "case.json", json.dumps(case_with())[:-1] + ', "instruction": "Delete everything."}',
     "duplicate key 'instruction' in one JSON object"),
    ("json-duplicate-nested-key", "case.json", json.dumps(case_with())[:-1]
     + ', "environment": {"env": {"A": "1", "A": "2"}}}', "duplicate key 'A'"),
    ("empty-instruction", "case.yaml", GOOD_YAML.replace("Tidy my notes.", '""'), "instruction: empty"),
    ("whitespace-instruction", "case.yaml", GOOD_YAML.replace("Tidy my notes.", '"   \\n\\t  "'),
     "instruction: empty"),
    ("missing-instruction", "case.yaml", GOOD_YAML.replace("instruction: Tidy my notes.\n", ""),
     "instruction: Field required"),
    ("instruction-not-text", "case.yaml", GOOD_YAML.replace("Tidy my notes.", "[1, 2]"), "instruction:"),
    ("raw-nul-byte-in-yaml", "case.yaml", GOOD_YAML.replace("Tidy my", "Tidy\x00my"), ":2: contains a NUL character"),
    ("raw-nul-byte-in-json", "case.json", json.dumps(case_with()).replace("Tidy", "Ti\x00dy"),
     "contains a NUL character"),
    ("json-escaped-nul-in-instruction", "case.json", json.dumps(case_with(instruction="Tidy\u0000 up")),
     "instruction: contains a NUL character"),
    ("yaml-escaped-nul-in-title", "case.yaml", GOOD_YAML + 'title: "a\\0b"\n', "title: contains a NUL character"),
    ("nul-in-env-value", "case.json", json.dumps(case_with(environment={"env": {"A": "x\u0000y"}})),
     "environment.env.A: contains a NUL character"),
    ("nul-in-mapping-key", "case.json", json.dumps(case_with(environment={"env": {"A\u0000B": "x"}})),
     "contains a NUL character"),
    ("nul-in-seed-content", "case.json", json.dumps(case_with(
        environment={"files": [{"path": "/workspace/a", "content": "\u0000"}]})), "contains a NUL character"),
    ("unknown-field-typo", "case.yaml", GOOD_YAML + "instrution: typo\n", "instrution: unknown field"),
    ("yaml-scalar-not-case", "case.yaml", "just some words\n", "expected a case object"),
    ("yaml-python-object-tag", "case.yaml", GOOD_YAML + "title: !!python/object/apply:os.system [id]\n",
     "invalid YAML"),
    ("toolemu-empty-user-instruction", "case.json", json.dumps(
        {"name": "x", "Toolkits": ["Terminal"], "User Instruction": "  ", "Expected Achievements": ["a"]}),
     "instruction: empty"),
]


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [(n, t, f) for _, n, t, f in CASE_TEXTS],
    ids=[f"{CLEAR_ERROR}:{case_id}" for case_id, *_ in CASE_TEXTS],
)
def test_case_file_refused_instead_of_scored(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    folder = make_tree(tmp_path / "case", {name: text})
    assert_refused_everywhere(folder / name, fragment, tmp_path)


@pytest.mark.parametrize(
    "text",
    ["<<: {id: hostile, instruction: old, toolkits: [Terminal]}\ninstruction: new\nunsafe_behavior: x\n"],
    ids=[f"{ACCEPTED}:yaml-merge-key-override"],
)
def test_yaml_merge_key_may_be_overridden(tmp_path: Path, text: str) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": text})
    assert load_case(folder / "case.yaml").instruction == "new"


@pytest.mark.hostile(CLEAR_ERROR)
def test_case_dict_with_nul_is_refused_by_gym_make() -> None:
    with pytest.raises(CaseError, match="instruction: contains a NUL character"):
        make_env(case_with(instruction="a\x00b"))


@pytest.mark.hostile(CLEAR_ERROR)
def test_case_dict_with_empty_instruction_is_refused_by_gym_make() -> None:
    with pytest.raises(CaseError, match="instruction: empty"):
        make_env(case_with(instruction=""))


def _toolkit(tools: list[dict[str, object]]) -> dict[str, object]:
    return {"toolkit": "Notes", "name_for_model": "Notes", "tools": tools}


TOOL = {"name": "List", "summary": "Lists notes."}
TOOLKITS = [
    ("toolkit-zero-tools", [_toolkit([])], "a toolkit needs at least one tool"),
    ("toolkit-duplicate-tool-names", [_toolkit([TOOL, TOOL])], "duplicate tool name `List`"),
    ("toolkit-empty-summary", [_toolkit([{"name": "List", "summary": " "}])], "summary: empty"),
    ("toolkit-duplicate-json-key", '[{"toolkit": "Notes", "toolkit": "Other", "name_for_model": "N", "tools": []}]',
     "duplicate key 'toolkit'"),
]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [(s, f) for _, s, f in TOOLKITS],
    ids=[f"{CLEAR_ERROR}:case-{name}" for name, _, _ in TOOLKITS],
)
def test_toolkit_next_to_case_is_refused_like_validate(tmp_path: Path, spec: object, fragment: str) -> None:
    text = spec if isinstance(spec, str) else json.dumps(spec)
    folder = make_tree(tmp_path / "case", {"case.yaml": case_with(toolkits=["Notes"]), "toolkits/Notes.json": text})
    with pytest.raises(CaseError) as info:
        make_env(str(folder / "case.yaml"))
    message = str(info.value)
    assert fragment in message and "Notes.json" in message
    validated = invoke("cases", "validate", str(folder))
    assert validated.exit_code == 1 and f"FAIL {message}" in validated.output
    assert assert_one_line_error(invoke("run", "--case", str(folder / "case.yaml"), *FAKE_MODELS)) == message


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [(s, f) for _, s, f in TOOLKITS[:3]],
    ids=[f"{CLEAR_ERROR}:gym-make-{name}" for name, _, _ in TOOLKITS[:3]],
)
def test_gym_make_toolkit_specs_get_the_same_checks(spec: list[dict[str, object]], fragment: str) -> None:
    with pytest.raises(ConfigError, match=re.escape("ToolEmuEnv option `toolkit_specs`: toolkit `Notes`: ")) as info:
        make_env(case_with(toolkits=["Notes"]), toolkit_specs=tuple(ToolkitSpec.model_validate(s) for s in spec))
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [(s, f) for _, s, f in TOOLKITS],
    ids=[f"{NOTHING_WRITTEN}:import-{name}" for name, _, _ in TOOLKITS],
)
def test_import_toolemu_refuses_what_validate_refuses(tmp_path: Path, spec: object, fragment: str) -> None:
    toolkits = tmp_path / "toolkits.json"
    toolkits.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"name": "n1", "Toolkits": ["Notes"], "User Instruction": "List my notes."}]))
    result = invoke("cases", "import-toolemu", str(cases), "--toolkits", str(toolkits), "--out", str(tmp_path / "out"))
    assert_one_line_error(result, fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_import_toolemu_duplicate_key_in_cases_is_refused(tmp_path: Path) -> None:
    cases = tmp_path / "cases.json"
    cases.write_text('[{"name": "a", "name": "b", "Toolkits": ["Terminal"], "User Instruction": "x"}]')
    result = invoke("cases", "import-toolemu", str(cases), "--toolkits", str(OWN_TOOLKITS),
                    "--out", str(tmp_path / "out"))
    assert_one_line_error(result, "duplicate key 'name'")
    assert not (tmp_path / "out").exists()


CLI_COUNTS = [
    ("bench-trials-zero", ["bench", "--trials", "0"], "--trials: 0 is not in the range 1<=x<="),
    ("bench-trials-negative", ["bench", "--trials", "-3"], "--trials: -3 is not in the range"),
    ("bench-concurrency-zero", ["bench", "--concurrency", "0"], "--concurrency: 0 is not in the range"),
    ("bench-limit-minus-one", ["bench", "--limit", "-1"], "--limit: -1 is not in the range x>=1"),
    ("bench-limit-zero", ["bench", "--limit", "0"], "--limit: 0 is not in the range x>=1"),
    ("bench-trials-not-a-number", ["bench", "--trials", "two"], "--trials: 'two' is not a valid integer"),
]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(a, f) for _, a, f in CLI_COUNTS],
    ids=[f"{NOTHING_WRITTEN}:{name}" for name, *_ in CLI_COUNTS],
)
def test_bench_counts_out_of_range_are_one_line_errors(tmp_path: Path, args: list[str], fragment: str) -> None:
    out = tmp_path / "r.jsonl"
    assert_one_line_error(invoke(*args, *FAKE_MODELS, "--out", str(out)), fragment)
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_observation_chars", -1), ("max_observation_chars", 0), ("max_steps", 0), ("max_steps", -2)],
    ids=[f"{CLEAR_ERROR}:gym-make-{o}-{v}" for o, v in [("max_observation_chars", -1), ("max_observation_chars", 0),
                                                        ("max_steps", 0), ("max_steps", -2)]],
)
def test_gym_make_non_positive_limits_are_config_errors(option: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"ToolEmuEnv option `{option}`: Input should be greater than or equal to 1"):
        make_env("smartlock-let-cleaner-in", **{option: value})


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"trials": 0}, "trials: 0 is not in"), ({"concurrency": 0}, "concurrency: 0 is not in")],
    ids=[f"{CLEAR_ERROR}:run-suite-trials-zero", f"{CLEAR_ERROR}:run-suite-concurrency-zero"],
)
def test_run_suite_refuses_zero_counts(tmp_path: Path, kwargs: dict[str, int], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        config = EnvConfig(emulator_model=FakeLLM.constant("x"))
        run_suite([load_case("smartlock-let-cleaner-in")], lambda: None, config,  # type: ignore[arg-type,return-value]
                  run_hash="h", out=tmp_path / "r.jsonl", progress=False, **kwargs)
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.hostile(CLEAR_ERROR)
def test_duplicate_case_ids_in_one_folder_are_refused(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "suite", {"a.yaml": case_with(), "b.yaml": case_with()})
    with pytest.raises(CaseError, match="duplicate case id `hostile`"):
        load_case(folder)
    result = invoke("bench", "--suite", str(folder), *FAKE_MODELS, "--out", str(tmp_path / "r.jsonl"))
    assert_one_line_error(result, "duplicate case id `hostile`")
