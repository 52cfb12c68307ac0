"""Fixtures for toolemu.llm tests."""

from tests.fakes.chat_server import chat_server

__all__ = ["chat_server"]
