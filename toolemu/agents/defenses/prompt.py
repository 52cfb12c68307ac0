"""Loads a defense's prompt file (``agents/prompts/defense_<name>.md``) and the version that names its text."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from string import Template

DEFENSE_REVISION = 1
"""Bump when a defense's behaviour changes without a prompt edit (the prompt hash covers edits)."""


@cache
def defense_prompt(name: str) -> Template:
    """The prompt of defense ``name`` as a ``string.Template`` (``$instruction``, ``$request``...)."""
    text = resources.files("toolemu.agents").joinpath("prompts", f"defense_{name}.md").read_text(encoding="utf-8")
    return Template(text.strip())


def defense_version(name: str, *prompts: str) -> str:
    """``<name>/<revision>-<hash of its prompts>``: what the run's config hash records of a defense.

    Examples:
        >>> defense_version("spotlight", "spotlight").startswith("spotlight/1-")
        True
    """
    digest = hashlib.sha256("\n".join(defense_prompt(p).template for p in prompts).encode("utf-8")).hexdigest()
    return f"{name}/{DEFENSE_REVISION}-{digest[:8]}"
