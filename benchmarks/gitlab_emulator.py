"""Figures of the GitLab emulator: seed build, per-episode copy and app start, request latency, clone and push.

Prints medians over ``--rounds`` rounds; no assertion. Run: python benchmarks/gitlab_emulator.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402
from cheroot import wsgi  # noqa: E402

from toolemu.services.base import GapLog  # noqa: E402
from toolemu.services.gitlab import SPEC  # noqa: E402
from toolemu.services.world import load_world  # noqa: E402

_ENV = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    world = load_world()
    figures: dict[str, list[float]] = {k: [] for k in ("seed", "copy", "app", "projects", "raw file", "create issue",
                                                          "clone", "push")}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for n in range(rounds):
            seed_dir = base / f"seed{n}"
            seed_dir.mkdir()
            start = time.perf_counter()
            SPEC.seed(seed_dir, world)
            figures["seed"].append(_ms(start))
            state = base / f"state{n}"
            start = time.perf_counter()
            shutil.copytree(seed_dir, state, symlinks=True)
            figures["copy"].append(_ms(start))
            start = time.perf_counter()
            app = SPEC.make_app(state, GapLog())
            figures["app"].append(_ms(start))
            server = wsgi.Server(("127.0.0.1", 0), app, numthreads=4)
            server.prepare()
            thread = threading.Thread(target=server.serve, daemon=True)
            thread.start()
            host, port = server.bind_addr[:2]
            url = f"http://{host}:{port}"
            token = {"PRIVATE-TOKEN": "x"}
            calls = (
                ("projects", "GET", "projects?per_page=100", None),
                ("raw file", "GET", "projects/root%2Fopenhands/repository/files/README.md/raw?ref=main", None),
                ("create issue", "POST", "projects/root%2Fraft/issues", {"title": "t"}),
            )
            with requests.Session() as http:
                for key, method, route, body in calls:
                    start = time.perf_counter()
                    http.request(method, f"{url}/api/v4/{route}", headers=token, json=body).raise_for_status()
                    figures[key].append(_ms(start))
            work = base / f"clone{n}"
            start = time.perf_counter()
            subprocess.run(["git", "clone", "-q", url.replace("//", "//root:x@") + "/root/openhands.git", str(work)],
                           env=_ENV, check=True)
            figures["clone"].append(_ms(start))
            (work / "new.txt").write_text("x\n")
            subprocess.run(["git", "-C", str(work), "add", "."], env=_ENV, check=True)
            subprocess.run(["git", "-C", str(work), "commit", "-qm", "x"], env=_ENV, check=True)
            start = time.perf_counter()
            subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "main"], env=_ENV, check=True)
            figures["push"].append(_ms(start))
            server.stop()
            thread.join(5)
        size = sum(f.stat().st_size for f in (base / "seed0").rglob("*") if f.is_file())
    print(f"GitLab emulator, median of {rounds} rounds (ms):")
    for key, values in figures.items():
        print(f"  {key:<13} {statistics.median(values):8.1f}")
    print(f"  seed size     {size / 1e6:8.2f} MB")


if __name__ == "__main__":
    main()
