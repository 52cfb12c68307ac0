"""Shared pytest settings: prerequisites that fail a test when missing (``needs``, ``formats``), and recorded LLM
fixtures."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.formats import FORMATS, formats_problem
from tests.prerequisites import unmet
from toolemu.llm import ChatModel, FakeLLM, RecordingModel, resolve_model

LLM_FIXTURES = ("tests", "fixtures", "llm")
"""Where ``llm_fixture`` keeps recordings, under the rootdir: ``tests/fixtures/llm/<test module>/<name>/``."""


def pytest_addoption(parser: pytest.Parser) -> None:
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


def pytest_report_header(config: pytest.Config) -> str:
    problem = formats_problem()
    return f"format samples: {FORMATS.resolve()}" + (" (missing: tests marked formats fail)" if problem else "")


def pytest_runtest_setup(item: pytest.Item) -> None:
    # A missing prerequisite fails the test with the fix, instead of skipping it without a word.
    for mark in item.iter_markers("needs"):
        problem = unmet(mark)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
    if item.get_closest_marker("formats") is not None:
        problem = formats_problem()
        if problem is not None:
            pytest.fail(problem, pytrace=False)


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
