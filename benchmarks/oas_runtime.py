"""OAS profile cost: the set-up's library-folder build (libraries, wheelhouse, apt seeds) and the reset speed.

The build is timed into a scratch cache folder, each part on its own, with pip's download cache off (``--warm``
keeps it), and sized. The reset figures come from ``benchmarks/sandbox_reset.py --profile oas`` run over this
source tree and, with ``--baseline-src``, over another checkout (the code before a change) in the same run, with
their ratio. The host packages behind the sandbox's apt-get are timed by ``scripts/system_packages.sh`` itself
(run it under ``time`` on a host without them).

Run: python benchmarks/oas_runtime.py [--baseline-src DIR] [--episodes 20] [--rounds 2] [--warm] [--skip-build]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolemu.toolkits.sandbox import oas_image
from toolemu.toolkits.sandbox.oas_apt import build_apt
from toolemu.toolkits.sandbox.oas_wheelhouse import build_wheelhouse

HERE = Path(__file__).resolve().parent
KEYS = ("reset_median_ms", "first_command_after_reset_median_ms", "first_python_cell_median_ms",
        "episode_end_median_ms")


def _size_mb(path: Path) -> float:
    return sum(os.lstat(os.path.join(top, f)).st_size for top, _, files in os.walk(path) for f in files) / 1e6


def _build_figures(warm: bool) -> None:
    if not warm:
        os.environ["PIP_NO_CACHE_DIR"] = "1"
    with tempfile.TemporaryDirectory(prefix="oas-bench-") as tmp:
        scratch = Path(tmp)
        start = time.perf_counter()
        build_wheelhouse(scratch / "wheels", oas_image.SANDBOX_PYTHON)
        wheels_s = time.perf_counter() - start
        start = time.perf_counter()
        missing = build_apt(scratch / "apt")
        apt_s = time.perf_counter() - start
        start = time.perf_counter()
        built = oas_image.build(root=scratch / "cache")
        total_s = time.perf_counter() - start
        print(f"build_total_s={total_s:.1f}  size_mb={_size_mb(built):.0f}  (pip cache {'on' if warm else 'off'})")
        print(f"  site_s~={total_s - wheels_s - apt_s:.1f}  site_mb={_size_mb(built / 'site'):.0f}")
        print(f"  wheelhouse_s={wheels_s:.1f}  wheelhouse_mb={_size_mb(scratch / 'wheels'):.1f}")
        print(f"  apt_seeds_s={apt_s:.2f}  apt_seeds_mb={_size_mb(scratch / 'apt'):.1f}  "
              f"missing_on_host={','.join(missing) or 'none'}")


def _reset_figures(src: Path, args: argparse.Namespace) -> dict[str, float]:
    argv = [sys.executable, str(HERE / "sandbox_reset.py"), "--profile", "oas", "--episodes", str(args.episodes),
            "--rounds", str(args.rounds), "--steps", "20"]
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=src)
    if done.returncode != 0:
        print(f"  {src}: sandbox_reset.py failed: {done.stderr.strip()[-400:]}")
        return {}
    found = {}
    for line in done.stdout.splitlines():
        key, _, rest = line.partition("=")
        if key in KEYS:
            found[key] = float(rest.split()[0])
    return found


def main() -> None:
    """Prints the build figures, then the reset figures per source tree and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, default=None, help="a checkout to compare with")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warm", action="store_true", help="keep pip's download cache for the build")
    parser.add_argument("--skip-build", action="store_true")
    args = parser.parse_args()
    if not args.skip_build:
        _build_figures(args.warm)
    current = _reset_figures(HERE.parent, args)
    baseline = _reset_figures(args.baseline_src, args) if args.baseline_src else {}
    print(f"reset figures, oas profile (episodes={args.episodes} rounds={args.rounds}, with quotas):")
    for key in KEYS:
        now, before = current.get(key), baseline.get(key)
        line = f"  {key}: now={now if now is not None else 'n/a'}"
        if before is not None:
            line += f" baseline={before}" + (f" ratio={now / before:.2f}x" if now and before else "")
        print(line)


if __name__ == "__main__":
    main()
