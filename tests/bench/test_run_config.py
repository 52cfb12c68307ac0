"""``RunConfig``: the run's config hash is computed in the library, the same as ``toolemu bench`` records it."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

import toolemu.bench.run_config as run_config_module
from tests.bench.judges import bench_args
from toolemu.bench.run_config import RunConfig, RunSetup
from toolemu.cli.options import model_options
from toolemu.cli.session import run_config
from toolemu.core.errors import ConfigError
from toolemu.rewards.mode import EvaluateMode

CONFIGS = Path(__file__).parent.parent / "fixtures" / "records" / "schema2_evaluation1.jsonl.configs.json"
ENDPOINT = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}
"""The fixture's run used a local server; the endpoint is no part of the hash."""


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({}, "9bb403028884"), ({"evaluate": "rules"}, "648ec7fb7448"), ({"safety_scale": "oas"}, "e2303d625590")],
    ids=["full", "rules", "oas"],
)
def test_run_config_hash_matches_what_bench_recorded(fields: dict[str, object], expected: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Hashes of results files written before ``RunConfig`` existed: a Python user reproduces them (at the
    evaluation version they were scored with), and a later evaluation version gets a hash of its own, so
    ``toolemu bench`` never resumes results scored by other evaluators."""
    config = RunConfig(agent_model="m", emulator_model="m", judge_model="m", **ENDPOINT, **fields)  # type: ignore[arg-type]
    saved = json.loads(CONFIGS.read_text())[expected]
    recorded_version = saved["description"]["versions"]["evaluation"]
    assert config.resolve().run_hash != expected and recorded_version != run_config_module.EVALUATION_VERSION
    monkeypatch.setattr(run_config_module, "EVALUATION_VERSION", recorded_version)
    run = config.resolve()
    assert run.run_hash == expected
    assert run.info.description == saved["description"]
    assert config.model_copy(update={"trials": 5, "concurrency": 8, "seed": 3, "base_url": None}).resolve(
    ).run_hash == expected  # where and how fast it runs is no part of the hash


def test_cli_parses_its_options_into_the_run_config() -> None:
    parsed: dict[str, object] = {}

    @click.command()
    @model_options
    def command(**opts: object) -> None:
        parsed.update(opts)

    args = bench_args("x", "http://127.0.0.1:9/v1")[1:]
    args = [a for a in args if a not in ("--out", "x")] + ["--evaluate", "rules", "--real-toolkit", "Terminal"]
    command.main(args, standalone_mode=False)
    config = run_config(parsed, trials=2)
    assert config == RunConfig(agent_model="m", emulator_model="m", judge_model="m", api_key="k",
                               base_url="http://127.0.0.1:9/v1", evaluate=EvaluateMode.RULES,
                               real_toolkits=("Terminal",), trials=2)
    assert "api_key" not in repr(config)  # the key is never shown


def test_run_config_refuses_what_does_not_go_together() -> None:
    with pytest.raises(ConfigError, match=r"RunConfig.evaluate: evaluate mode 'maybe' is unknown"):
        RunConfig.of(evaluate="maybe")
    with pytest.raises(ConfigError, match="--workers needs --executor processes"):
        RunConfig(workers=2).executors()
    with pytest.raises(ConfigError, match="agent `react` has no variant `evil`; use one of plain, safety"):
        RunConfig(agent_variant="evil", **ENDPOINT).resolve()


def test_run_setup_rebuilds_the_run_in_a_worker() -> None:
    config = RunConfig(agent_model="m", emulator_model="m", judge_model="m", executor="processes", workers=2,
                       concurrency=4, **ENDPOINT)  # type: ignore[arg-type]
    ray, processes, shown = config.executors()
    assert ray is None and processes is not None and shown == "2 worker processes"
    assert processes.setup == RunSetup(config, concurrency=2) and hash(processes.setup)
    make_agent, env_config = processes.setup()
    assert env_config.evaluate is EvaluateMode.FULL and make_agent() is not make_agent()
