"""Hostile requests against our servers (``toolemu serve``, ``toolemu mcp --http``): a web page in the user's
browser (a foreign ``Origin``, a DNS-rebound ``Host``), bodies past the bound, JSON nested past the parser. Each is
refused with a reason, and the server and its other sessions go on."""

from __future__ import annotations

import base64
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.fakes.models import world_model
from tests.hostile.support import CLEAR_ERROR
from tests.prerequisites import needs
from toolemu.core.http_guard import DEFAULT_MAX_BODY_BYTES
from toolemu.envs import EnvConfig

pytestmark = [pytest.mark.enable_socket, needs(modules=["openenv", "mcp"])]

BOUNDED = "bounded"
REFUSED = "refused"
"""Refused with a status and a reason; nothing of the request reached an env."""
CASE = "smartlock-let-cleaner-in"


@pytest.fixture
def server() -> Iterator[str]:
    from toolemu.serving import PoolLimits, served_cases, start_in_thread
    from toolemu.testcases import load_case

    world = world_model()
    config = EnvConfig(emulator_model=world, judge_model=world, evaluate="rules")
    running = start_in_thread(served_cases([load_case(CASE)], config, suite=False), PoolLimits(max_sessions=8),
                              allowed_origins=("http://trainer.example:8080",))
    yield running.url
    running.stop()
    assert running.pool.live == 0


def _ws(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def _handshake_status(url: str, host: str) -> int:
    """The status a WebSocket handshake to ``url``'s ``/ws`` addressed to ``host`` gets (a browser after DNS
    rebinding sends the page's name as Host; client libraries put the URL's there, so this one is written out)."""
    address = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((address[0], int(address[1])), timeout=10) as sock:
        sock.sendall(f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
                     f"Sec-WebSocket-Version: 13\r\n\r\n".encode())
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(status_line.split()[1])


@pytest.mark.hostile(REFUSED)
@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "10.0.0.5"])
def test_serve_refuses_a_rebound_host(server: str, host: str) -> None:
    answer = httpx.post(server + "/reset", json={}, headers={"Host": host})
    assert answer.status_code == 403
    assert "answers only requests addressed to 127.0.0.1, localhost or [::1]" in answer.json()["detail"]
    assert _handshake_status(server, host) == 403
    assert httpx.get(server + "/sessions").json()["opened"] == 0


@pytest.mark.hostile(REFUSED)
def test_serve_refuses_a_web_page_origin_but_lets_an_allowed_one_through(server: str) -> None:
    answer = httpx.post(server + "/reset", json={}, headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403 and "--allow-origin" in answer.json()["detail"]
    for origin in ("http://evil.example", "null", "http://localhost:3000"):
        with pytest.raises(InvalidStatus) as refused:
            connect(_ws(server), additional_headers={"Origin": origin})
        assert refused.value.response.status_code == 403
    assert httpx.get(server + "/sessions").json()["opened"] == 0
    allowed = httpx.post(server + "/reset", json={}, headers={"Origin": "http://trainer.example:8080"})
    assert allowed.status_code == 200
    assert httpx.get(server + "/health", headers={"Host": "localhost:1"}).status_code == 200
    httpx.delete(f"{server}/sessions/{allowed.json()['observation']['session_id']}")


@pytest.mark.hostile(BOUNDED)
def test_serve_refuses_a_body_past_the_bound_declared_or_streamed(server: str) -> None:
    big = b'{"seed": 0, "episode_id": "' + b"x" * DEFAULT_MAX_BODY_BYTES + b'"}'
    declared = httpx.post(server + "/reset", content=big)
    assert declared.status_code == 413 and f"at most {DEFAULT_MAX_BODY_BYTES} bytes" in declared.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(9):
            yield b" " * (1 << 20)

    streamed = httpx.post(server + "/reset", content=chunks())
    assert streamed.status_code == 413
    with connect(_ws(server)) as ws, pytest.raises(ConnectionClosed) as closed:
        ws.send(" " * (DEFAULT_MAX_BODY_BYTES + 1))
        ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert httpx.post(server + "/reset", json={"seed": 1}).status_code == 200  # the server goes on


@pytest.mark.hostile(CLEAR_ERROR)
def test_serve_answers_json_nested_past_the_parser_with_a_reason(server: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    answer = httpx.post(server + "/reset", content=deep)
    assert answer.status_code == 400 and "nested too deeply" in answer.json()["detail"]
    session = httpx.post(server + "/reset", json={}).json()["observation"]["session_id"]
    for depth in (900, 5_000):
        body = json.dumps({"session_id": session, "action": {"tool": "SmartLockSearchGuests",
                                                              "arguments": {"keyword": []}}})
        body = body.replace("[]", "[" * depth + "]" * depth)
        step = httpx.post(server + "/step", content=body)
        assert step.status_code == 400, step.text[:200]
    assert httpx.post(server + "/step", json={"session_id": session, "action": {"final_answer": "x"}}).json()["done"]
    with connect(_ws(server)) as ws:
        ws.send(deep)
        error = json.loads(ws.recv())
        assert error["type"] == "error" and "nested too deeply" in error["data"]["message"]
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv())["type"] == "observation"  # the same session goes on


@pytest.mark.hostile(REFUSED)
def test_mcp_http_refuses_web_pages_and_rebound_hosts(tmp_path: Path) -> None:
    from tests.bench.mcp_clients import chat_server, drive_http, served_run
    from toolemu.bench.mcp.serve import http_server
    from toolemu.testcases import load_case

    with chat_server() as chat:
        run = served_run(chat)
        with http_server(load_case("bank-pay-phishing-invoice"), run, out=tmp_path / "mcp.jsonl", port=0,
                         max_sessions=2, idle_timeout_s=60).start() as mcp:
            hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "page", "version": "1"}}}
            accept = {"Accept": "application/json, text/event-stream"}
            for origin in ("http://evil.example", "http://localhost:5173"):
                page = httpx.post(mcp.url, json=hello, headers={**accept, "Origin": origin})
                assert page.status_code == 403 and "Origin" in page.json()["detail"]
            rebound = httpx.post(mcp.url, json=hello, headers={**accept, "Host": "evil.example"})
            assert rebound.status_code in (403, 421)
            replies = drive_http(mcp.url, [("final_answer", {"answer": "Nothing to pay."})])
    assert [error for _, error in replies] == [False]
    assert len((tmp_path / "mcp.jsonl").read_text().splitlines()) == 1  # the refused ones played no episode
