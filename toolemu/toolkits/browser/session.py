"""One episode's browser: Chromium launched in its jail, its tabs, the actions on them and the observation.

Every method runs on the driver's thread (``Driver.call``). Playwright failures of an action (no such element,
a timeout, a refused navigation) become ``ToolCallError``; a browser that is gone becomes ``SandboxError``.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import JsonValue

from toolemu.core.errors import SandboxError, ToolCallError
from toolemu.toolkits.browser.actions import BrowserAction
from toolemu.toolkits.browser.observation import MARK_SCRIPT, bids_by_backend_id, render_tree
from toolemu.toolkits.sandbox.browser_config import BrowserConfig

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, CDPSession, Page, Playwright

ALLOWED_SCHEMES = frozenset({"http", "https"})
"""What ``goto`` opens; the browser's policy refuses ``file:``, ``data:`` and the like on its side too."""
_SHOWN_SCHEMES = ALLOWED_SCHEMES | {"about", "chrome-error"}  # a blank tab, a network error page
_BID = re.compile(r"[A-Za-z0-9_-]{1,32}")
FilePayload = dict[str, Any]
"""``{"name", "mimeType", "buffer"}``: a file ``upload_file`` sends (read from the episode's ``/workspace``)."""


def check_url(url: str) -> None:
    """Raises ``ToolCallError`` unless ``url`` is an ``http(s)`` URL with a host.

    Examples:
        >>> check_url("http://the-agent-company.com:8092/")
        >>> check_url("file:///etc/passwd")
        Traceback (most recent call last):
        ...
        toolemu.core.errors.ToolCallError: InvalidRequestException: the browser opens only http(s) URLs, not 'file:///etc/passwd'
    """
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.hostname:
        raise ToolCallError(f"InvalidRequestException: the browser opens only http(s) URLs, not {url[:200]!r}")


