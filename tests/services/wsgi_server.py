"""Serves an emulated service's WSGI app on 127.0.0.1 with cheroot (the pool's HTTP server) for a test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cheroot import wsgi

from toolemu.services.base import GapLog, ServiceSpec


@contextmanager
def serve(spec: ServiceSpec, state_dir: Path, world: object) -> Iterator[tuple[str, GapLog]]:
    """Seeds ``state_dir`` from ``world``, serves ``spec``'s app on an ephemeral port; yields (base URL, gaps)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    spec.seed(state_dir, world)
    gaps = GapLog()
    server = wsgi.Server(("127.0.0.1", 0), spec.make_app(state_dir, gaps), numthreads=4)
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        host, port = server.bind_addr[:2]
        yield f"http://{host}:{port}", gaps
    finally:
        server.stop()
        thread.join(5)
