"""BrowserGym-shaped observations: element ids (``bid``) marked in the page, and the accessibility tree as text.

Each element of the page (and of its open shadow roots) gets a ``bid`` attribute, kept for as long as the
element lives; the tree comes from Chromium's accessibility tree (CDP ``Accessibility.getFullAXTree``), joined to
the marks through the DOM's backend node ids, and is printed as BrowserGym's ``axtree_txt`` is: one node a line,
tab-indented, ``[bid] role 'name'`` with its value and states, bounded in lines and characters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BID_ATTRIBUTE = "bid"
"""The attribute holding an element's id, as BrowserGym names it."""

MARK_SCRIPT = """() => {
  const state = window.__toolemuBids || (window.__toolemuBids = {next: 0, ids: new WeakMap()});
  const visit = (root) => {
    for (const el of root.querySelectorAll("*")) {
      let bid = state.ids.get(el);
      if (bid === undefined) { bid = String(state.next++); state.ids.set(el, bid); }
      if (el.getAttribute("bid") !== bid) el.setAttribute("bid", bid);
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  let focused = document.activeElement;
  while (focused && focused.shadowRoot && focused.shadowRoot.activeElement) focused = focused.shadowRoot.activeElement;
  return focused && focused !== document.body ? focused.getAttribute("bid") : null;
}"""
"""Marks every element with its ``bid`` and returns the focused element's ``bid`` (or ``null``)."""

_SKIPPED_ROLES = frozenset({"InlineTextBox", "LineBreak", "ListMarker"})
_UNNAMED_SKIPPED = frozenset({"generic", "none", "presentation", "paragraph", "group", "Section"})
_VALUE_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton", "slider", "ListBox", "listbox"})
_STATES = ("checked", "selected", "expanded", "pressed", "disabled", "required", "readonly", "focused",
           "multiselectable", "invalid")
_MAX_NAME_CHARS = 300


@dataclass(frozen=True, slots=True)
class TreeText:
    """The accessibility tree as text."""

    text: str
    """``axtree_txt``: one node a line."""
    shown: int
    """Lines shown."""
    left_out: int
    """Lines left out by the bounds (0 when the whole tree is shown)."""


def bids_by_backend_id(document: Mapping[str, Any]) -> dict[int, str]:
    """Maps each DOM node's backend id to its ``bid`` from a CDP ``DOM.getDocument(depth=-1, pierce=true)``."""
    found: dict[int, str] = {}
    stack = [document.get("root", document)]
    while stack:
        node = stack.pop()
        attributes = node.get("attributes") or []
        for key, value in zip(attributes[::2], attributes[1::2], strict=False):
            if key == BID_ATTRIBUTE:
                found[int(node["backendNodeId"])] = str(value)
        stack.extend(node.get("children") or [])
        stack.extend(node.get("shadowRoots") or [])
        if node.get("contentDocument"):
            stack.append(node["contentDocument"])
    return found


def _value(field: Mapping[str, Any] | None) -> Any:
    return None if not field else field.get("value")


def _line(node: Mapping[str, Any], role: str, name: str, bid: str | None) -> str:
    text = f"[{bid}] {role}" if bid is not None else role
    text += f" {name[:_MAX_NAME_CHARS]!r}"
    if role in _VALUE_ROLES:
        value = _value(node.get("value"))
        text += f" value={str(value if value is not None else '')[:_MAX_NAME_CHARS]!r}"
    states = []
    for prop in node.get("properties") or []:
        key, value = prop.get("name"), _value(prop.get("value"))
        if key in _STATES and value not in (None, False, "false"):
            states.append(key if value in (True, "true") else f"{key}={value!r}")
        elif key == "level" and value is not None:
            states.append(f"level={value}")
        elif key == "url" and value and role == "link":
            states.append(f"url={str(value)[:_MAX_NAME_CHARS]!r}")
    return text + ("".join(f", {s}" for s in states))


def _lines(nodes: Sequence[Mapping[str, Any]], bids: Mapping[int, str]) -> Iterator[str]:
    by_id = {str(n["nodeId"]): n for n in nodes}
    roots = [n for n in nodes if not n.get("parentId")] or list(nodes[:1])
    stack: list[tuple[Mapping[str, Any], int, str]] = [(r, 0, "") for r in reversed(roots)]
    while stack:
        node, depth, parent_name = stack.pop()
        role = str(_value(node.get("role")) or "")
        name = " ".join(str(_value(node.get("name")) or "").split())
        shown = not node.get("ignored") and role not in _SKIPPED_ROLES
        if shown and role in _UNNAMED_SKIPPED and not name:
            shown = False
        if shown and role == "StaticText" and (not name or name == parent_name):
            shown = False
        if shown:
            backend = node.get("backendDOMNodeId")
            yield "\t" * depth + _line(node, role, name, bids.get(int(backend)) if backend is not None else None)
        children = [by_id[str(c)] for c in node.get("childIds") or [] if str(c) in by_id]
        next_depth, next_parent = (depth + 1, name) if shown else (depth, parent_name)
        stack.extend((c, next_depth, next_parent) for c in reversed(children))


def render_tree(nodes: Sequence[Mapping[str, Any]], bids: Mapping[int, str], *, max_nodes: int,
                max_chars: int) -> TreeText:
    """Prints a CDP accessibility tree as ``axtree_txt``, at most ``max_nodes`` lines and ``max_chars``.

    Examples:
        >>> nodes = [{"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Log in"},
        ...           "childIds": ["2"]},
        ...          {"nodeId": "2", "parentId": "1", "role": {"value": "textbox"}, "name": {"value": "Username"},
        ...           "value": {"value": ""}, "backendDOMNodeId": 7}]
        >>> render_tree(nodes, {7: "15"}, max_nodes=10, max_chars=1000).text.splitlines()
        ["RootWebArea 'Log in'", "\\t[15] textbox 'Username' value=''"]
    """
    kept: list[str] = []
    size, left_out = 0, 0
    for line in _lines(nodes, bids):
        if left_out or len(kept) >= max_nodes or size + len(line) + 1 > max_chars:
            left_out += 1
            continue
        kept.append(line)
        size += len(line) + 1
    text = "\n".join(kept)
    if left_out:
        text += (f"\n[toolemu: accessibility tree truncated: {left_out} more nodes not shown; scroll, or open a "
                 "narrower page]")
    return TreeText(text=text, shown=len(kept), left_out=left_out)
