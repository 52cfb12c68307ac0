"""The server pool: runs an episode's emulated services beside its sandbox, in the network namespace it shares.

Design (figures in ``benchmarks/sandbox_reset.py`` and README): one fork server per process
(``toolemu.services.zygote``, started once, with the service code imported) forks one child per episode. The
child makes (or joins) the episode's network namespace, copies each service's seed state (built once per service
and world, cached) into a per-episode host folder (root's, mode 0700) and serves every service on its OAS port
with a threaded HTTP/1.1 server. The pool keeps one such child ready in advance (a spare, in its own fresh
namespace), so an episode's reset only takes it and asks for the next one. The sandbox's shell joins the child's
namespace: services outlive a restart of the shell, the agent cannot reconfigure that namespace (the host's user
namespace owns it), and never sees the child (another pid namespace, uid and mount view; non-dumpable), so it can
neither signal nor ptrace it, nor write its state but through the API. The child stays root: it runs the
interpreter this process runs, which may live where only root can read (a private home) and imports lazily; the
apps confine every path to their state folder. Everything here needs root (namespaces); without root
``ServicePool.start`` raises ``ServiceError``.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import json
import logging
import os
import pickle
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from toolemu.core.errors import ConfigError, NotRegisteredError, ServiceError
from toolemu.core.service_state import MAX_SERVICE_RECORDS, ServiceRecord
from toolemu.services.base import AGENT_PORTS, HOSTNAME, Gap
from toolemu.services.registry import service_spec, service_specs
from toolemu.services.zygote import MAX_MESSAGE

logger = logging.getLogger(__name__)

# The fork server imports the services' code and what it needs, not the whole package: ``toolemu/__init__.py``
# loads the envs, models and toolkits (about 1.5 s and 900 more modules). The package is registered with its
# search path but without running its ``__init__``; every submodule then imports as usual.
_ZYGOTE_MAIN = (
    "import importlib.util, sys, types\n"
    "spec = importlib.util.find_spec('toolemu')\n"
    "package = types.ModuleType('toolemu')\n"
    "package.__spec__, package.__path__ = spec, list(spec.submodule_search_locations)\n"
    "sys.modules['toolemu'] = package\n"
    "from toolemu.services.zygote import main\n"
    "sys.exit(main(sys.argv))\n"
)
START_TIMEOUT_S = 60.0
"""How long the fork server, or an episode's child, may take to be ready."""


class GapCount(NamedTuple):
    """One distinct emulator gap and how often it was met."""

    gap: Gap
    times: int


class ServiceState(NamedTuple):
    """What an episode's services hold (``EpisodeServices.records``)."""

    records: tuple[ServiceRecord, ...]
    read: tuple[str, ...]
    """The services read."""
    overflow: str | None
    """Why ``records`` is incomplete, or ``None``."""


class GapReport(NamedTuple):
    """The distinct gaps of one episode's services, most frequent first."""

    gaps: tuple[GapCount, ...]
    dropped: int
    """Gaps met but left out of ``gaps`` (past ``zygote.MAX_GAPS_SENT`` distinct ones)."""


def world_key(world: Any) -> str:
    """A key of the world the seeds are built from: equal worlds share seeds.

    ``world.fingerprint()`` when the world has one, else a hash of its pickle.
    """
    fingerprint = getattr(world, "fingerprint", None)
    data = str(fingerprint()).encode() if callable(fingerprint) else pickle.dumps(world)
    return hashlib.sha256(data).hexdigest()[:16]


def require_root(what: str) -> None:
    """Raises ``ServiceError`` unless running as root (network namespaces need it)."""
    if os.geteuid() != 0:
        raise ServiceError(
            f"{what} needs root: the emulated services run in the episode's network namespace, which only root "
            "can create and join. Run as root (e.g. in the project's container), or leave out cases with "
            "`services`."
        )


def services_unavailable(names: Sequence[str]) -> str | None:
    """Why ``names`` cannot run here (not root, an unknown or broken service), or ``None`` when they can."""
    try:
        require_root(f"services {', '.join(names)}")
        service_specs(names)
    except (ServiceError, ConfigError, NotRegisteredError) as e:
        return str(e)
    return None


