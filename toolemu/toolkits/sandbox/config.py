"""``SandboxConfig``: resource limits, timeouts and snapshot bounds of a real-tool sandbox."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import Field, field_validator, model_validator

from toolemu.core.types import Frozen
from toolemu.toolkits.sandbox.browser_config import BrowserConfig


class SandboxConfig(Frozen):
    """Limits and options of one episode sandbox.

    The first limits apply to each process inside it (rlimits); ``sandbox_memory_mb`` and
    ``sandbox_max_processes`` bound all its processes together where the host offers cgroups, and ``disk_mb``
    and ``tmpfs_mb`` bound what it can write (``toolemu doctor`` prints which apply on this machine).
    """

    cpu_seconds: int = Field(default=30, ge=1)
    """CPU time per process (``RLIMIT_CPU``); the persistent shell itself is one such process."""
    memory_mb: int = Field(default=1024, ge=64)
    """Address space per process (``RLIMIT_AS``), in MiB."""
    max_processes: int = Field(default=64, ge=4)
    """Processes and threads inside the sandbox at once (``RLIMIT_NPROC`` of its own uid)."""
    max_file_mb: int = Field(default=64, ge=1)
    """Largest file a process may write (``RLIMIT_FSIZE``), in MiB."""
    sandbox_memory_mb: int = Field(default=3072, ge=128)
    """Memory of all the sandbox's processes together, in MiB, including the pages they write to the tmpfs
    folders (cgroup ``memory.max`` with no swap, or v1 ``memory.limit_in_bytes``); ignored without cgroups.
    Must exceed ``disk_mb + 2 * tmpfs_mb`` so that full folders end in ``ENOSPC``, not in the OOM killer."""
    sandbox_max_processes: int = Field(default=256, ge=8)
    """Processes and threads of the whole sandbox at once, across all its sessions (cgroup ``pids.max``);
    ignored without cgroups, where ``max_processes`` per uid still applies."""
    disk_mb: int = Field(default=1024, ge=16)
    """Size cap of the sandbox's writable files (the episode root with ``/workspace``, ``/tmp``, ``/home``,
    ``/etc``, ``/var``, plus the seed copies kept for the next reset), in MiB. As root: a tmpfs of this size
    (``nosuid``, ``nodev``, mode 0700); otherwise the tree is measured after each command and the sessions
    are ended when it is over (each file is still capped by ``max_file_mb``)."""
    disk_max_files: int = Field(default=200_000, ge=1000)
    """Most files and folders the size-capped root holds (tmpfs ``nr_inodes``; root only)."""
    tmpfs_mb: int = Field(default=64, ge=1)
    """Size of each RAM-backed folder inside the sandbox (``/run``, ``/dev/shm``), in MiB; ``/dev`` is
    read-only."""
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
    """At most this many files enter a snapshot; the rest are left out and ``FinalState.snapshot_overflow``
    says so (checks that would read a left-out path are errors, never "absent")."""
    snapshot_max_content_bytes: int = Field(default=65_536, ge=0)
    """Files up to this size that decode as UTF-8 carry their text in the snapshot."""
    snapshot_max_text_bytes: int = Field(default=8 * 1024 * 1024, ge=0)
    """Text kept in one snapshot in all; files met after it is spent carry no text (a ``file_contains``
    check then reads them in the sandbox, as for a large file)."""
    snapshot_max_hash_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    """Files with more data than this are hashed over their first this-many bytes only (noted in the hash)."""
    snapshot_max_total_hash_bytes: int = Field(default=512 * 1024 * 1024, ge=0)
    """Bytes read for hashing in one snapshot in all (holes of sparse files are skipped, not read); files met
    after it is spent get the hash ``NOT_HASHED`` and the overflow is recorded."""
    snapshot_timeout_s: float = Field(default=30.0, gt=0)
    """Wall-clock limit of one snapshot; what is not reached by then is left out and the overflow recorded."""
    snapshot_max_depth: int = Field(default=256, ge=1)
    """Deepest folder a snapshot enters; deeper ones are left out and the overflow recorded."""
    snapshot_archive_max_bytes: int = Field(default=16 * 1024 * 1024, ge=0)
    """Archives (tar, tar.gz/.bz2/.xz, zip, one gzip/bzip2/xz stream, told by their magic bytes) up to this size
    have their members listed in the snapshot (``FileRecord.members``); a larger one is not opened and the
    overflow is recorded; 0 lists none."""
    snapshot_archive_max_members: int = Field(default=256, ge=1)
    """Members listed per archive; later ones are left out and the overflow recorded."""
    snapshot_archive_max_unpacked_bytes: int = Field(default=32 * 1024 * 1024, ge=0)
    """Bytes decompressed and hashed for one archive's members (also charged to
    ``snapshot_max_total_hash_bytes``); decompression stops there, so a bomb costs at most this, and the members
    past it are left out and the overflow recorded."""

    clock_start: datetime | None = None
    """Wall-clock time the episode starts at (UTC; a time without a zone is read as UTC); the clock advances in
    real time from there, for every process in the sandbox and its checks, and files written carry its times
    (``toolemu.toolkits.sandbox.clock``: Debian's libfaketime, package ``faketime``). ``None``: the real clock.
    ``toolemu replay`` sets it to the log's first timestamp and follows the log's times."""
    service_placeholders: bool = False
    """Answer OpenAgentSafety's service ports (ownCloud 8092, GitLab 8929, Plane 8091 at
    ``the-agent-company.com``) in a network of the episode's own with ``503 service not emulated``
    (``toolemu.toolkits.sandbox.placeholder``), as its runtime had the services beside it. Needs root; on for
    replays of OAS logs (run as root)."""
    oas_chat_port: bool = False
    """With ``service_placeholders``, also hold port 3000, where OAS's RocketChat listened beside the agent (a
    server the agent starts there fails to bind, and a request there gets the placeholder's answer). On for
    replays of OAS logs, which ran in that world; off for native episodes, whose agents may serve on 3000."""
    browser: BrowserConfig = Field(default_factory=BrowserConfig)
    """The ``Browser`` toolkit's Chromium: limits, timeouts, observation bounds, screenshots."""

    @field_validator("clock_start")
    @classmethod
    def _clock_in_range(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        if not 1971 <= value.year <= 2099:
            raise ValueError(f"clock_start {value.isoformat()} is outside 1971-2099; give a time such as "
                             "2025-05-05T11:55:30Z")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _memory_holds_tmpfs(self) -> SandboxConfig:
        if self.sandbox_memory_mb <= self.disk_mb + 2 * self.tmpfs_mb:
            raise ValueError(
                f"sandbox_memory_mb={self.sandbox_memory_mb} must exceed disk_mb + 2 * tmpfs_mb "
                f"({self.disk_mb + 2 * self.tmpfs_mb}): files in the tmpfs folders count as memory; raise "
                "sandbox_memory_mb or lower disk_mb / tmpfs_mb"
            )
        if self.sandbox_memory_mb < self.memory_mb:
            raise ValueError(
                f"sandbox_memory_mb={self.sandbox_memory_mb} is below memory_mb={self.memory_mb} (one process); "
                "raise sandbox_memory_mb"
            )
        return self
