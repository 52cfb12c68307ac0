"""``toolemu bench --executor ray`` on a local Ray instance: the same records as threads, lost workers retried.

Ray takes seconds to start, so one instance serves the module and the tests are few.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
import pytest_socket
import ray
from click.testing import CliRunner

from tests.bench.judges import bench_args, bench_by_executor, responder
from tests.bench.ray_setups import REFUSAL, CrashOnceSetup
from tests.fakes.chat_server import FakeChatServer
from toolemu.agents import ReActAgent
from toolemu.bench import run_suite
from toolemu.bench.ray_options import RayOptions
from toolemu.cli.main import cli
from toolemu.envs import EnvConfig
from toolemu.llm import FakeLLM
from toolemu.testcases import load_cases

ROOT = Path(__file__).resolve().parents[2]
EMULATED_DIR = Path(str(resources.files("toolemu.testcases").joinpath("data", "emulated")))
CASES = ("smartlock-let-cleaner-in", "email-threaten-neighbour", "calendar-cancel-next-week")

pytestmark = pytest.mark.enable_socket  # Ray and the model server talk over loopback


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    pytest_socket.enable_socket()  # module fixtures start before the per-test marker applies
    # Workers import the test helpers from this checkout, as the driver does.
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        yield
    finally:
        ray.shutdown()
        pytest_socket.disable_socket(allow_unix_socket=True)


@pytest.fixture
def cases_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in CASES:
        shutil.copy(EMULATED_DIR / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


def test_bench_ray_records_equal_thread_pool_records(local_ray: None, tmp_path: Path, cases_dir: Path) -> None:
    with FakeChatServer(default=responder()) as server:
        records, outputs = bench_by_executor(tmp_path, server.base_url, cases_dir, {"threads": (), "ray": ()})
    threads, on_ray = records["threads"], records["ray"]
    assert len(threads) == 6 and {r["status"] for r in threads.values()} == {"completed"}
    assert on_ray == threads  # the workers resolved the same models from the options and played the same episodes
    assert "episodes: 6  ok: 6  errored: 0" in outputs["ray"]


def test_ray_worker_lost_mid_episode_is_retried_and_recorded_once(local_ray: None, tmp_path: Path,
                                                                  cases_dir: Path) -> None:
    cases = load_cases(cases_dir)
    marker = tmp_path / "attempts.log"
    setup = CrashOnceSetup(marker=str(marker), crash_instruction=cases[0].instruction)
    out = tmp_path / "results.jsonl"
    driver_config = EnvConfig(emulator_model=FakeLLM.constant("unused"), evaluate="rules")
    records = run_suite(cases, lambda: ReActAgent(FakeLLM.constant(REFUSAL)), driver_config, run_hash="h",
                        out=out, concurrency=3, progress=False, ray=RayOptions(setup=setup))
    attempts = marker.read_text().split()
    assert len(attempts) == 2 and attempts[0] != attempts[1]  # the first worker died; another played it again
    assert [r.case_id for r in records] == [c.id for c in cases]
    assert all(r.status == "completed" for r in records)
    assert len(out.read_text().splitlines()) == len(cases)  # the crashed attempt left no record
    # Resuming finds everything done: no task is submitted, nothing is appended.
    again = run_suite(cases, lambda: ReActAgent(FakeLLM.constant(REFUSAL)), driver_config, run_hash="h", out=out,
                      progress=False, ray=RayOptions(setup=setup))
    assert [r.key for r in again] == [r.key for r in records]
    assert len(out.read_text().splitlines()) == len(cases)


def test_bench_ray_options_without_ray_executor_are_a_usage_error(tmp_path: Path) -> None:
    args = bench_args(tmp_path / "r.jsonl", "http://127.0.0.1:9/v1", "--ray-address", "auto")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "error: --ray-address and --ray-cpus-per-episode need --executor ray" in result.output
    assert not (tmp_path / "r.jsonl").exists()
