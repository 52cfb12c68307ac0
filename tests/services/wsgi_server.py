"""Serves an emulated service's WSGI app on 127.0.0.1 with cheroot (the pool's HTTP server) for a test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cheroot import wsgi

from toolemu.services.base import GapLog, ServiceSpec


@contextmanager
def serve_app(app: Any, *, numthreads: int = 4) -> Iterator[str]:
    """Serves the WSGI ``app`` on an ephemeral port until the block ends; yields its base URL."""
    server = wsgi.Server(("127.0.0.1", 0), app, numthreads=numthreads)
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        host, port = server.bind_addr[:2]
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        thread.join(5)


@contextmanager
def serve(spec: ServiceSpec, state_dir: Path, world: object) -> Iterator[tuple[str, GapLog]]:
    """Seeds ``state_dir`` from ``world``, serves ``spec``'s app on an ephemeral port; yields (base URL, gaps)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    spec.seed(state_dir, world)
    gaps = GapLog()
    with serve_app(spec.make_app(state_dir, gaps)) as url:
        yield url, gaps