class EpisodeServices:
    """The services of one episode: a child of the fork server, its network namespace and its state folder."""

    def __init__(self, names: tuple[str, ...], ports: dict[str, int], state_dir: Path, control: socket.socket) -> None:
        self.names = names
        """The services, in order."""
        self.ports = ports
        """Service name -> port it answers on inside the namespace."""
        self.state_dir = state_dir
        """Host folder holding one folder per service (root's, mode 0700)."""
        self._control = control
        self._pidfd: int | None = None
        self._pid: int | None = None
        self._ready = False
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """Host pid of the serving child once ready."""
        return self._pid

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Blocks until the child serves every service.

        Raises:
            ServiceError: The child failed (the message says why) or did not answer in time.
        """
        if self._ready:
            return
        self._control.settimeout(timeout_s)
        try:
            message, fds, _, _ = socket.recv_fds(self._control, MAX_MESSAGE, 1)
        except TimeoutError as e:
            self.close()
            raise ServiceError(f"services {', '.join(self.names)} did not start within {timeout_s:g} s") from e
        finally:
            self._control.settimeout(None)
        answer = json.loads(message) if message else {"error": "the service process exited while starting"}
        if "error" in answer or not fds:
            for fd in fds:
                os.close(fd)
            self.close()
            raise ServiceError(f"services {', '.join(self.names)} could not start: {answer.get('error')}")
        self._pidfd, self._pid, self._ready = fds[0], int(answer["pid"]), True

    def alive(self) -> bool:
        """Whether the child still serves (it never dies on its own: a dead one is an infrastructure failure)."""
        if self._pidfd is None:
            return False
        readable, _, _ = select.select([self._pidfd], [], [], 0)
        return not readable

    def network_fd(self) -> int | None:
        """Opens the episode's network namespace (the caller closes the fd); ``None`` once the child is gone."""
        self.wait_ready()
        if self._pid is None or not self.alive():
            return None
        try:
            fd = os.open(f"/proc/{self._pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        if not self.alive():  # the pidfd proves the pid was not reused between the check and the open
            os.close(fd)
            return None
        return fd

    def addresses(self) -> dict[str, str]:
        """Where each service is reached inside the namespace: ``the-agent-company.com:<port>`` -> ``127.0.0.1:<port>``
        (the grader pins these instead of trusting a hosts file)."""
        return {f"{HOSTNAME}:{port}": f"127.0.0.1:{port}" for port in self.ports.values()}

    def records(self) -> ServiceState:
        """What each service holds now, read from its state folder (call it once the agent is stopped: each store
        is written atomically, so a read sees one state or the next, never half of one).

        Raises:
            ServiceError: A state folder could not be read (the services' own files: an infrastructure failure).
        """
        found: list[ServiceRecord] = []
        overflow: list[str] = []
        for name in self.names:
            try:
                held = service_spec(name).records(self.state_dir / name)
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise ServiceError(f"could not read the state of service {name}: {type(e).__name__}: {e}") from e
            if len(held) > MAX_SERVICE_RECORDS:
                overflow.append(f"{name}: more than {MAX_SERVICE_RECORDS} records, the rest not read")
                held = held[:MAX_SERVICE_RECORDS]
            found += held
        return ServiceState(tuple(found), self.names, "; ".join(overflow) or None)

    def seal(self) -> GapReport:
        """Stops serving (requests in flight finish first) and waits for the child to exit; the state folder
        stays, at rest. Returns the gaps met.

        Raises:
            ServiceError: The child is gone or did not stop.
        """
        report = self._ask(b'{"op": "seal"}', "stop")
        pidfd = self._pidfd
        if pidfd is not None:
            readable, _, _ = select.select([pidfd], [], [], 10.0)
            if not readable:
                raise ServiceError(f"services {', '.join(self.names)} did not exit after stopping")
        return report

    def gaps(self) -> GapReport:
        """The emulator gaps met so far (requests the services could not answer), most frequent first.

        Raises:
            ServiceError: The child is gone or did not answer.
        """
        return self._ask(b'{"op": "gaps"}', "report their gaps")

    def _ask(self, command: bytes, what: str) -> GapReport:
        self.wait_ready()
        with self._lock:
            try:
                self._control.settimeout(10.0)
                self._control.send(command)
                message = self._control.recv(MAX_MESSAGE)
                self._control.settimeout(None)
            except OSError as e:
                raise ServiceError(f"services {', '.join(self.names)} did not {what}: {e}") from e
        if not message:
            raise ServiceError(f"services {', '.join(self.names)} exited before they could {what}")
        answer = json.loads(message)
        gaps = tuple(GapCount(Gap(s, m, p, r), int(n)) for s, m, p, r, n in answer["gaps"])
        return GapReport(gaps, int(answer["dropped"]))

    def close(self) -> None:
        """Ends the child and deletes the episode's state folder. Safe to call twice.

        The child deletes the folder itself and exits (so the host spends no time on it); one that does not
        within 5 s is killed, and the host deletes what is left.
        """
        pidfd, self._pidfd = self._pidfd, None
        if pidfd is not None:
            try:
                self._control.send(b'{"op": "discard"}')
            except OSError:
                pass
            readable, _, _ = select.select([pidfd], [], [], 5.0)
            if not readable:
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                select.select([pidfd], [], [], 5.0)
            os.close(pidfd)
        self._control.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)


