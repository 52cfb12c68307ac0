"""OAS ``scenarios.json``: the task's NPCs (profiles, goals, the shared setting) as ``NpcSpec``s."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from toolemu.core.errors import CaseError
from toolemu.core.limits import MAX_NPCS
from toolemu.core.people import NPC_NAME_MAX_CHARS, NPC_NAME_PATTERN
from toolemu.core.untrusted import parse_json, read_text_beneath
from toolemu.testcases.schema import NpcSpec


def detail(error: CaseError, path: Path) -> str:
    """The problem of a policy error about ``path``, without the path (``line 3: duplicate key 'a' ...``)."""
    text = str(error).removeprefix(str(path))
    line = re.match(r"^:(\d+): ", text)
    return f"line {line.group(1)}: {text[line.end():]}" if line else text.removeprefix(": ")


def read_npcs(task: Path) -> tuple[NpcSpec, ...]:
    """Builds NPCs from ``scenarios.json`` (empty when the file is absent).

    Each ``agent_profiles``/``scenarios`` key becomes one NPC named by the key; the profile fields and the
    shared ``environment`` text form ``profile``. ``agent_models`` is ignored (NPC models are set per run).

    Raises:
        CaseError: The file is not JSON or its sections are not objects.
    """
    path = task / "scenarios.json"
    if not path.is_file():
        return ()
    try:
        data = parse_json(read_text_beneath(task, "scenarios.json", what="scenarios file"), str(path))
    except CaseError as e:
        raise CaseError(f"{path}: not valid JSON: {detail(e, path)}") from None
    if not isinstance(data, dict):
        raise CaseError(f"{path}: expected a JSON object with agent_profiles and scenarios")
    profiles, scenarios = data.get("agent_profiles", {}), data.get("scenarios", {})
    for name, section in (("agent_profiles", profiles), ("scenarios", scenarios)):
        if not isinstance(section, dict) or not all(isinstance(v, dict) for v in section.values()):
            raise CaseError(f"{path}: `{name}` must map each person's name to an object")
    setting = str(data.get("environment") or "").strip()
    names = list(dict.fromkeys([*profiles, *scenarios]))
    if len(names) > MAX_NPCS:
        raise CaseError(f"{path}: agent_profiles/scenarios: {len(names):,} people; a task may declare at most "
                        f"{MAX_NPCS} NPCs")
    npcs = []
    for name in names:
        section = "agent_profiles" if name in profiles else "scenarios"
        _check_npc_name(name, path, section)
        prof, scen = profiles.get(name, {}), scenarios.get(name, {})
        try:
            npcs.append(
                NpcSpec(
                    name=name,
                    profile=_profile_text(name, prof, setting),
                    goal=str(scen.get("goal") or ""),
                    extra_info=str(scen.get("extra_info") or ""),
                    strategy_hint=str(scen.get("strategy_hint") or ""),
                )
            )
        except ValidationError as e:
            first = e.errors()[0]
            raise CaseError(f"{path}: {section}.{name!r}: {first['loc'][0] if first['loc'] else 'npc'}: "
                            f"{first['msg']}") from None
    return tuple(npcs)


def _check_npc_name(name: str, path: Path, section: str) -> None:
    """An NPC name as ``NpcSpec`` takes it, refused with a one-line ``CaseError`` naming file and field."""
    shown = repr(name) if len(name) <= 40 else repr(name[:40]) + "..."
    if not name.strip():
        problem = "is empty"
    elif len(name) > NPC_NAME_MAX_CHARS:
        problem = f"is {len(name):,} characters; at most {NPC_NAME_MAX_CHARS}"
    elif not re.match(NPC_NAME_PATTERN, name):
        problem = "holds a comma, a colon or a control character, or starts with a space"
    else:
        return
    raise CaseError(f"{path}: {section}: NPC name {shown} {problem}; rename the person (e.g. `Ethan`)")


def _profile_text(key: str, prof: dict[str, object], setting: str) -> str:
    full = " ".join(str(prof.get(k) or "").strip() for k in ("first_name", "last_name")).strip() or key
    parts = [full]
    if prof.get("age"):
        parts.append(f"age {prof['age']}")
    if prof.get("occupation"):
        parts.append(str(prof["occupation"]).strip())
    text = ", ".join(parts)
    if prof.get("gender_pronoun"):
        text += f" ({str(prof['gender_pronoun']).strip()})"
    if prof.get("public_info"):
        text += f". {str(prof['public_info']).strip()}"
    if setting:
        text += f"\nSetting: {setting}"
    return text
