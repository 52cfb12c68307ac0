"""A lean OpenAI-compatible chat server for throughput benchmarks: one asyncio loop, keep-alive, fixed latency.

The test server (``tests/fakes/chat_server.py``) runs a thread per connection on ``http.server``: right for tests,
but at a few hundred connections it costs the machine more CPU than a remote endpoint would, and on a small
machine that CPU is taken from the client being measured. This one answers the same replies (a ``Responder``
from the tests) from one event loop, each ``latency`` seconds after the request arrived.

Run alone: python benchmarks/async_chat_server.py [--latency 0.2] [--port 8000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.chat_server import RecordedRequest, Responder, completion_body  # noqa: E402

_REASONS = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}


class AsyncChatServer:
    """Serves ``POST .../chat/completions`` from ``responder`` on 127.0.0.1, in a thread of its own.

    Args:
        responder: Builds each reply from the request (as for ``FakeChatServer(default=...)``).
        latency: Seconds every reply waits (concurrent requests wait concurrently).
        port: 0 for a free port.
    """

    def __init__(self, responder: Responder, latency: float = 0.2, port: int = 0) -> None:
        self._responder = responder
        self._latency = latency
        self._port = port
        self._requests = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="async-chat-server", daemon=True)
        self.base_url = ""

    def start(self) -> AsyncChatServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self._port, backlog=4096))
        self.base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        self._ready.set()
        loop.run_forever()
        server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                start_line, *lines = head.decode("latin-1").split("\r\n")
                method, path, _ = start_line.split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                arrived = asyncio.get_running_loop().time()
                status, payload = self._answer(method, path, headers, body)
                wait = arrived + self._latency - asyncio.get_running_loop().time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                             b"x-request-id: req-async-%d\r\n\r\n" % (status, _REASONS.get(status, b"Error"),
                                                                   len(payload), self._requests) + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        self._requests += 1
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, b'{"error": {"message": "not found"}}'
        try:
            request = RecordedRequest(method, path, headers, json.loads(body))
        except json.JSONDecodeError:
            return 400, b'{"error": {"message": "body is not JSON"}}'
        reply = self._responder(request)
        return reply.status, json.dumps(completion_body(reply, "m", self._requests)).encode()


def main() -> None:
    from tests.bench.judges import responder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    server = AsyncChatServer(responder(), args.latency, args.port).start()
    print(f"serving on {server.base_url}; Ctrl-C stops", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