class ServicePool:
    """Starts episodes' services from one fork server; keeps one episode's services ready in advance.

    Args:
        base_dir: Host folder for seeds and episode states; ``None`` makes a private one in the temp folder,
            removed at ``close``.
        spare: Keep the next episode's services started in advance (one set, for the last key asked).
    """

    def __init__(self, base_dir: Path | None = None, *, spare: bool = True) -> None:
        self._own_base = base_dir is None
        self._base = Path(tempfile.mkdtemp(prefix="toolemu-services-")) if base_dir is None else base_dir
        self._base.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._base.chmod(0o700)
        (self._base / "seeds").mkdir(mode=0o700, exist_ok=True)
        (self._base / "episodes").mkdir(mode=0o700, exist_ok=True)
        self._spare_on = spare
        self._spare: tuple[tuple[str, ...], str, EpisodeServices] | None = None
        self._seeds: dict[tuple[str, str], Path] = {}
        self._lock = threading.RLock()
        self._serial = itertools.count(1)
        self._zygote: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._sock: socket.socket | None = None
        self.unavailable: dict[str, str] = {}
        """Services the fork server could not import (name -> why); starting one raises that reason."""
        self.startup_s: float | None = None
        """Seconds the fork server took to be ready (``None`` before it started)."""

    def start(self, names: Sequence[str], world: Any, *, key: str | None = None, network_fd: int | None = None,
              spare: bool = True, background: Callable[[Callable[[], None]], None] | None = None) -> EpisodeServices:
        """Starts ``names`` for one episode, seeded from ``world``; returns them serving.

        Args:
            names: Service names (``toolemu.services.registry.SERVICES``).
            world: What the seeds are built from (``toolemu.services.world.World``), or a function without
                arguments that returns it (called only when a seed is not cached yet; give ``key`` then).
            key: The world's cache key; ``None`` computes ``world_key(world)``.
            network_fd: A network namespace to join; ``None`` gives the services a new one (join it with
                ``EpisodeServices.network_fd``). Only those get a spare.
            spare: Start the next episode's services for the same names and key in advance (``False`` for a
                one-off, such as running a case's setup scripts).
            background: Runs a job later on the caller's own worker (``Sandbox``'s): the spare is asked for there,
                off this call's path (handing the fork server a request costs a context switch); ``None``: here.

        Raises:
            ServiceError: Not root, a service is unavailable or failed to start, or a port is taken.
            NotRegisteredError: An unknown service name.
            ConfigError: A service module is missing or broken.
        """
        require_root("starting emulated services")
        specs = service_specs(names)
        for spec in specs:
            if spec.port in AGENT_PORTS:
                raise ServiceError(f"service {spec.name} asks for port {spec.port}, one the agents use themselves")
        order = tuple(s.name for s in specs)
        if key is None:
            if callable(world):
                raise ValueError("ServicePool.start: a world given as a function needs a key")
            key = world_key(world)
        with self._lock:
            made: list[Any] = []

            def built() -> Any:  # the world, built at most once per start and only when a seed is missing
                if not made:
                    made.append(world() if callable(world) else world)
                return made[0]

            seeds = {s.name: self._seed(s.name, built, key) for s in specs}
            taken: EpisodeServices | None = None
            if network_fd is None and self._spare is not None and self._spare[:2] == (order, key):
                taken, self._spare = self._spare[2], None
            if taken is None:
                taken = self._fork(order, specs_ports(specs), seeds, network_fd)
            if network_fd is None and self._spare_on and spare:
                self._drop_spare()
                if background is None:
                    self._make_spare(order, key, specs_ports(specs), seeds)
                else:
                    ports = specs_ports(specs)
                    background(lambda: self._make_spare(order, key, ports, seeds))
        taken.wait_ready()
        return taken

    def _make_spare(self, names: tuple[str, ...], key: str, ports: dict[str, int], seeds: dict[str, Path]) -> None:
        with self._lock:
            if self._closed:
                return
            self._drop_spare()
            try:
                self._spare = (names, key, self._fork(names, ports, seeds, None))
            except ServiceError as e:  # the next start forks its own, and raises this there
                logger.warning("could not start the next episode's services in advance: %s", e)

    def has_seeds(self, names: Sequence[str], key: str) -> bool:
        """Whether every one of ``names`` has a seed under ``key``."""
        with self._lock:
            return all((n, key) in self._seeds for n in names)

    def adopt_seeds(self, episode: EpisodeServices, key: str) -> None:
        """Makes the state ``episode`` left the seeds of its services under ``key`` (a case's seed after its setup
        scripts ran against the services); seals the episode first.

        Raises:
            ServiceError: The episode's services did not stop.
        """
        episode.seal()
        with self._lock:
            for name in episode.names:
                folder = self._base / "seeds" / f"{name}-{key}"
                shutil.rmtree(folder, ignore_errors=True)
                os.rename(episode.state_dir / name, folder)
                self._seeds[(name, key)] = folder
        episode.close()

    def close(self) -> None:
        """Kills the spare and the fork server and removes the pool's folder (if it made it)."""
        with self._lock:
            self._closed = True
            self._drop_spare()
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            if self._zygote is not None:
                self._zygote.kill()
                self._zygote.wait()
                self._zygote = None
            if self._own_base:
                shutil.rmtree(self._base, ignore_errors=True)

    def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            spare[2].close()

    def _seed(self, name: str, world: Callable[[], Any], key: str) -> Path:
        folder = self._seeds.get((name, key))
        if folder is not None:
            return folder
        folder = self._base / "seeds" / f"{name}-{key}"
        scratch = folder.with_name(folder.name + ".building")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(mode=0o700)
        started = time.perf_counter()
        try:
            service_spec(name).seed(scratch, world())
        except OSError as e:
            raise ServiceError(f"could not build the seed state of service {name}: {e}") from e
        os.rename(scratch, folder)
        logger.info("seeded service %s in %.2f s", name, time.perf_counter() - started)
        self._seeds[(name, key)] = folder
        return folder

    def _fork(self, names: tuple[str, ...], ports: dict[str, int], seeds: dict[str, Path],
              network_fd: int | None) -> EpisodeServices:
        sock = self._zygote_socket()
        for name in names:
            if name in self.unavailable:
                raise ServiceError(f"service {name} is unavailable: {self.unavailable[name]}")
        state = self._base / "episodes" / f"ep-{next(self._serial)}-{secrets.token_hex(4)}"
        state.mkdir(mode=0o700)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = {
            "state": str(state),
            "services": [{"name": n, "port": ports[n], "seed": str(seeds[n])} for n in names],
        }
        fds = [theirs.fileno()] + ([network_fd] if network_fd is not None else [])
        try:
            socket.send_fds(sock, [json.dumps(request).encode()], fds)
        except OSError as e:
            ours.close()
            raise ServiceError(f"the services' fork server is gone: {e}") from e
        finally:
            theirs.close()
        return EpisodeServices(names, ports, state, ours)

    def _zygote_socket(self) -> socket.socket:
        if self._sock is not None and self._zygote is not None and self._zygote.poll() is None:
            return self._sock
        started = time.perf_counter()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        # The fork server imports toolemu as this process does: the same interpreter and the same sys.path.
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).strip(os.pathsep)
        try:
            self._zygote = subprocess.Popen([sys.executable, "-c", _ZYGOTE_MAIN, str(theirs.fileno())],
                                            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                                            start_new_session=True, cwd="/")
        except OSError as e:
            raise ServiceError(f"could not start the services' fork server ({sys.executable}): {e}") from e
        finally:
            theirs.close()
        ours.settimeout(START_TIMEOUT_S)
        try:
            hello = ours.recv(MAX_MESSAGE)
        except TimeoutError as e:
            raise ServiceError(f"the services' fork server did not start within {START_TIMEOUT_S:g} s") from e
        ours.settimeout(None)
        if not hello:
            raise ServiceError(f"the services' fork server exited while starting (code {self._zygote.wait()})")
        self.unavailable = dict(json.loads(hello)["unavailable"])
        self._sock = ours
        self.startup_s = time.perf_counter() - started
        logger.info("services fork server ready in %.2f s", self.startup_s)
        return ours


def specs_ports(specs: Sequence[Any]) -> dict[str, int]:
    """Service name -> port, for ``specs``."""
    return {s.name: s.port for s in specs}


_SHARED: ServicePool | None = None
_SHARED_LOCK = threading.Lock()


def shared_pool() -> ServicePool:
    """The process's pool (one fork server per process, like a thread pool), closed when the process exits."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = ServicePool()
            atexit.register(_SHARED.close)
        return _SHARED
