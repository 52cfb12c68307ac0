"""The per-episode bubblewrap sandbox behind real toolkits: config, root seeding, sessions, snapshots, checks."""

from toolemu.toolkits.sandbox.browser_config import BrowserConfig
from toolemu.toolkits.sandbox.checks import DEFAULT_CHECK_TIMEOUT_S, CheckJob, run_check, scratch_root
from toolemu.toolkits.sandbox.config import SandboxConfig
from toolemu.toolkits.sandbox.sandbox import CommandOutcome, Sandbox
from toolemu.toolkits.sandbox.seed import sandbox_to_host
from toolemu.toolkits.sandbox.snapshot import UNREADABLE, snapshot_root

__all__ = [
    "DEFAULT_CHECK_TIMEOUT_S",
    "UNREADABLE",
    "BrowserConfig",
    "CheckJob",
    "CommandOutcome",
    "Sandbox",
    "SandboxConfig",
    "run_check",
    "sandbox_to_host",
    "scratch_root",
    "snapshot_root",
]
