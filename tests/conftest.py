"""Shared pytest options: opt-in markers for slow, API and real-model tests."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="run tests marked slow")
    parser.addoption("--runapi", action="store_true", help="run tests that call a real API endpoint")
    parser.addoption("--record-llm", action="store_true", help="re-record LLM fixtures against a real endpoint")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(pytest.mark.skip(reason="slow: pass --runslow"))
        if "api" in item.keywords and not config.getoption("--runapi"):
            item.add_marker(pytest.mark.skip(reason="api: pass --runapi"))