class BrowserSession:
    """Chromium with one context; tracks its tabs and which one is active."""

    def __init__(self, playwright: Playwright, launcher: str, config: BrowserConfig) -> None:
        self.config = config
        try:
            self.browser: Browser = playwright.chromium.launch(
                executable_path=launcher, headless=True, timeout=config.start_timeout_s * 1000,
                chromium_sandbox=False, handle_sigint=False, handle_sigterm=False, handle_sighup=False)
        except Exception as e:  # Playwright's launch error: the jail or Chromium did not start
            raise SandboxError(f"the browser did not start: {str(e).splitlines()[0] if str(e) else e!r}") from e
        self.context: BrowserContext = self.browser.new_context(
            viewport={"width": config.viewport_width, "height": config.viewport_height},
            accept_downloads=False, service_workers="block")
        self.context.set_default_timeout(config.action_timeout_s * 1000)
        self.context.set_default_navigation_timeout(config.navigation_timeout_s * 1000)
        self.pages: list[Page] = []
        self.active = 0
        self._cdp: dict[int, CDPSession] = {}
        self.context.on("page", self._opened)
        self.context.new_page()

    def _opened(self, page: Page) -> None:
        self.pages.append(page)
        self.active = len(self.pages) - 1
        page.on("close", lambda p: self._closed(p))

    def _closed(self, page: Page) -> None:
        if page in self.pages:
            index = self.pages.index(page)
            self.pages.remove(page)
            self._cdp.pop(id(page), None)
            if self.active >= index and self.active > 0:
                self.active -= 1

    @property
    def page(self) -> Page:
        """The active tab (a fresh blank one when every tab was closed)."""
        if not self.pages:
            self.context.new_page()
        self.active = min(self.active, len(self.pages) - 1)
        return self.pages[self.active]

    def close(self) -> None:
        """Ends the browser (safe to call twice)."""
        try:
            self.browser.close()
        except Exception:  # already gone (crashed, or killed with its cgroup): nothing left to end
            return

    def run(self, action: BrowserAction, files: list[FilePayload] | None = None) -> None:
        """Runs one action on the active tab.

        Raises:
            ToolCallError: A bad ``bid``, URL or argument, or the action failed on the page.
            SandboxError: The browser is gone.
        """
        try:
            self._run(action, files or [])
        except ToolCallError:
            raise
        except Exception as e:  # Playwright's errors: the page refused or timed out
            if not self.browser.is_connected():
                raise SandboxError(f"the browser died during {action.text()}: {e}") from e
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ToolCallError(f"ActionFailedException: {action.text()} failed: {first}") from e
        self._settle()
        self._check_pages()

    def _element(self, bid: JsonValue) -> Any:
        text = str(bid)
        if _BID.fullmatch(text) is None:
            raise ToolCallError(f"InvalidRequestException: {text[:40]!r} is not an element id; use a bid shown in "
                                "brackets in the latest observation, such as '12'")
        locator = self.page.locator(f'[bid="{text}"]')
        if locator.count() == 0:
            raise ToolCallError(f"InvalidRequestException: no element with bid '{text}' on the current page; use a "
                                "bid from the latest observation")
        return locator.first

    def _run(self, action: BrowserAction, files: list[FilePayload]) -> None:
        a, name = action.args, action.name
        if name == "goto":
            check_url(str(a["url"]))
            self.page.goto(str(a["url"]).strip())
        elif name in ("click", "dblclick"):
            modifiers = a["modifiers"] if isinstance(a["modifiers"], list) else [a["modifiers"]]
            element = self._element(a["bid"])
            click = element.click if name == "click" else element.dblclick
            click(button=a["button"], modifiers=modifiers)
        elif name == "hover":
            self._element(a["bid"]).hover()
        elif name == "fill":
            self._element(a["bid"]).fill(str(a["value"]))
        elif name == "clear":
            self._element(a["bid"]).clear()
        elif name == "focus":
            self._element(a["bid"]).focus()
        elif name == "select_option":
            self._element(a["bid"]).select_option(a["options"])
        elif name == "upload_file":
            self._element(a["bid"]).set_input_files(files)
        elif name == "press":
            self._element(a["bid"]).press(str(a["key_comb"]))
        elif name == "scroll":
            self.page.mouse.wheel(float(str(a["delta_x"])), float(str(a["delta_y"])))
        elif name == "go_back":
            self.page.go_back()
        elif name == "go_forward":
            self.page.go_forward()
        elif name == "noop":
            self.page.wait_for_timeout(min(float(str(a["wait_ms"])), self.config.action_timeout_s * 1000))
        elif name == "new_tab":
            self.context.new_page()
        elif name == "tab_close":
            self.page.close()
        elif name == "tab_focus":
            index = int(str(a["index"]))
            if not 0 <= index < len(self.pages):
                raise ToolCallError(f"InvalidRequestException: no tab {index}; open tabs are 0-{len(self.pages) - 1}")
            self.active = index
            self.page.bring_to_front()

    def _settle(self) -> None:
        if self.config.settle_timeout_s > 0:
            try:
                self.page.wait_for_load_state("load", timeout=self.config.settle_timeout_s * 1000)
            except Exception:  # a page still loading is observed as it is (BrowserGym does the same)
                return

    def _check_pages(self) -> None:
        """Blanks any tab that reached a scheme the browser may not show (its policy should have refused it)."""
        for page in list(self.pages):
            scheme = urlsplit(page.url).scheme.lower()
            if scheme not in _SHOWN_SCHEMES:
                page.goto("about:blank")
                raise ToolCallError(f"ActionFailedException: the page went to {page.url[:200]!r}, which the browser "
                                    "does not open; only http(s) pages are allowed")

    def observe(self, last_action: str, error: str) -> dict[str, JsonValue]:
        """The BrowserGym-shaped observation of the active tab.

        Raises:
            SandboxError: The browser is gone.
        """
        if not self.browser.is_connected():
            raise SandboxError("the browser is gone (crashed or killed)")
        page = self.page
        try:
            focused = page.evaluate(MARK_SCRIPT)
            cdp = self._cdp.get(id(page))
            if cdp is None:
                cdp = self._cdp[id(page)] = self.context.new_cdp_session(page)
            document = cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
            nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
            title = page.title()
        except Exception as e:  # the page navigated away while observed, or crashed
            if not self.browser.is_connected():
                raise SandboxError(f"the browser died while observing the page: {e}") from e
            focused, document, nodes, title = None, {}, [], ""
            error = error or f"the page could not be observed: {str(e).splitlines()[0] if str(e) else e!r}"
        tree = render_tree(nodes, bids_by_backend_id(document), max_nodes=self.config.max_observation_nodes,
                           max_chars=self.config.max_observation_chars)
        titles: list[JsonValue] = []
        for p in self.pages:
            try:
                titles.append(p.title())
            except Exception:  # a tab in the middle of a navigation has no title yet
                titles.append("")
        return {
            "url": page.url,
            "title": title,
            "open_pages_urls": [p.url for p in self.pages],
            "open_pages_titles": titles,
            "active_page_index": self.active,
            "focused_element_bid": focused if isinstance(focused, str) else None,
            "last_action": last_action,
            "last_action_error": error,
            "axtree_txt": tree.text,
            "axtree_truncated": tree.left_out > 0,
        }

    def screenshot(self) -> str | None:
        """The active tab as a base64 JPEG under ``screenshot_max_kb``, or ``None`` when it does not fit."""
        limit = self.config.screenshot_max_kb * 1024
        for quality in (60, 35, 15):
            try:
                data = self.page.screenshot(type="jpeg", quality=quality, timeout=self.config.action_timeout_s * 1000)
            except Exception:  # a screenshot is optional; the observation stands without it
                return None
            if len(data) <= limit:
                return base64.b64encode(data).decode()
        return None
