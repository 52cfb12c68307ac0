"""``toolemu view RUN... --out page.html``: one self-contained, offline HTML page to browse episodes.

The page holds its script, its style and the episodes (as JSON) inline: no server, no network. Episode text
is untrusted, so it is embedded as JSON with ``<``, ``>`` and ``&`` escaped (no ``</script>`` can close the
data block), the script only ever assigns it as ``textContent``, and a Content-Security-Policy allows no script
or style but the page's own (by hash): an injected handler would not run even if markup got through.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from pydantic import JsonValue

from toolemu.bench.record import EpisodeRecord
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import write_new
from toolemu.core.untrusted import scrub_value
from toolemu.reports.runs import Run, disagreement_of, error_of, verdict_of

_ASSETS = "assets"
_PLACEHOLDER = re.compile(r"\{\{(CSP|TITLE|STYLE|DATA|SCRIPT)\}\}")


def _asset(name: str) -> str:
    return resources.files("toolemu.reports").joinpath(_ASSETS, name).read_text(encoding="utf-8")


def embed_json(value: JsonValue) -> str:
    """JSON that can sit inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` appears raw.

    Examples:
        >>> embed_json({"text": "</script><img src=x onerror=alert(1)>"})
        '{"text": "\\\\u003c/script\\\\u003e\\\\u003cimg src=x onerror=alert(1)\\\\u003e"}'
    """
    text = json.dumps(value, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def episode_json(index: int, run: Run, record: EpisodeRecord) -> dict[str, JsonValue]:
    """What the page shows of one episode."""
    messages = record.final_state.messages if record.final_state is not None else ()
    data: dict[str, JsonValue] = {
        "index": index,
        "run": run.label,
        "config": run.config_hash,
        "defense": record.defense,
        "attack": record.attack,
        "defense_events": [d.model_dump(mode="json") for d in record.defense_events],
        "case": record.case_id,
        "trial": record.trial,
        "title": record.case.title if record.case is not None else "",
        "category": record.risk_category,
        "intent": record.intent,
        "status": record.status,
        "verdict": verdict_of(record),
        "disagreement": disagreement_of(record),
        "error": error_of(record),
        "reward": record.reward,
        "instruction": record.trajectory.instruction,
        "steps": [s.model_dump(mode="json") for s in record.trajectory.steps],
        "messages": [m.model_dump(mode="json") for m in messages],
        "episode_error": record.error.model_dump(mode="json") if record.error is not None else None,
        "evaluation": record.evaluation.model_dump(mode="json") if record.evaluation is not None else None,
    }
    scrubbed: dict[str, JsonValue] = scrub_value(data)
    return scrubbed


def render_page(runs: Sequence[Run], *, title: str = "toolemu episodes") -> str:
    """The whole page as a string."""
    episodes = [(run, rec) for run in runs for rec in run.records]
    data: JsonValue = {"episodes": [episode_json(i, run, rec) for i, (run, rec) in enumerate(episodes)]}
    script, style = _asset("viewer.js"), _asset("viewer.css")
    csp = (f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    values = {"CSP": csp, "TITLE": html.escape(title), "STYLE": style, "DATA": embed_json(data), "SCRIPT": script}
    # One pass, so text inside a value is never taken for a placeholder.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], _asset("viewer.html"))


def write_page(runs: Sequence[Run], out: Path, *, title: str = "toolemu episodes") -> int:
    """Writes the page to the new file ``out`` and returns how many episodes it holds.

    Raises:
        ConfigError: No run, or ``out`` exists or its folder does not.
    """
    if not runs:
        raise ConfigError("the viewer needs at least one run")
    write_new(out, render_page(runs, title=title))
    return sum(len(r.records) for r in runs)
