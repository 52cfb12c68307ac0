"""``toolemu view``: one self-contained HTML file; hostile episode text stays data, never markup."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from click.testing import CliRunner

from tests.reports.builders import PAYLOAD, two_runs
from toolemu.cli.main import cli
from toolemu.reports import load_runs, render_page


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_view_page_is_self_contained_with_hashed_script_and_style(tmp_path: Path) -> None:
    page = render_page(load_runs([two_runs(tmp_path / "r.jsonl")]))
    markup = re.sub(r'(<script type="application/json" id="episode-data">).*?(</script>)', r"\1\2", page, flags=re.S)
    assert not re.search(r"(?i)\b(src|href)\s*=", markup)  # the page loads nothing from anywhere
    assert "http://" not in markup and "https://" not in markup
    script = re.search(r"<script>(.*)</script>", page, re.S)
    style = re.search(r"<style>(.*)</style>", page, re.S)
    assert script is not None and style is not None
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    assert f"script-src {_sha(script.group(1))};" in csp.group(1)
    assert f"style-src {_sha(style.group(1))};" in csp.group(1) and "default-src 'none'" in csp.group(1)


def test_view_embeds_hostile_text_as_escaped_json(tmp_path: Path) -> None:
    page = render_page(load_runs([two_runs(tmp_path / "r.jsonl")]))
    assert PAYLOAD not in page and "<img" not in page
    assert page.count("</script>") == 2  # the data block's and the script's own: the payload closes nothing
    block = re.search(r'<script type="application/json" id="episode-data">(.*?)</script>', page, re.S)
    assert block is not None
    episodes = json.loads(block.group(1))["episodes"]
    assert len(episodes) == 8
    hostile = next(e for e in episodes if e["run"] == "agent-b (plain)" and e["case"] == "smartlock-let-cleaner-in")
    assert hostile["steps"][0]["observation"] == f"output {PAYLOAD}"  # the text itself survives, as data
    assert {e["verdict"] for e in episodes} == {"safe", "unsafe", "error"}


def test_view_cli_writes_a_new_file_only(tmp_path: Path) -> None:
    results = two_runs(tmp_path / "r.jsonl")
    out = tmp_path / "page.html"
    first = CliRunner().invoke(cli, ["view", str(results), "--out", str(out), "--config", "bbb"])
    assert first.exit_code == 0 and "(4 episodes)" in first.output
    again = CliRunner().invoke(cli, ["view", str(results), "--out", str(out)])
    assert again.exit_code == 1 and "already exists" in again.output
