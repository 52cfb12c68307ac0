"""The emulated services by name: each name resolves to its module's ``SPEC`` (a ``ServiceSpec``), imported lazily.

A service whose module is missing, fails to import or exposes no ``SPEC`` is a ``ConfigError`` naming the
module and the reason, raised when a case needs that service (not when another one is used).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from toolemu.core.errors import ConfigError, NotRegisteredError
from toolemu.services.base import PORTS, ServiceSpec

SERVICES: dict[str, str] = {
    "owncloud": "toolemu.services.owncloud",
    "gitlab": "toolemu.services.gitlab",
    "plane": "toolemu.services.plane",
}
"""Service name -> the module that exposes its ``SPEC``."""


def service_spec(name: str) -> ServiceSpec:
    """Returns the ``ServiceSpec`` of service ``name``, importing its module on first use.

    Raises:
        NotRegisteredError: ``name`` is not one of ``SERVICES`` (the message suggests a close one).
        ConfigError: The module is missing or broken, or its ``SPEC`` is not a ``ServiceSpec`` of that name and
            port; the message names the module and the fix.
    """
    module_name = SERVICES.get(name)
    if module_name is None:
        raise NotRegisteredError("service", name, SERVICES)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        third_party = e.name is not None and not e.name.startswith("toolemu")
        extra = " (install the `services` extra: pip install 'toolemu[services]')" if third_party else ""
        raise ConfigError(f"service `{name}` is unavailable: importing {module_name} failed: {e}{extra}") from e
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, ServiceSpec):
        raise ConfigError(
            f"service `{name}`: {module_name} has no SPEC of type ServiceSpec (found {type(spec).__name__})")
    if spec.name != name or spec.port != PORTS[name]:
        raise ConfigError(f"service `{name}`: {module_name}.SPEC says name={spec.name!r} port={spec.port}; expected "
                          f"name={name!r} port={PORTS[name]}")
    return spec


def service_specs(names: Iterable[str]) -> tuple[ServiceSpec, ...]:
    """Returns the specs of ``names`` in order, without duplicates (see ``service_spec`` for the errors)."""
    return tuple(service_spec(n) for n in dict.fromkeys(names))
