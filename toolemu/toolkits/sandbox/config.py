"""``SandboxConfig``: resource limits, timeouts and snapshot bounds of a real-tool sandbox."""

from __future__ import annotations

from pydantic import Field

from toolemu.core.types import Frozen


class SandboxConfig(Frozen):
    """Limits and options of one episode sandbox. Limits apply to each process inside it."""

    cpu_seconds: int = Field(default=30, ge=1)
    """CPU time per process (``RLIMIT_CPU``); the persistent shell itself is one such process."""
    memory_mb: int = Field(default=1024, ge=64)
    """Address space per process (``RLIMIT_AS``), in MiB."""
    max_processes: int = Field(default=64, ge=4)
    """Processes and threads inside the sandbox at once (``RLIMIT_NPROC`` of its own uid)."""
    max_file_mb: int = Field(default=64, ge=1)
    """Largest file a process may write (``RLIMIT_FSIZE``), in MiB."""
    command_timeout_s: float = Field(default=10.0, gt=0)
    """Wall-clock limit of one command or code cell; on expiry what it started is killed."""
    start_timeout_s: float = Field(default=10.0, gt=0)
    """Wall-clock limit for a shell or interpreter session to come up."""
    max_output_chars: int = Field(default=10_000, ge=200)
    """Longest output returned to the agent; longer output keeps its head and tail around a marker."""
    allow_unsandboxed: bool = False
    """Run without bubblewrap (host processes, no isolation). For debugging only; logs a WARNING."""
    bwrap_path: str | None = None
    """bwrap executable; ``None`` searches ``PATH``."""
    python: str = "python3"
    """Python interpreter inside the sandbox (name on the sandbox ``PATH`` or absolute path)."""
    snapshot_max_files: int = Field(default=20_000, ge=1)
    """At most this many files enter a snapshot; more is a ``SandboxError`` rather than a silent cut."""
    snapshot_max_content_bytes: int = Field(default=65_536, ge=0)
    """Files up to this size that decode as UTF-8 carry their text in the snapshot."""
    snapshot_max_hash_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    """Files larger than this are hashed over their first this-many bytes only (noted in the hash)."""
