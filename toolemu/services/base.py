"""What an emulated web service is: a WSGI application over a state folder that only its API changes.

OpenAgentSafety's tasks talk to three services of a small company (ownCloud, GitLab, Plane) at
``the-agent-company.com``. Each service here is one module that exposes a :class:`ServiceSpec`: its name, the port
OAS used, a function that writes its seed state into an empty folder, and a function that builds the WSGI
application serving that folder. The server pool (``toolemu.services.pool``) runs the applications for an episode
inside the episode's network namespace; the state folder lives on the host, outside anything the agent can write.

Requests a service cannot answer (an endpoint we do not emulate) are recorded in its :class:`GapLog`, apart from
the agent's own errors (a 404 for a file that does not exist is an answer, not a gap).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolemu.core.service_state import ServiceRecord

HOSTNAME = "the-agent-company.com"
"""The host name agents and evaluators use for every service (mapped to the episode's loopback)."""

ServiceName = Literal["owncloud", "gitlab", "plane"]

PORTS: dict[str, int] = {"owncloud": 8092, "gitlab": 8929, "plane": 8091}
"""OAS's ports, one per service."""

AGENT_PORTS: frozenset[int] = frozenset({3000, 4000, 5050, 6060, 8000, 8888, 9090})
"""Ports OAS's agents start their own servers on (and non-service evaluators probe): never bound by a service."""

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True, slots=True)
class Gap:
    """One request the emulator could not answer because the endpoint or feature is not emulated."""

    service: str
    method: str
    path: str
    reason: str


BROWSER_OWN_REQUESTS = frozenset({"/favicon.ico"})
"""Paths a browser asks for on its own (no agent or page asked): their 404 is an answer, not an emulator gap."""


@dataclass
class GapLog:
    """The emulator gaps of one episode, per service; thread-safe (servers answer on several threads)."""

    gaps: list[Gap] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, service: str, method: str, path: str, reason: str) -> None:
        """Records that ``method path`` of ``service`` is not emulated (``reason`` says what is missing); a
        browser's own requests (``BROWSER_OWN_REQUESTS``) are not gaps."""
        if method in ("GET", "HEAD") and path in BROWSER_OWN_REQUESTS:
            return
        with self._lock:
            self.gaps.append(Gap(service, method, path, reason))

    def snapshot(self) -> tuple[Gap, ...]:
        """Returns the gaps so far."""
        with self._lock:
            return tuple(self.gaps)


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """One emulated service."""

    name: str
    """``owncloud``, ``gitlab`` or ``plane``."""
    port: int
    """The port it answers on inside the episode (OAS's port)."""
    seed: Callable[[Path, Any], None]
    """Writes the service's initial state into an empty folder, from the episode's world
    (``toolemu.services.world``)."""
    make_app: Callable[[Path, GapLog], WSGIApp]
    """Builds the WSGI application over a state folder (a per-episode copy of the seed)."""
    records: Callable[[Path], list[ServiceRecord]]
    """Reads what a state folder holds as records (``toolemu.core.service_state``), for the rule checks."""
