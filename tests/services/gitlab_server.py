"""The GitLab emulator for tests: the TAC world seeded once per session, copied and served per test with cheroot."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services.wsgi_server import serve_app
from toolemu.services.base import GapLog
from toolemu.services.gitlab import SPEC
from toolemu.services.world import load_world

TOKEN = {"PRIVATE-TOKEN": "root-token"}
"""The header OAS's evaluators send (any value is accepted)."""


@dataclass(frozen=True)
class Served:
    """A running emulator: its base URL, state folder and gap log."""

    url: str
    state: Path
    gaps: GapLog

    @property
    def api(self) -> str:
        """The REST API root."""
        return f"{self.url}/api/v4"

    def git_url(self, project: str, *, user: str | None = "root:theagentcompany") -> str:
        """The clone URL of ``root/<project>`` (``<project>.wiki`` for a wiki), with credentials unless None."""
        host = self.url.removeprefix("http://")
        return f"http://{user + '@' if user else ''}{host}/root/{project}.git"


def seed_once(folder: Path) -> Path:
    """Seeds the TAC world into ``folder`` (empty) and returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    SPEC.seed(folder, load_world())
    return folder


@contextmanager
def serve_copy(seed_dir: Path, state: Path) -> Iterator[Served]:
    """Copies ``seed_dir`` to ``state`` and serves it on 127.0.0.1 (ephemeral port) until the block ends."""
    shutil.copytree(seed_dir, state, symlinks=True)
    gaps = GapLog()
    with serve_app(SPEC.make_app(state, gaps), numthreads=6) as url:
        yield Served(url, state, gaps)


@pytest.fixture(scope="module")
def gitlab_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TAC world's GitLab state, seeded once per test module."""
    return seed_once(tmp_path_factory.mktemp("gitlab-seed"))


@pytest.fixture
def gitlab(gitlab_seed: Path, tmp_path: Path) -> Iterator[Served]:
    """A fresh copy of the seeded GitLab, served for one test."""
    with serve_copy(gitlab_seed, tmp_path / "state") as served:
        yield served
