"""The per-episode bubblewrap sandbox behind real toolkits: config, root seeding, sessions and snapshots."""

from toolemu.toolkits.sandbox.config import SandboxConfig
from toolemu.toolkits.sandbox.sandbox import CommandOutcome, Sandbox
from toolemu.toolkits.sandbox.seed import sandbox_to_host
from toolemu.toolkits.sandbox.snapshot import UNREADABLE, snapshot_root

__all__ = ["UNREADABLE", "CommandOutcome", "Sandbox", "SandboxConfig", "sandbox_to_host", "snapshot_root"]
