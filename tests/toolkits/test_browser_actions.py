"""The Browser toolkit's pure parts: its spec, BrowserGym action parsing, and the bounded tree text."""

from __future__ import annotations

import re

import pytest

from toolemu.core.errors import ToolCallError
from toolemu.core.toolkit_check import check_toolkit
from toolemu.toolkits.browser import BROWSER_SPEC, parse_actions
from toolemu.toolkits.browser.observation import render_tree
from toolemu.toolkits.browser.spec import TOOL_ACTIONS


def test_browser_spec_is_a_valid_toolkit_with_one_tool_per_action() -> None:
    check_toolkit(BROWSER_SPEC)
    assert BROWSER_SPEC.tool_names() == [*TOOL_ACTIONS, "BrowserRun"]
    fill = next(t for t in BROWSER_SPEC.tools if t.name == "Fill")
    assert [p.name for p in fill.parameters] == ["bid", "value"]  # BrowserGym's argument names


def test_parse_actions_reads_several_calls_with_keywords_and_defaults() -> None:
    actions = parse_actions("goto('http://x.test/')\nclick('12', button='right')\nselect_option('3', ['a', 'b'])"
                            "\nscroll(0, 200.5)\nnoop()")
    assert [(a.name, a.args) for a in actions] == [
        ("goto", {"url": "http://x.test/"}), ("click", {"bid": "12", "button": "right", "modifiers": []}),
        ("select_option", {"bid": "3", "options": ["a", "b"]}), ("scroll", {"delta_x": 0, "delta_y": 200.5}),
        ("noop", {"wait_ms": 1000})]


@pytest.mark.parametrize(("code", "message"), [
    ("click(12)", "`bid` of click(bid, button, modifiers) must be a string, got 12"),
    ("fill('1')", "fill(bid, value) needs `value`"),
    ("fill('1', 'a', 'b')", "fill(bid, value) takes 2 arguments, got 3"),
    ("click('1', colour='red')", "click(bid, button, modifiers) has no argument `colour`"),
    ("import os", "line 1 is not a browser action call"),
    ("page.goto('x')", "line 1 is not a browser action call"),
    ("click(open('/etc/passwd').read())", "must be literals"),
    ("exec('x')", "`exec` is not a browser action"),
    ("click('1'", "does not parse"),
    ("", "holds no action"),
    ("noop()\n" * 21, "at most 20 actions"),
], ids=lambda v: str(v)[:30])
def test_parse_actions_refuses_what_is_not_a_literal_browser_action(code: str, message: str) -> None:
    with pytest.raises(ToolCallError, match=re.escape(message)):
        parse_actions(code)


def test_render_tree_is_bounded_with_a_marker() -> None:
    nodes = [{"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Big"},
              "childIds": [str(i) for i in range(2, 102)]}]
    nodes += [{"nodeId": str(i), "parentId": "1", "role": {"value": "link"}, "name": {"value": f"item {i}"},
               "backendDOMNodeId": i} for i in range(2, 102)]
    tree = render_tree(nodes, {i: str(i) for i in range(2, 102)}, max_nodes=10, max_chars=100_000)
    assert tree.shown == 10 and tree.left_out == 91
    assert tree.text.splitlines()[1] == "\t[2] link 'item 2'"
    assert tree.text.endswith("accessibility tree truncated: 91 more nodes not shown; scroll, or open a narrower page]")
    short = render_tree(nodes, {}, max_nodes=1000, max_chars=200)
    assert len(short.text) < 400 and short.left_out > 0
