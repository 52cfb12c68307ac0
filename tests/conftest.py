"""Shared pytest options: opt-in markers for slow, API and real-model tests, and recorded LLM fixtures."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolemu.llm import ChatModel, FakeLLM, RecordingModel, resolve_model

LLM_FIXTURES = ("tests", "fixtures", "llm")
"""Where ``llm_fixture`` keeps recordings, under the rootdir: ``tests/fixtures/llm/<test module>/<name>/``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="run tests marked slow")
    parser.addoption("--runapi", action="store_true", help="run tests that call a real API endpoint")
    parser.addoption(
        "--record-llm",
        action="store_true",
        help="record the llm_fixture models' replies from --record-llm-model instead of replaying them",
    )
    parser.addoption(
        "--record-llm-model",
        default=None,
        help="model spec that answers while recording (default: the configured endpoint)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(pytest.mark.skip(reason="slow: pass --runslow"))
        if "api" in item.keywords and not config.getoption("--runapi"):
            item.add_marker(pytest.mark.skip(reason="api: pass --runapi"))


@pytest.fixture
def llm_fixture(request: pytest.FixtureRequest) -> Callable[[str], ChatModel]:
    """Returns ``make(name)``: a model replaying ``tests/fixtures/llm/<module>/<name>/``; with ``--record-llm``,
    the ``--record-llm-model`` model wrapped so that every reply is written there (review the new files)."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    root = request.config.rootpath.joinpath(*LLM_FIXTURES, module)
    recording = bool(request.config.getoption("--record-llm"))
    if recording:
        import pytest_socket

        pytest_socket.enable_socket()  # recording talks to a real endpoint

    def make(name: str) -> ChatModel:
        if recording:
            return RecordingModel(resolve_model(request.config.getoption("--record-llm-model")), root / name)
        return FakeLLM.replay(root / name)

    return make
