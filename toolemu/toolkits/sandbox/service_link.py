"""Starting a case's emulated web services (``toolemu.services``) for one sandbox episode.

The services' child process makes the episode's network namespace; the sandbox's shell and interpreter join it
(``nsenter`` before bwrap drops root), so the agent reaches the services at ``the-agent-company.com:<port>``
(``/etc/hosts``) and they outlive a restart of the shell. The seed of each service is built once per case
environment (its ``service_files``) from TheAgentCompany's world.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence

from toolemu.core.errors import ServiceError
from toolemu.core.types import EnvironmentSpec
from toolemu.services.case_files import service_files
from toolemu.services.pool import EpisodeServices, ServicePool, require_root, shared_pool
from toolemu.services.world import World, load_world
from toolemu.toolkits.sandbox.service_setup import run_setup_scripts


def environment_key(environment: EnvironmentSpec, *, setup: bool = True) -> str:
    """The cache key of the services' seed for ``environment``: its service files, where they come from and
    (with ``setup``) the setup scripts that run against the services before the agent."""
    data = [environment.base_dir or "", *(f.model_dump_json() for f in environment.service_files)]
    data += [n.model_dump_json() for n in environment.service_notes]
    if setup:
        data += ["setup", *environment.service_setup]
    return hashlib.sha256("\n".join(data).encode()).hexdigest()[:16]


def start_services(names: Sequence[str], environment: EnvironmentSpec, *, sandboxed: bool,
                   pool: ServicePool | None = None,
                   background: Callable[[Callable[[], None]], None] | None = None) -> EpisodeServices:
    """Starts ``names`` for an episode of ``environment``, serving in a new network namespace.

    ``background`` runs a job on the caller's worker thread (the next episode's services are asked for there).
    The first time a case's setup scripts are seen they run against services started from the plain seed, and
    the state they leave becomes the case's seed (so they run once per process, not per episode).

    Raises:
        ServiceError: Not root, the sandbox is disabled (the services live in its network namespace), a
            service failed to start, or a setup script failed.
        NotRegisteredError: An unknown service name.
        ConfigError: A service module is missing or broken, or a stand-in is unknown.
        CaseError: A service file or setup script of the case is missing or unsafe.
    """
    if not sandboxed:
        raise ServiceError(
            f"services {', '.join(names)} need the sandbox (they serve inside its network namespace); "
            "allow_unsandboxed=True cannot run cases with `services`"
        )
    require_root(f"the case's services ({', '.join(names)})")
    pool = pool or shared_pool()

    def world() -> World:
        return load_world().with_files(service_files(environment)).with_notes(environment.service_notes)

    key = environment_key(environment)
    if environment.service_setup and not pool.has_seeds(names, key):
        plain = pool.start(names, world, key=environment_key(environment, setup=False), spare=False)
        try:
            fd = plain.network_fd()
            if fd is None:
                raise ServiceError(f"services {', '.join(names)} died before the case's setup scripts ran")
            try:
                run_setup_scripts(environment, fd, plain.addresses())
            finally:
                os.close(fd)
            pool.adopt_seeds(plain, key)
        finally:
            plain.close()
    return pool.start(names, world, key=key, background=background)
