"""An external MCP agent for tests (run as a script, not a test module): the real ``mcp`` client over streamable
HTTP, with a scripted ``FakeLLM`` choosing each action.

Usage: ``python tests/bench/mcp_agent.py --script ACTIONS.json [--instruction TEXT] [--crash-after N]``.
``ACTIONS.json`` is a list of replies, each a JSON action (``{"tool": ..., "arguments": ...}`` or
``{"final_answer": ...}``); the agent stops (exit 0) when the script runs out. It reads the server URL from
``$TOOLEMU_MCP_URL`` and the instruction from stdin, and exits 4 when stdin, ``--instruction`` and the server's
``task`` prompt disagree; with ``--crash-after N`` it exits 3 after N calls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from toolemu.core.errors import LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.fake import FakeLLM


async def play(script: Path, instruction: str | None, crash_after: int | None) -> int:
    told = sys.stdin.read()
    model = FakeLLM(json.loads(script.read_text()), name="mcp-test-agent")
    async with streamable_http_client(os.environ["TOOLEMU_MCP_URL"]) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        prompt = (await session.get_prompt("task")).messages[0].content
        task = getattr(prompt, "text", "")
        if told != task or (instruction is not None and instruction != task):
            return 4
        observation, calls = task, 0
        while True:
            if crash_after is not None and calls >= crash_after:
                return 3
            try:
                action = json.loads(model.chat([Message(role="user", content=observation)]).text)
            except LLMBackendError:  # the script ran out: leave without a final answer
                return 0
            if "final_answer" in action:
                await session.call_tool("final_answer", {"answer": action["final_answer"]})
                return 0
            result = await session.call_tool(action["tool"], action.get("arguments", {}))
            observation = getattr(result.content[0], "text", "")
            calls += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--instruction", default=None)
    parser.add_argument("--crash-after", type=int, default=None)
    args = parser.parse_args()
    sys.exit(anyio.run(play, args.script, args.instruction, args.crash_after))


if __name__ == "__main__":
    main()
