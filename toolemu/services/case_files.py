"""The files a case's services hold when an episode starts: ``EnvironmentSpec.service_files`` made into bytes.

A ``ServiceFile`` names either a file of the case folder (read beneath ``EnvironmentSpec.base_dir`` without
following a link out of it, refusing special files: case folders are untrusted) or a stand-in document we
generate (``toolemu.services.standins``). The result feeds ``World.with_files`` for the services' seed.
"""

from __future__ import annotations

from collections.abc import Iterable

from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.core.limits import MAX_SEED_FILE_BYTES
from toolemu.core.types import EnvironmentSpec, ServiceFile
from toolemu.services.standins import build_standin

ServiceFiles = dict[str, dict[str, bytes]]
"""Service -> path (relative to the user's files root) -> bytes."""


def service_files(env: EnvironmentSpec) -> ServiceFiles:
    """Returns the bytes of every file of ``env.service_files``, grouped by service.

    Raises:
        CaseError: A source file is missing, a link out of the case folder, a special file or too large, or
            ``base_dir`` is unset while a source is named; two entries give the same path.
        ConfigError: A stand-in name is not known.
    """
    return resolve(env.service_files, env.base_dir)


def resolve(files: Iterable[ServiceFile], base_dir: str | None) -> ServiceFiles:
    """``service_files`` for explicit entries (see there)."""
    out: ServiceFiles = {}
    for item in files:
        if item.source is not None:
            if base_dir is None:
                raise CaseError(f"service file {item.path}: source {item.source!r} needs the case folder "
                                "(base_dir is unset; load the case from its file)")
            data = safefs.read_bytes(base_dir, item.source, what="service file", limit=MAX_SEED_FILE_BYTES)
            produced = {item.path: data}
        elif item.content is not None:
            produced = {item.path: item.content.encode("utf-8")}
        else:
            produced = build_standin(str(item.standin), item.path)
        held = out.setdefault(item.service, {})
        for path, content in produced.items():
            if path in held:
                raise CaseError(f"service file {path}: given twice for {item.service}; keep one entry")
            held[path] = content
    return out


def uses_standin(env: EnvironmentSpec) -> bool:
    """Whether any file of ``env``'s services is a stand-in we wrote."""
    return any(f.standin is not None for f in env.service_files)
