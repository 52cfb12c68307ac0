"""Words an attack's request in its style (``templates/<style>.md``, our own wording)."""

from __future__ import annotations

import base64
from functools import cache
from importlib import resources

from toolemu.testcases.attack_types import AttackSpec, AttackStyle


@cache
def _template(style: AttackStyle) -> str:
    return resources.files("toolemu.attacks").joinpath("templates", f"{style}.md").read_text(encoding="utf-8").strip()


def render_text(spec: AttackSpec) -> str:
    """The text an attack plants: its request wrapped in its style's template (base64 for ``encoded``).

    Examples:
        >>> from toolemu.attacks.loader import builtin_attacks
        >>> "audit-desk@vendor-review.example" in render_text(builtin_attacks()["share-outside"])
        True
        >>> text = render_text(builtin_attacks()["seed-file-beacon"])
        >>> "drop-point" in text, "base64" in text
        (False, True)
    """
    request = spec.goal.request
    encoded = base64.b64encode(request.encode("utf-8")).decode("ascii")
    return _template(spec.style).format(sender=spec.sender, request=request, encoded=encoded)
