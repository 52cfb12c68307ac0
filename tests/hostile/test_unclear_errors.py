"""Group 5: inputs that used to end in a traceback or a misleading error now get one clear line."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from tests.hostile.support import (
    ACCEPTED,
    AGENT_ERROR,
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
from toolemu.core.errors import CaseError, NotRegisteredError
from toolemu.envs import INFO_PARSE_ERRORS, INFO_STATUS, INFO_TRAJECTORY
from toolemu.llm import resolve_model
from toolemu.testcases import load_case
from toolemu.toolkits import load_toolkit_specs

OWN_TOOLKITS = Path(str(resources.files("toolemu.toolkits").joinpath("specs", "SmartLock.json")))
"""A valid ToolEmu toolkit file (one object): a built-in spec."""

LATIN1 = GOOD_YAML.replace("Tidy my notes.", "Range mes notes, café crème.").encode("latin-1")

ENCODINGS: list[tuple[str, str, bytes, str]] = [
    ("latin-1-yaml", "case.yaml", LATIN1, ":2: not valid UTF-8 (byte 0xe9"),
    ("utf-16-json", "case.json", json.dumps(case_with()).encode("utf-16"), ":1: not valid UTF-8 (byte 0xff"),
    ("cp1252-quotes-yaml", "case.yaml", GOOD_YAML.replace("Tidy", "\u201cTidy\u201d").encode("cp1252"),
     ":2: not valid UTF-8 (byte 0x93"),
    ("truncated-utf-8-sequence", "case.yaml", GOOD_YAML.encode() + b"title: caf\xc3\n", ":5: not valid UTF-8"),
    ("yaml-syntax-error", "case.yaml", (GOOD_YAML + "tags: [a, b\n").encode(), "invalid YAML"),
    ("json-syntax-error", "case.json", b'{"id": "hostile",}', ":1: invalid JSON"),
]


@pytest.mark.parametrize(
    ("name", "data", "fragment"),
    [(n, d, f) for _, n, d, f in ENCODINGS],
    ids=[f"{CLEAR_ERROR}:{case_id}" for case_id, *_ in ENCODINGS],
)
def test_unreadable_case_file_is_one_line(tmp_path: Path, name: str, data: bytes, fragment: str) -> None:
    folder = make_tree(tmp_path / "case", {name: data})
    message = assert_refused_everywhere(folder / name, fragment, tmp_path)
    assert message.startswith(str(folder / name))


@pytest.mark.hostile(CLEAR_ERROR)
def test_one_bad_file_does_not_stop_validating_a_folder(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "suite", {
        "a-good.yaml": GOOD_YAML.replace("hostile", "good-one"),
        "b-latin1.yaml": LATIN1.replace(b"hostile", b"bad-one"),
        "c-good.yaml": GOOD_YAML.replace("hostile", "good-two"),
    })
    result = invoke("cases", "validate", str(folder))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "OK   good-one",
        f"FAIL {folder / 'b-latin1.yaml'}:2: not valid UTF-8 (byte 0xe9 at offset 45); save the file as UTF-8",
        "OK   good-two",
        "2 ok, 1 failed",
    ]


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf"], ids=[f"{ACCEPTED}:utf-8-byte-order-mark"])
def test_utf8_byte_order_mark_is_accepted(tmp_path: Path, bom: bytes) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": bom + GOOD_YAML.encode()})
    assert load_case(folder / "case.yaml").id == "hostile"


@pytest.mark.hostile(CLEAR_ERROR)
def test_non_utf8_toolkit_spec_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "Notes.json"
    spec.write_bytes('[{"toolkit": "Notes", "description_for_model": "Notizen für"}]'.encode("latin-1"))
    with pytest.raises(CaseError, match=r"Notes.json:1: not valid UTF-8 \(byte 0xfc"):
        load_toolkit_specs(spec)


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_non_utf8_toolemu_cases_file_is_one_line(tmp_path: Path) -> None:
    cases = tmp_path / "cases.json"
    cases.write_bytes('[{"name": "x", "Toolkits": ["Terminal"], "User Instruction": "Café"}]'.encode("latin-1"))
    result = invoke("cases", "import-toolemu", str(cases), "--toolkits", str(OWN_TOOLKITS),
                    "--out", str(tmp_path / "out"))
    assert_one_line_error(result, "cases.json:1: not valid UTF-8")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "value", ["0", "-5"], ids=[f"{CLEAR_ERROR}:cli-max-steps-zero", f"{CLEAR_ERROR}:cli-max-steps-negative"]
)
def test_cli_max_steps_out_of_range_is_one_line(value: str) -> None:
    result = invoke("run", "--case", "smartlock-let-cleaner-in", "--max-steps", value, *FAKE_MODELS)
    assert_one_line_error(result, f"--max-steps: {value} is not in the range 1<=x<=1000")


NON_STRINGS: list[tuple[str, object, str]] = [
    ("none", None, "NoneType"),
    ("bytes", b"Final Answer: done", "bytes"),
    ("int", 123, "int"),
    ("list", ["Final Answer: done"], "list"),
    ("dict-tool-call", {"tool": "SmartLockGetStatus", "arguments": {}}, "dict"),
    ("float-nan", float("nan"), "float"),
]


@pytest.mark.parametrize(
    ("action", "type_name"),
    [(a, t) for _, a, t in NON_STRINGS],
    ids=[f"{AGENT_ERROR}:step-{name}" for name, *_ in NON_STRINGS],
)
def test_non_string_action_is_an_error_observation(action: object, type_name: str) -> None:
    env = make_env("smartlock-let-cleaner-in", evaluate=False)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert f"Actions are strings (the agent's text reply); got {type_name}." in obs
    assert (reward, terminated, truncated, info[INFO_STATUS], info[INFO_PARSE_ERRORS]) == (0.0, False, False,
                                                                                           "running", 1)
    obs, *_ = env.step("Final Answer: done")
    assert env.unwrapped.trajectory().steps[0].action_text == f"<not a string: {type_name}>"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "spec", ["nonsense:foo", "gpt4:turbo"], ids=[f"{CLEAR_ERROR}:model-nonsense-foo", f"{CLEAR_ERROR}:model-gpt4-turbo"]
)
def test_unknown_backend_prefix_is_a_clear_error(spec: str) -> None:
    with pytest.raises(NotRegisteredError, match=f"model backend `{spec.split(':')[0]}` is not registered"):
        resolve_model(spec, api_key="sk-test-123456789")
    result = invoke("run", "--case", "smartlock-let-cleaner-in", "--agent-model", spec, "--api-key", "sk-x")
    assert_one_line_error(result, "is not registered", f"write `openai:{spec}`")


@pytest.mark.hostile(CLEAR_ERROR)
def test_misspelt_backend_suggests_the_close_one() -> None:
    result = invoke("run", "--case", "smartlock-let-cleaner-in", "--agent-model", "lama:smollm2")
    assert_one_line_error(result, "Did you mean `llama`?")


MISSING_PATHS = [
    ("validate-missing-path", ["cases", "validate", "{tmp}/missing"], "{tmp}/missing: no such file or folder"),
    ("run-missing-case-file", ["run", "--case", "{tmp}/missing.yaml", *FAKE_MODELS],
     "{tmp}/missing.yaml: no such case file or folder"),
    ("bench-missing-suite", ["bench", "--suite", "{tmp}/missing/", *FAKE_MODELS, "--out", "{tmp}/r.jsonl"],
     "{tmp}/missing: no such case file or folder"),
    ("report-missing-results", ["report", "{tmp}/missing.jsonl"], "{tmp}/missing.jsonl: no such file or folder"),
    ("import-oas-missing-folder", ["cases", "import-oas", "{tmp}/missing", "--out", "{tmp}/o"],
     "{tmp}/missing: no such file or folder"),
    ("import-toolemu-missing-file", ["cases", "import-toolemu", "{tmp}/missing.json", "--toolkits",
                                     str(OWN_TOOLKITS), "--out", "{tmp}/o"],
     "{tmp}/missing.json: no such file or folder"),
    ("unknown-option", ["bench", "--trails", "2"], "No such option '--trails'. Did you mean '--trials'?"),
    ("unknown-command", ["benchmark"], "No such command 'benchmark'"),
    ("missing-option-value", ["run", "--case"], "Option '--case' requires an argument"),
    ("missing-required-option", ["run"], "Missing option '--case'"),
    ("bad-choice", ["run", "--case", "x", "--agent-variant", "evil"], "--agent-variant: 'evil' is not one of"),
]


@pytest.mark.parametrize(
    ("args", "expected"),
    [(a, e) for _, a, e in MISSING_PATHS],
    ids=[f"{CLEAR_ERROR}:{name}" for name, *_ in MISSING_PATHS],
)
def test_usage_errors_are_one_line_exit_1(tmp_path: Path, args: list[str], expected: str) -> None:
    result = invoke(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert_one_line_error(result, expected.replace("{tmp}", str(tmp_path)))
    assert not (tmp_path / "o").exists() and not (tmp_path / "r.jsonl").exists()


@pytest.mark.hostile(ACCEPTED)
def test_symlink_loop_in_a_case_folder_is_read_once(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "suite", {"a.yaml": GOOD_YAML})
    (folder / "loop").symlink_to(folder)
    result = invoke("cases", "validate", str(folder))
    assert result.output.splitlines() == ["OK   hostile", "1 ok, 0 failed"]


@pytest.mark.hostile(ACCEPTED)
def test_step_with_surrogate_text_keeps_render_writable() -> None:
    env = make_env("smartlock-let-cleaner-in", evaluate=False)
    env.reset(seed=0)
    env.step("Thought: \ud83d\nAction: SmartLockGetStatus\nAction Input: {\"x\": \"\\ud800\"}")
    env.unwrapped.render().encode("utf-8")  # type: ignore[attr-defined]
    step = env.unwrapped.trajectory().steps[0]  # type: ignore[attr-defined]
    assert "\ufffd" in step.action_text and step.tool_call.arguments == {"x": "\ufffd"}
    assert INFO_TRAJECTORY
