"""Linux calls the service processes make through libc (``ctypes``): network namespaces, loopback, prctl.

Python 3.11 has ``os.unshare`` and ``os.setns`` only from 3.12 on, so they are called through libc here. All of
them need root (``CAP_SYS_ADMIN`` and ``CAP_NET_ADMIN`` in the host's user namespace).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import socket
import struct

CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def new_network() -> None:
    """Moves the calling process into a new, empty network namespace and brings its loopback up.

    Raises:
        OSError: Not permitted (not root) or the kernel refused.
    """
    _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    loopback_up()


def join_network(fd: int) -> None:
    """Moves the calling process into the network namespace behind ``fd`` (``/proc/<pid>/ns/net``).

    Raises:
        OSError: Not permitted or ``fd`` is not a network namespace.
    """
    _check(_libc.setns(fd, CLONE_NEWNET), "setns(CLONE_NEWNET)")


def loopback_up() -> None:
    """Sets ``lo`` up in the current network namespace (a new namespace starts with it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, request))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def die_with_parent(signal_number: int) -> None:
    """Asks the kernel to send ``signal_number`` to the caller when its parent exits."""
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal_number, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def not_dumpable() -> None:
    """Makes the caller non-dumpable: no core files, and no ptrace even by a process of the same uid."""
    _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def is_permission_error(error: OSError) -> bool:
    """Whether ``error`` means the caller lacks the privilege (root) for a namespace call."""
    return error.errno in (errno.EPERM, errno.EACCES)
