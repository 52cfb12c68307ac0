"""Named suites for ``bench --suite``: smoke, emulated, real, social, seeds, twins, one per risk category, all."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolemu.bench.suite import SMOKE_CASES, SUITE_NAMES, is_social, needs_sandbox, select_cases, suite_cases
from toolemu.core.errors import ConfigError
from toolemu.core.types import ParamSpec, ReturnSpec, ToolkitSpec, ToolSpec
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.envs.config import case_toolkit_plan
from toolemu.llm import FakeLLM
from toolemu.testcases import Case, RiskCategory, builtin_cases, load_case

TWIN = {"id": "tidy--twin", "twin_of": "tidy", "tags": ["benign-twin"], "instruction": "x", "toolkits": ["Terminal"],
        "risk_category": "data_loss_or_corruption", "intent": "benign_user", "unsafe_behavior": "x"}


def _ids(cases: list[Case]) -> set[str]:
    return {c.id for c in cases}


def test_suite_names_cover_kinds_roles_and_every_category() -> None:
    assert {"all", "builtin", "smoke", "emulated", "real", "social", "seeds", "twins"} <= set(SUITE_NAMES)
    assert {c.value for c in RiskCategory} <= set(SUITE_NAMES)


def test_suite_smoke_is_ten_builtin_cases_of_every_kind() -> None:
    smoke = suite_cases("smoke")
    assert _ids(smoke) == set(SMOKE_CASES) and len(smoke) == 10
    assert any(needs_sandbox(c) for c in smoke) and any(is_social(c) for c in smoke)
    assert any(not needs_sandbox(c) and not is_social(c) for c in smoke)


def test_suite_kinds_partition_by_tools_and_people() -> None:
    everything = builtin_cases()
    assert _ids(suite_cases("all")) == _ids(everything) == _ids(suite_cases("builtin"))
    emulated, real, social = (_ids(suite_cases(k)) for k in ("emulated", "real", "social"))
    assert emulated and real and social and not emulated & (real | social)
    assert emulated | real | social == _ids(everything)
    assert all(load_case(i).npcs or load_case(i).user for i in social)


def test_suite_per_category_selects_that_category() -> None:
    for category in RiskCategory:
        selected = suite_cases(category.value)
        assert selected, category
        assert all(c.risk_category is category for c in selected)
    assert sum(len(suite_cases(c.value)) for c in RiskCategory) == len(builtin_cases())


def test_suite_twins_and_seeds_by_role() -> None:
    seed = load_case({**TWIN, "id": "tidy", "twin_of": None, "tags": []})
    twin = load_case(TWIN)
    assert suite_cases("twins", [seed, twin]) == [twin]
    assert suite_cases("seeds", [seed, twin]) == [seed]


def test_suite_unknown_name_is_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match=r"--suite 'privacy': not a suite name .*privacy_breach"):
        select_cases("privacy")


def test_suite_limit_and_empty_selection(tmp_path: Path) -> None:
    assert len(select_cases("smoke", limit=3)) == 3
    with pytest.raises(ConfigError, match="selects no case"):
        select_cases(str(tmp_path))


TERMINAL_SPEC = ToolkitSpec(
    toolkit="Terminal", name_for_model="Terminal", description_for_model="Executes commands in a terminal.",
    tools=(ToolSpec(name="Execute", summary="Execute a terminal command.",
                    parameters=(ParamSpec(name="command", type="string", required=True),),
                    returns=(ReturnSpec(name="output", type="string"),)),),
)


def test_needs_sandbox_follows_the_env_config_as_the_env_does() -> None:
    """``EnvConfig.toolkit_specs`` gives the real ``Terminal`` an emulated spec: the env then emulates it, and the
    suite must say the same (it once read only the built-in specs and called the case ``real``)."""
    case = load_case({**TWIN, "id": "tidy", "twin_of": None, "tags": []})
    emulated = EnvConfig(toolkit_specs=(TERMINAL_SPEC,), emulator_model=FakeLLM(), judge_model=FakeLLM())
    forced = emulated.model_copy(update={"real_toolkits": ("Terminal",)})
    assert needs_sandbox(case) and needs_sandbox(case, forced)
    assert not needs_sandbox(case, emulated)
    assert suite_cases("real", [case], emulated) == [] and suite_cases("emulated", [case], emulated) == [case]
    for config, sandboxed in ((emulated, False), (forced, True), (EnvConfig(judge_model=FakeLLM()), True)):
        env = ToolEmuEnv(case, config)
        try:
            assert (env.toolbox.sandbox is not None) is sandboxed is needs_sandbox(case, config)
            assert (env.models.emulator is not None) is case_toolkit_plan(case, config).needs_emulator
        finally:
            env.close()
    assert select_cases("real", real_toolkits=("Terminal",), config=emulated)
