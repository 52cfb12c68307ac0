"""The guard's reading of ``Host`` headers (its refusals are tested against the real servers in
``tests/hostile/test_server_requests.py``)."""

from __future__ import annotations

import pytest

from toolemu.core.http_guard import host_name, is_loopback


@pytest.mark.parametrize(("header", "name", "loopback"), [
    ("localhost:8000", "localhost", True), ("[::1]:80", "::1", True), ("127.0.0.2", "127.0.0.2", True),
    ("LOCALHOST", "localhost", True), ("evil.example:1", "evil.example", False), ("[fe80::1]", "fe80::1", False),
    ("localhost.evil.example", "localhost.evil.example", False),
], ids=lambda v: str(v).replace(":", "."))
def test_host_names_are_parsed_without_port_and_brackets(header: str, name: str, loopback: bool) -> None:
    assert host_name(header) == name and is_loopback(name) is loopback
