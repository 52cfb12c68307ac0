"""``BrowserConfig``: limits and options of the episode's sandboxed Chromium (the ``Browser`` toolkit)."""

from __future__ import annotations

from pydantic import Field

from toolemu.core.types import Frozen


class BrowserConfig(Frozen):
    """Limits and options of the ``Browser`` toolkit's Chromium, one per episode (``SandboxConfig.browser``).

    The browser runs in a bubblewrap sandbox of its own, in the episode's network namespace; its processes
    together are bounded by a cgroup where the host offers one (``toolemu doctor``), else by the process limit
    of its own uid and V8's heap limit.
    """

    executable: str = "/usr/lib/chromium/chromium"
    """Chromium binary (Debian's package ``chromium``; its ``/usr/bin/chromium`` is a launcher script)."""
    memory_mb: int = Field(default=1536, ge=256)
    """Memory of all the browser's processes together (cgroup ``memory.max``, no swap), in MiB."""
    max_processes: int = Field(default=512, ge=32)
    """Processes and threads of the browser together (cgroup ``pids.max``; ``RLIMIT_NPROC`` without cgroups)."""
    js_heap_mb: int = Field(default=512, ge=64)
    """V8 heap limit of each page (``--max-old-space-size``), in MiB."""
    tmpfs_mb: int = Field(default=256, ge=32)
    """Size of the browser's private ``/tmp`` (profile, cache) and ``/dev/shm``, in MiB."""
    start_timeout_s: float = Field(default=30.0, gt=0)
    """Wall-clock limit for Chromium to start."""
    action_timeout_s: float = Field(default=10.0, gt=0)
    """Wall-clock limit of one action (click, fill, ...) waiting for its element."""
    navigation_timeout_s: float = Field(default=20.0, gt=0)
    """Wall-clock limit of one navigation (``goto``, ``go_back``, a click that loads a page)."""
    settle_timeout_s: float = Field(default=3.0, ge=0)
    """After an action, how long to wait for the page to finish loading before observing it."""
    max_observation_chars: int = Field(default=12_000, ge=500)
    """Longest accessibility-tree text shown to the agent; longer trees end with a truncation marker (the JSON
    observation around it stays under the env's ``max_observation_chars``)."""
    max_observation_nodes: int = Field(default=1500, ge=10)
    """Most accessibility-tree lines shown to the agent; the rest are counted in the truncation marker."""
    max_upload_mb: int = Field(default=50, ge=1)
    """Largest file ``upload_file`` sends, in MiB."""
    screenshots: bool = False
    """Store a screenshot (JPEG, base64) with each browser step of the trajectory, for the viewer."""
    screenshot_max_kb: int = Field(default=200, ge=10)
    """Largest screenshot stored, in KiB (lower quality is tried first; a larger one is left out)."""
    viewport_width: int = Field(default=1280, ge=320, le=3840)
    """Page width in CSS pixels."""
    viewport_height: int = Field(default=720, ge=240, le=2160)
    """Page height in CSS pixels."""
    warm_driver: bool = True
    """Keep one Playwright driver process per worker process warm across episodes (only Chromium starts per
    episode); ``False`` starts and ends a driver with each episode's browser."""
