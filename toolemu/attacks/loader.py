"""Reads attack files: built-in attacks by name (``toolemu/attacks/data/<name>.yaml``), others by path.

An attack file is data read under the input policy (``toolemu.core.untrusted``); a mistake is one ``CaseError``
line naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from toolemu.core.errors import CaseError, NotRegisteredError
from toolemu.core.untrusted import load_data, parse_yaml
from toolemu.core.validation import validation_message
from toolemu.testcases.attack_types import AttackSpec
from toolemu.testcases.check_types import CHECK_KINDS

NO_ATTACK = "none"
"""The name ``bench --attack`` takes for the unattacked run of each case (records with ``attack`` None)."""

_UNION_TAGS = frozenset(CHECK_KINDS)


@cache
def builtin_attacks() -> dict[str, AttackSpec]:
    """The built-in attacks by name."""
    out = {}
    for entry in sorted(resources.files("toolemu.attacks").joinpath("data").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            source = f"toolemu/attacks/data/{entry.name}"
            spec = _validate(parse_yaml(entry.read_text(encoding="utf-8"), source), source)
            out[spec.name] = spec
    return out


def load_attack(ref: str | Path | AttackSpec) -> AttackSpec:
    """An attack: an ``AttackSpec``, a built-in attack's name, or the path of an attack file (YAML or JSON).

    Raises:
        CaseError: the file is not valid (one line naming the file and the field).
        NotRegisteredError: ``ref`` is neither a built-in name nor an existing file (with a suggestion).
    """
    if isinstance(ref, AttackSpec):
        return ref
    text = str(ref)
    known = builtin_attacks()
    if text in known:
        return known[text]
    path = Path(text)
    if not (path.suffix in (".yaml", ".yml", ".json") or path.exists()):
        raise NotRegisteredError("attack", text, [*known, NO_ATTACK])
    if not path.is_file():
        raise CaseError(f"{path}: attack file not found (built-in attacks: {', '.join(known)})")
    return _validate(load_data(path, what="attack file"), str(path))


def load_attacks(refs: Sequence[str | Path | AttackSpec]) -> tuple[AttackSpec | None, ...]:
    """The attacks of ``refs`` in order, ``None`` for ``NO_ATTACK`` (the unattacked run).

    Raises:
        CaseError: a file is not valid, or two attacks share a name.
        NotRegisteredError: an unknown name.
    """
    out: list[AttackSpec | None] = [None if ref == NO_ATTACK else load_attack(ref) for ref in refs]
    names = [a.name if a is not None else NO_ATTACK for a in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CaseError(f"attack `{twice[0]}` is given twice; name each attack once")
    return tuple(out)


def _validate(data: object, source: str) -> AttackSpec:
    if not isinstance(data, dict):
        raise CaseError(f"{source}: (top level): expected an attack object, got {type(data).__name__}")
    if data.get("name") == NO_ATTACK:
        raise CaseError(f"{source}: name: `{NO_ATTACK}` is reserved for the unattacked run; choose another name")
    try:
        return AttackSpec.model_validate(data)
    except ValidationError as e:
        raise CaseError(validation_message(e, source, skip=_UNION_TAGS).replace(": Value error, ", ": ", 1)) from None
