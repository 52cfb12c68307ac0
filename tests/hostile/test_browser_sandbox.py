"""The browser's sandbox against a hostile agent: no host files, no host network, no DevTools, no signals."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator

import pytest

from tests.hostile.support import AGENT_ERROR, CLEAR_ERROR, NOTHING_LEAKED
from tests.toolkits.browser_support import OWNCLOUD, episode
from toolemu.core.errors import SandboxError, ToolCallError
from toolemu.core.types import EnvironmentSpec, SeedFile

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

ERROR_RECORD = "error-record"
_SEED = EnvironmentSpec(files=(SeedFile(path="/workspace/ok.txt", content="fine\n"),))


_URLS = ("file:///etc/passwd", "data:text/html,<h1>x</h1>", "chrome://version",
         "view-source:http://the-agent-company.com:8092/", "devtools://devtools/", "javascript:alert(1)")
_UPLOADS = ("/etc/passwd", "../etc/passwd", "/workspace/../etc/shadow", "link.txt", "missing.txt", "/workspace")


@pytest.mark.hostile(CLEAR_ERROR)
def test_browser_refuses_urls_that_are_not_http() -> None:
    with episode(("owncloud",)) as ep:
        for url in _URLS:
            with pytest.raises(ToolCallError, match="only http"):
                ep.act("BrowserGoto", url=url)
            with pytest.raises(ToolCallError, match="only http"):
                ep.run(f"goto({url!r})")


@pytest.mark.hostile(NOTHING_LEAKED)
def test_browser_policy_blocks_file_pages_even_past_the_tool_check() -> None:
    with episode(("owncloud",)) as ep:
        ep.act("BrowserGoto", url=f"{OWNCLOUD}/")
        driver, session = ep.browser._driver, ep.browser._session
        assert driver is not None and session is not None
        for url in ("file:///etc/passwd", "data:text/html,x"):
            with pytest.raises(Exception, match="ERR_BLOCKED_BY_ADMINISTRATOR"):
                driver.call(lambda _, u=url: session.page.goto(u), timeout_s=30)  # type: ignore[misc]


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[str]]]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"host secret")

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], hits
    server.shutdown()


@pytest.mark.enable_socket
@pytest.mark.hostile(NOTHING_LEAKED)
@pytest.mark.parametrize("services", [("owncloud",), ()], ids=["services-netns", "empty-netns"])
def test_browser_cannot_reach_a_server_on_the_hosts_loopback(host_server: tuple[int, list[str]],
                                                              services: tuple[str, ...]) -> None:
    port, hits = host_server
    with episode(services) as ep:
        with pytest.raises(ToolCallError, match="ERR_CONNECTION_REFUSED"):
            ep.act("BrowserGoto", url=f"http://127.0.0.1:{port}/")
    assert hits == []


@pytest.mark.hostile(NOTHING_LEAKED)
def test_agent_shell_sees_no_devtools_port_and_no_browser_process_and_cannot_kill_it() -> None:
    with episode(("owncloud",)) as ep:
        ep.act("BrowserGoto", url=f"{OWNCLOUD}/")
        jail = ep.browser.jail
        assert jail is not None and jail.uid is not None
        listening = ep.sandbox.run_shell(
            "cat /proc/net/tcp /proc/net/tcp6 | awk '$4 == \"0A\" {print $2}' | sed 's/.*://' | sort -u")
        ports = {int(p, 16) for p in listening.output.split()}
        assert ports <= {8092}, ports  # the service alone: Playwright talks to Chromium over a pipe
        unix = ep.sandbox.run_shell("cat /proc/net/unix").output
        assert "devtools" not in unix.lower()
        procs = ep.sandbox.run_shell("ps -eo user,comm 2>/dev/null || ls /proc").output
        assert "chrom" not in procs
        killed = ep.sandbox.run_shell(f"kill -9 -1; pkill -9 chromium; kill -9 {os.getpid()} 2>&1; echo done")
        assert "done" in killed.output
        assert ep.act("BrowserGoto", url=f"{OWNCLOUD}/")["title"] == "Log in - ownCloud"


@pytest.mark.hostile(AGENT_ERROR)
def test_browser_uploads_only_regular_files_in_workspace() -> None:
    with episode(("owncloud",), environment=_SEED) as ep:
        ep.sandbox.run_shell("ln -s /etc/passwd /workspace/link.txt")
        ep.act("BrowserGoto", url=f"{OWNCLOUD}/")
        bid = ep.bid("textbox", "Username or email")
        for path in _UPLOADS:
            with pytest.raises(ToolCallError, match="upload"):
                ep.act("BrowserUploadFile", bid=bid, file=path)


@pytest.mark.hostile(CLEAR_ERROR)
def test_browser_bad_bid_and_bad_code_are_agent_errors() -> None:
    with episode(("owncloud",)) as ep:
        ep.act("BrowserGoto", url=f"{OWNCLOUD}/")
        with pytest.raises(ToolCallError, match="no element with bid '9999'"):
            ep.act("BrowserClick", bid="9999")
        with pytest.raises(ToolCallError, match="not an element id"):
            ep.act("BrowserClick", bid="a'] , *")
        with pytest.raises(ToolCallError, match="literals"):
            ep.run("click(__import__('os').system('id'))")
        with pytest.raises(ToolCallError, match="not a browser action"):
            ep.run("send_keys('x')")


@pytest.mark.hostile(ERROR_RECORD)
def test_browser_crash_is_an_infra_error() -> None:
    with episode(("owncloud",)) as ep:
        ep.act("BrowserGoto", url=f"{OWNCLOUD}/")
        jail = ep.browser.jail
        assert jail is not None
        if jail.cgroup is None:
            pytest.fail("this host offers no cgroup to end the browser with (toolemu doctor)")
        jail.cgroup.kill_all()
        with pytest.raises(SandboxError):
            ep.act("BrowserGoto", url=f"{OWNCLOUD}/")
