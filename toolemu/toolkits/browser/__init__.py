"""The ``Browser`` toolkit: BrowserGym's actions and observations on a real, sandboxed Chromium."""

from toolemu.toolkits.browser.actions import SIGNATURES, BrowserAction, parse_actions
from toolemu.toolkits.browser.jail import BLOCKED_URLS, BrowserJail, make_jail
from toolemu.toolkits.browser.spec import BROWSER_SPEC
from toolemu.toolkits.browser.toolkit import BrowserToolkit

__all__ = [
    "BLOCKED_URLS",
    "BROWSER_SPEC",
    "SIGNATURES",
    "BrowserAction",
    "BrowserJail",
    "BrowserToolkit",
    "make_jail",
    "parse_actions",
]
