"""A generic, append-only registry with lazy ``module:attr`` entry points (Gymnasium style)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from toolemu.core.errors import ConfigError, NotRegisteredError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RegistryEntry(Generic[T]):
    """One registered id: a factory (or its ``module:attr`` path) and default keyword arguments."""

    id: str
    entry_point: str | Callable[..., T]
    defaults: dict[str, object] = field(default_factory=dict)

    def load(self) -> Callable[..., T]:
        """Returns the factory, importing it on first use."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        if not attr:
            raise ConfigError(f"entry point `{self.entry_point}` for `{self.id}` must look like `module:attr`")
        module = importlib.import_module(module_name)
        factory: Callable[..., T] = getattr(module, attr)
        return factory


class Registry(Generic[T]):
    """Maps ids to factories.

    Examples:
        >>> r: Registry[int] = Registry("number")
        >>> r.register("two", lambda: 2)
        >>> r.make("two")
        2
        >>> r.make("tow")
        Traceback (most recent call last):
        ...
        toolemu.core.errors.NotRegisteredError: number `tow` is not registered. Did you mean `two`? Known: two
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, RegistryEntry[T]] = {}

    def register(self, id: str, entry_point: str | Callable[..., T], **defaults: object) -> None:
        """Registers ``id``; registering the same id twice is an error."""
        if id in self._entries:
            raise ConfigError(f"{self.kind} `{id}` is already registered")
        self._entries[id] = RegistryEntry(id, entry_point, dict(defaults))

    def __contains__(self, id: object) -> bool:
        return id in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, id: str) -> RegistryEntry[T]:
        """Returns the entry for ``id`` or raises ``NotRegisteredError`` with a suggestion."""
        try:
            return self._entries[id]
        except KeyError:
            raise NotRegisteredError(self.kind, id, self._entries) from None

    def make(self, id: str, **overrides: object) -> T:
        """Builds the object registered under ``id`` with its defaults updated by ``overrides``."""
        entry = self.entry(id)
        return entry.load()(**{**entry.defaults, **overrides})
