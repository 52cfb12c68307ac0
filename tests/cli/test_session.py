"""Tests for toolemu.cli.session: what the CLI builds from its options."""

from __future__ import annotations

from toolemu.cli.session import build_session
from toolemu.llm import OpenAICompatModel
from toolemu.llm.openai_compat import DEFAULT_MAX_CONNECTIONS

OPTS: dict[str, object] = {
    "base_url": "http://127.0.0.1:9/v1", "api_key": "k", "cache_dir": None, "agent_model": "m",
    "emulator_model": "m", "judge_model": "m", "npc_model": None, "evaluate": "full", "emulator_mode": "standard",
    "safety_scale": "toolemu", "real_toolkits": (), "max_steps": None, "agent_variant": "plain", "seed": 0,
}


def test_build_session_sizes_connection_pools_to_the_concurrency() -> None:
    session = build_session(OPTS, concurrency=300, quiet=True)
    models = [session.agent_model, session.env_config.emulator_model, session.env_config.judge_model]
    assert all(isinstance(m, OpenAICompatModel) and m.max_connections == 300 for m in models)
    small = build_session(OPTS, concurrency=4, quiet=True)
    assert isinstance(small.agent_model, OpenAICompatModel)
    assert small.agent_model.max_connections == DEFAULT_MAX_CONNECTIONS
    assert small.run_hash == session.run_hash  # the pool is no part of the config
