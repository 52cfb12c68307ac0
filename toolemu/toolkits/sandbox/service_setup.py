"""A case's setup scripts (``EnvironmentSpec.service_setup``, upstream ``populate_data.py``) run against its
services before the agent starts, as OpenAgentSafety ran them: programs with ``common`` and ``config`` importable.

Each runs in a read-only sandbox of its own (the ``oas`` profile, our ``/etc``), joined to the services' network
namespace, with the services' addresses pinned (``TOOLEMU_OAS_SERVICES``). A script that fails or times out is an
infrastructure error naming it: an episode never starts from a half-made world.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

from toolemu.core import safefs
from toolemu.core.errors import CaseError, ServiceError
from toolemu.core.types import EnvironmentSpec
from toolemu.toolkits.sandbox import oas_image
from toolemu.toolkits.sandbox._bounded import run_bounded
from toolemu.toolkits.sandbox.bwrap import bwrap_argv
from toolemu.toolkits.sandbox.checks import (
    SANDBOX_PYTHON,
    _open_up,
    _scratch_etc,
    _stage_compat,
    scratch_root,
)
from toolemu.toolkits.sandbox.grader_copy import RUNNER_MOUNT, UTILS_MOUNT
from toolemu.toolkits.sandbox.quota import check_quota

SETUP_TIMEOUT_S = 300.0
"""Wall-clock limit of one setup script."""
_MAX_OUTPUT = 1 << 20


def run_setup_scripts(environment: EnvironmentSpec, netns_fd: int, addresses: Mapping[str, str], *,
                      timeout_s: float = SETUP_TIMEOUT_S) -> None:
    """Runs every script of ``environment.service_setup`` in order against the services behind ``netns_fd``.

    Args:
        environment: The case's environment (scripts are relative to ``base_dir``).
        netns_fd: The services' network namespace.
        addresses: ``EpisodeServices.addresses()``: where each ``the-agent-company.com:<port>`` is reached.
        timeout_s: Limit of each script.

    Raises:
        ServiceError: A script exited non-zero, timed out or flooded its output.
        CaseError: A script is missing, or its folder holds a link out of the case folder.
    """
    for script in environment.service_setup:
        if environment.base_dir is None:
            raise CaseError(f"service_setup {script!r}: the case has no folder to read it from (base_dir unset)")
        source = Path(environment.base_dir) / script
        if not source.is_file() or source.is_symlink():
            raise CaseError(f"service_setup {script!r}: {source} is not a file of the case folder")
        with scratch_root() as root, tempfile.TemporaryDirectory(prefix="toolemu-setup-") as tmp:
            staging = Path(tmp)
            utils = staging / "utils"
            safefs.copy_tree(source.parent, utils, what="setup script's folder", links="inside",
                             skip=("__pycache__",), within=environment.base_dir)
            runner = staging / "runner"
            runner.mkdir()
            _stage_compat(runner)
            for top in (runner, utils):
                _open_up(top)
            etc = _scratch_etc(root, staging)
            env = {"TOOLEMU_OAS_SERVICES": json.dumps(dict(addresses)), "PYTHONNOUSERSITE": "1",
                   "PYTHONIOENCODING": "utf-8", "PYTHONPATH": f"{RUNNER_MOUNT}:{UTILS_MOUNT}:{oas_image.SITE_MOUNT}"}
            argv = bwrap_argv(root, writable=False, extra_ro_binds=[(runner, RUNNER_MOUNT), (utils, UTILS_MOUNT)],
                              env=env, cwd=UTILS_MOUNT, profile="oas", netns_fd=netns_fd, etc=etc)
            argv += [SANDBOX_PYTHON, "-S", "-B", f"{UTILS_MOUNT}/{source.name}"]
            with check_quota() as bound:
                try:
                    done = run_bounded(bound(argv), b"", timeout_s=timeout_s, max_stdout=_MAX_OUTPUT,
                                       max_stderr=_MAX_OUTPUT, pass_fds=(netns_fd,))
                except OSError as e:
                    raise ServiceError(f"service_setup {script!r}: could not start the sandbox: {e}") from e
        if done.timed_out or done.overflow or done.returncode != 0:
            why = (f"timed out after {timeout_s:g} s" if done.timed_out else done.overflow
                   or f"exited {done.returncode}")
            raise ServiceError(f"service_setup {script!r} failed ({why}): {done.stderr_tail.strip()[-800:]!r}")
