"""Writing output files safely: never into a folder that does not exist, never over an existing file unless
asked to replace it, and atomically (readers see the old file or the new one, never a partial write).

Also the serialisation every results writer uses, which survives text a model produced that UTF-8 cannot hold.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from toolemu.core.errors import ConfigError
from toolemu.core.untrusted import scrub_value


def check_output_path(path: Path, *, flag: str = "--out", new: bool = True) -> None:
    """Checks, before any work starts, that ``path`` can be written.

    Args:
        path: The file to write.
        flag: The option that named it, for messages.
        new: Require that ``path`` does not exist yet.

    Raises:
        ConfigError: The folder is missing or not a folder, ``path`` is a folder, a symlink or a special file,
            or (``new``) it exists.
    """
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(
            f"{flag} {path}: folder {parent} does not exist; create it first or choose another path"
        )
    if path.is_symlink():
        # Appending, truncating a cut last line or replacing would act on whatever the link names (a link
        # planted in a shared folder could name any host file).
        raise ConfigError(
            f"{flag} {path}: is a symlink to {os.readlink(path)!r}; output files are never written through a "
            "link, give the file itself"
        )
    if path.is_dir():
        raise ConfigError(f"{flag} {path}: is a folder; give a file name")
    if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        # A FIFO would block the resume's read for ever; a device would be read or written without end.
        raise ConfigError(f"{flag} {path}: is not a regular file (a FIFO, socket or device); give a file name")
    if new and os.path.lexists(path):
        raise ConfigError(
            f"{flag} {path}: already exists and would be overwritten; choose another path or remove it"
        )


def _temp_beside(path: Path, text: str) -> str:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def write_new(path: Path, text: str, *, flag: str = "--out") -> None:
    """Writes a new file atomically; an existing ``path`` is never touched.

    The text is written to a temporary file beside ``path`` and hard-linked into place, which fails if
    ``path`` appeared meanwhile.

    Raises:
        ConfigError: The folder is missing or ``path`` exists.
    """
    check_output_path(path, flag=flag, new=True)
    tmp = _temp_beside(path, text)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise ConfigError(f"{flag} {path}: already exists; nothing was written") from None
    except OSError:
        # File systems without hard links: exclusive create, then the content.
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(text)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_replace(path: Path, text: str) -> None:
    """Writes ``path`` atomically, replacing an existing file (its folder must exist).

    Raises:
        ConfigError: The folder is missing or ``path`` is a folder.
    """
    check_output_path(path, new=False)
    tmp = _temp_beside(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_json(model: BaseModel, *, indent: int | None = None) -> str:
    """Serialises a model to JSON, replacing lone surrogates (unencodable text from a model) with U+FFFD.

    Examples:
        >>> from toolemu.core.types import Message
        >>> dump_json(Message(role="user", content="cut \\ud83d"))
        '{"role":"user","content":"cut \ufffd"}'
    """
    try:
        text = model.model_dump_json(indent=indent)
    except PydanticSerializationError:
        data = scrub_value(model.model_dump(mode="json"))
        separators = (",", ":") if indent is None else (",", ": ")
        return json.dumps(data, ensure_ascii=False, indent=indent, separators=separators)
    return text

