"""One file operation run inside the sandbox: a JSON request on stdin, a JSON answer on stdout.

Kept compatible with older Python 3 releases, since it runs on the sandbox's system interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys


def _read(path: str, limit: int) -> dict[str, object]:
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    text = data[:limit].decode("utf-8", "replace")
    return {"content": text, "truncated": len(data) > limit, "size": os.path.getsize(path)}


def _write(path: str, content: str, append: bool) -> dict[str, object]:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        f.write(content)
    return {"success": True, "size": os.path.getsize(path)}


def _list(path: str, limit: int) -> dict[str, object]:
    entries: list[dict[str, object]] = []
    for name in sorted(os.listdir(path))[:limit]:
        st = os.lstat(os.path.join(path, name))
        kind = "dir" if stat.S_ISDIR(st.st_mode) else "symlink" if stat.S_ISLNK(st.st_mode) else "file"
        entries.append({"name": name, "type": kind, "size": st.st_size})
    return {"entries": entries}


def _delete(path: str, recursive: bool) -> dict[str, object]:
    if os.path.isdir(path) and not os.path.islink(path):
        if not recursive:
            os.rmdir(path)
        else:
            shutil.rmtree(path)
    else:
        os.unlink(path)
    return {"success": True}


def _main() -> None:
    request = json.loads(sys.stdin.read())
    op, path = request["op"], request["path"]
    try:
        if op == "read":
            result = _read(path, request["limit"])
        elif op == "write":
            result = _write(path, request["content"], request.get("append", False))
        elif op == "list":
            result = _list(path, request["limit"])
        elif op == "delete":
            result = _delete(path, request.get("recursive", False))
        else:
            raise ValueError("unknown operation " + repr(op))
        answer: dict[str, object] = {"ok": True, "result": result}
    except (OSError, ValueError) as error:
        answer = {"ok": False, "error": type(error).__name__ + ": " + str(error)}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    _main()
