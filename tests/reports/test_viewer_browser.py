"""The viewer page in headless Chromium (Debian ``chromium`` and ``chromium-driver``; ``make setup`` installs them):
it loads without console errors, a filter changes the list, an episode opens, hostile text stays text."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.reports.builders import PAYLOAD, two_runs
from toolemu.reports import load_runs, write_page

pytestmark = [pytest.mark.browser, pytest.mark.enable_socket]  # chromedriver listens on loopback TCP


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        pytest.fail("headless Chromium is missing: run make setup, or apt-get install -y chromium chromium-driver",
                    pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _rows(driver: Any) -> list[Any]:
    return list(driver.find_elements("css selector", "tr.episode-row"))


def _errors(driver: Any) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]


def test_viewer_in_chromium_filters_opens_and_keeps_hostile_text_inert(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    page = tmp_path / "page.html"
    write_page(load_runs([two_runs(tmp_path / "r.jsonl")]), page, title="viewer test")
    browser.get(page.as_uri())
    assert browser.title == "viewer test"
    assert len(_rows(browser)) == 8
    assert browser.find_element("id", "count").text == "8 of 8 episodes"

    Select(browser.find_element("id", "filter-verdict")).select_by_value("unsafe")
    assert len(_rows(browser)) == 3  # B's two, and A's episode whose rule check overrode the judge
    Select(browser.find_element("id", "filter-verdict")).select_by_value("")
    Select(browser.find_element("id", "filter-disagreement")).select_by_value("judge_safe_rules_unsafe")
    assert [r.find_elements("tag name", "td")[1].text for r in _rows(browser)] == ["drive-free-up-space"]
    Select(browser.find_element("id", "filter-disagreement")).select_by_value("")
    Select(browser.find_element("id", "filter-run")).select_by_visible_text("agent-b (plain)")
    Select(browser.find_element("id", "filter-error")).select_by_value("judge")
    assert browser.find_element("id", "count").text == "1 of 8 episodes"
    Select(browser.find_element("id", "filter-error")).select_by_value("")

    hostile = next(r for r in _rows(browser) if "smartlock-let-cleaner-in" in r.text)
    hostile.click()
    detail = browser.find_element("id", "detail")
    assert detail.get_attribute("data-open") == hostile.get_attribute("data-index")
    text = detail.text
    for shown in ("Steps (2)", "thinking: ", "TerminalExecute", "output " + PAYLOAD, "Safety judge (oas)",
                  "judge says", "Helpfulness judge", "Rule checks: safe", "no-danger", "Reward breakdown",
                  "emulator notes"):
        assert shown in text, shown
    # The payload is shown as text: no element was made from it, its handler never ran.
    assert browser.find_elements("tag name", "img") == []
    assert browser.execute_script("return window.__pwned === undefined && document.title") == "viewer test"
    assert _errors(browser) == []
    shot = tmp_path / "viewer.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_viewer_filters_by_defense_and_shows_its_events_as_text(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    from tests.reports.builders import record, write_results
    from toolemu.agents.defenses import DefenseEvent

    event = DefenseEvent(defense="tool_filter", kind="blocked_call", turn=1, tool="BankTransfer", detail=PAYLOAD)
    records = [record("smartlock-let-cleaner-in", "aaa"),
               record("smartlock-let-cleaner-in", "ccc").model_copy(
                   update={"defense": "tool_filter", "defense_events": (event,)})]
    page = tmp_path / "page.html"
    write_page(load_runs([write_results(tmp_path / "r.jsonl", records)]), page, title="viewer test")
    browser.get(page.as_uri())
    Select(browser.find_element("id", "filter-defense")).select_by_value("tool_filter")
    assert len(_rows(browser)) == 1
    Select(browser.find_element("id", "filter-defense")).select_by_value("none")
    assert len(_rows(browser)) == 1
    Select(browser.find_element("id", "filter-defense")).select_by_value("tool_filter")
    _rows(browser)[0].click()
    text = browser.find_element("id", "detail").text
    assert "Defense events" in text and "before step 1: blocked_call BankTransfer" in text and PAYLOAD in text
    assert browser.find_elements("tag name", "img") == []
    assert browser.execute_script("return window.__pwned === undefined") is True
    assert _errors(browser) == []


def test_viewer_filters_by_attack_and_names_it(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    from tests.reports.builders import attacked, record, write_results

    records = [record("smartlock-let-cleaner-in", "aaa"),
               attacked(record("smartlock-let-cleaner-in", "aaa"), "inbox-forward", reached=True),
               attacked(record("drive-free-up-space", "aaa"), "share-outside", reached=False)]
    page = tmp_path / "page.html"
    write_page(load_runs([write_results(tmp_path / "r.jsonl", records)]), page, title="viewer test")
    browser.get(page.as_uri())
    assert len(_rows(browser)) == 3
    Select(browser.find_element("id", "filter-attack")).select_by_value("none")
    assert [r.find_elements("tag name", "td")[1].text for r in _rows(browser)] == ["smartlock-let-cleaner-in"]
    Select(browser.find_element("id", "filter-attack")).select_by_value("inbox-forward")
    (row,) = _rows(browser)
    assert row.find_elements("tag name", "td")[1].text == "smartlock-let-cleaner-in [attack inbox-forward]"
    row.click()
    text = browser.find_element("id", "detail").text
    assert "attack inbox-forward" in text and "goal of attack inbox-forward reached" in text
    Select(browser.find_element("id", "filter-defense")).select_by_value("none")
    assert browser.find_element("id", "count").text == "1 of 3 episodes"
    assert _errors(browser) == []
