"""The ``Browser`` toolkit's spec: one tool per BrowserGym action (BrowserGym's argument names), plus ``Run``."""

from __future__ import annotations

from toolemu.core.types import ExceptionSpec, ParamSpec, ReturnSpec, ToolkitSpec, ToolSpec

_INVALID = ExceptionSpec(name="InvalidRequestException",
                         description="Bad arguments: an unknown element id, a URL that is not http(s), a bad key.")
_FAILED = ExceptionSpec(name="ActionFailedException",
                        description="The page did not accept the action in time (hidden element, failed load).")
_BID = ParamSpec(name="bid", type="string", required=True,
                 description="The element's id, shown in brackets in the accessibility tree (e.g. '12').")
_RETURNS = (
    ReturnSpec(name="url", type="string", description="The active tab's URL."),
    ReturnSpec(name="title", type="string", description="The active tab's title."),
    ReturnSpec(name="open_pages_urls", type="array", description="URLs of the open tabs, in order."),
    ReturnSpec(name="open_pages_titles", type="array", description="Titles of the open tabs, in order."),
    ReturnSpec(name="active_page_index", type="integer", description="Which tab is active (0-based)."),
    ReturnSpec(name="focused_element_bid", type="string", description="The focused element's id, or null."),
    ReturnSpec(name="last_action", type="string", description="The action(s) just run, as BrowserGym code."),
    ReturnSpec(name="last_action_error", type="string", description="Empty, or what went wrong observing."),
    ReturnSpec(name="axtree_txt", type="string",
               description="The page's accessibility tree, one element a line: [bid] role 'name' value=... "
                           "states. Long trees end with a truncation note."),
    ReturnSpec(name="axtree_truncated", type="boolean", description="Whether the tree was shortened."),
)


def _tool(name: str, summary: str, *params: ParamSpec) -> ToolSpec:
    return ToolSpec(name=name, summary=summary, parameters=params, returns=_RETURNS, exceptions=(_INVALID, _FAILED))


BROWSER_SPEC = ToolkitSpec(
    toolkit="Browser",
    name_for_model="Browser",
    name_for_human="Web browser",
    description_for_model=(
        "A web browser (Chromium) on the user's machine. Each tool acts on the active tab and returns the page "
        "as an accessibility tree whose elements carry ids in brackets ([12] link 'Files'); pass those ids as "
        "`bid`. Only http(s) pages open; files to upload must be in /workspace."
    ),
    description_for_human="Browses web pages: go to a URL, click, fill forms, upload files.",
    tools=(
        _tool("Goto", "Open a URL in the active tab.",
              ParamSpec(name="url", type="string", required=True, description="An http(s) URL.")),
        _tool("Click", "Click an element.", _BID),
        _tool("Fill", "Type a value into a text field (replacing its content).", _BID,
              ParamSpec(name="value", type="string", required=True, description="The text to enter.")),
        _tool("SelectOption", "Choose option(s) of a select element, by value or label.", _BID,
              ParamSpec(name="options", type="array", required=True,
                        description="The option value(s) or label(s) to select.")),
        _tool("UploadFile", "Set the file(s) of a file input from /workspace.", _BID,
              ParamSpec(name="file", type="string", required=True,
                        description="Path of the file, absolute or relative to /workspace.")),
        _tool("Scroll", "Scroll the page by a number of pixels.",
              ParamSpec(name="delta_x", type="number", required=True, description="Pixels to the right."),
              ParamSpec(name="delta_y", type="number", required=True, description="Pixels down.")),
        _tool("GoBack", "Go back to the previous page of the active tab."),
        _tool("Press", "Focus an element and press a key combination.", _BID,
              ParamSpec(name="key_comb", type="string", required=True,
                        description="A key or combination such as 'Enter', 'Control+a', 'ArrowDown'.")),
        _tool("Run", "Run BrowserGym action code, one call a line, e.g. \"fill('15', 'bob')\\nclick('16')\". "
              "Actions: goto, click, dblclick, hover, fill, clear, focus, select_option, upload_file, press, scroll, "
              "go_back, go_forward, noop, new_tab, tab_close, tab_focus.",
              ParamSpec(name="code", type="string", required=True, description="The action code.")),
    ),
)
"""``BrowserGoto(url)``, ``BrowserClick(bid)``, ... ``BrowserRun(code)``, each returning the new observation."""

TOOL_ACTIONS: dict[str, str] = {
    "BrowserGoto": "goto", "BrowserClick": "click", "BrowserFill": "fill", "BrowserSelectOption": "select_option",
    "BrowserUploadFile": "upload_file", "BrowserScroll": "scroll", "BrowserGoBack": "go_back",
    "BrowserPress": "press",
}
"""The BrowserGym action behind each single-action tool."""
