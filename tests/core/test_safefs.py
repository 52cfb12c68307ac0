"""safefs: host-side walks, copies, writes and removals never follow a link and refuse special files."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from toolemu.core import safefs
from toolemu.core.errors import CaseError

CANARY = "outside-canary"


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text(CANARY)
    return host / "secret.txt"


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "case"
    (root / "sub").mkdir(parents=True)
    (root / "check.py").write_text("x = 1\n")
    (root / "sub" / "data.txt").write_text("data\n")
    return root


def _one_line(info: pytest.ExceptionInfo[CaseError], *fragments: str) -> None:
    message = str(info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message


def _nest(root: Path, depth: int) -> None:
    """Creates ``root/d/d/...`` ``depth`` folders deep (relative to fds: the path is too long for one call)."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


def test_walk_folder_counts_a_plain_folder(folder: Path) -> None:
    report = safefs.walk_folder(folder)
    assert (report.files, report.dirs, report.links, report.bytes) == (2, 1, 0, 11)


def test_walk_folder_accepts_an_in_tree_link_to_a_file(folder: Path) -> None:
    (folder / "alias.txt").symlink_to("sub/data.txt")
    (folder / "sub" / "back.txt").symlink_to("../check.py")
    assert safefs.walk_folder(folder).links == 2


HOSTILE_LINKS = [
    pytest.param("{outside}", "absolute path", id="absolute-link-out"),
    pytest.param("../host/secret.txt", "outside the case folder", id="relative-link-out"),
    pytest.param("missing.txt", "dangling", id="dangling"),
    pytest.param("/dev/zero", "absolute path", id="dev-zero"),
    pytest.param(".", "link to a folder", id="link-to-dot"),
    pytest.param("sub", "link to a folder", id="link-to-folder"),
    pytest.param("loop", "link loop", id="self-loop"),
]


@pytest.mark.parametrize(("target", "fragment"), HOSTILE_LINKS)
def test_walk_folder_refuses_hostile_links(folder: Path, outside: Path, target: str, fragment: str) -> None:
    (folder / "sub" / "loop").symlink_to(target.format(outside=outside)) if target == "loop" else None
    (folder / "loop").symlink_to(target.format(outside=outside))
    with pytest.raises(CaseError) as info:
        safefs.walk_folder(folder)
    _one_line(info, str(folder / "loop"), fragment)


def test_walk_folder_refuses_an_in_tree_link_escaping_through_another_link(folder: Path, outside: Path) -> None:
    # "up/../.." is inside lexically from sub/, but "up" is itself a link to "..": the walk resolves it.
    (folder / "sub" / "up").symlink_to("..")
    (folder / "sub" / "leak").symlink_to("up/../host/secret.txt")
    with pytest.raises(CaseError, match=r"link to a folder|outside"):
        safefs.walk_folder(folder)


def test_walk_folder_refuses_two_links_to_dot(folder: Path) -> None:
    (folder / "a").symlink_to(".")
    (folder / "sub" / "b").symlink_to("..")
    with pytest.raises(CaseError, match=re.escape(f"{folder / 'a'}: link to a folder")):
        safefs.walk_folder(folder)


def test_walk_folder_refuses_a_fifo_without_opening_it(folder: Path) -> None:
    os.mkfifo(folder / "sub" / "pipe")
    with pytest.raises(CaseError) as info:  # an open for reading would block forever
        safefs.walk_folder(folder)
    _one_line(info, str(folder / "sub" / "pipe"), "a FIFO")


def test_walk_folder_refuses_a_link_to_a_fifo(folder: Path, tmp_path: Path) -> None:
    os.mkfifo(folder / "pipe")
    (folder / "sub" / "p").symlink_to("../pipe")
    with pytest.raises(CaseError, match="a FIFO"):
        safefs.walk_folder(folder)


def test_walk_folder_refuses_a_socket(folder: Path) -> None:
    import socket

    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(folder / "s"))
        with pytest.raises(CaseError, match=re.escape(f"{folder / 's'}: is a socket")):
            safefs.walk_folder(folder)


def test_walk_folder_bounds_depth_files_and_bytes(folder: Path) -> None:
    _nest(folder, 1200)
    with pytest.raises(CaseError, match="nested over 32 folders deep"):
        safefs.walk_folder(folder)
    safefs.remove_tree(folder / "d")
    with pytest.raises(CaseError, match="over 2 files"):
        safefs.walk_folder(folder, max_files=2)
    (folder / "big").write_bytes(b"")
    os.truncate(folder / "big", 10**12)  # sparse: st_size counts
    with pytest.raises(CaseError, match=re.escape(f"{folder / 'big'}: the case folder is over")):
        safefs.walk_folder(folder)


def test_open_file_follows_only_in_tree_links(folder: Path, outside: Path) -> None:
    (folder / "alias").symlink_to("sub/data.txt")
    assert safefs.read_bytes(folder, "alias", limit=100) == b"data\n"
    (folder / "out").symlink_to(str(outside))
    with pytest.raises(CaseError, match="absolute path"):
        safefs.read_bytes(folder, "out", limit=100)
    (folder / "hop").symlink_to("sub/../../host/secret.txt")
    with pytest.raises(CaseError, match="leads outside the folder of the file"):
        safefs.read_bytes(folder, "hop", limit=100)
    os.mkfifo(folder / "fifo")
    with pytest.raises(CaseError, match="is a FIFO"):
        safefs.read_bytes(folder, "fifo", limit=100)
    with pytest.raises(CaseError, match="over the 3-byte limit"):
        safefs.read_bytes(folder, "check.py", limit=3)


def test_copy_tree_copies_without_following_links(folder: Path, outside: Path, tmp_path: Path) -> None:
    (folder / "alias").symlink_to("sub/data.txt")
    (folder / "check.py").chmod(0o4755)
    report = safefs.copy_tree(folder, tmp_path / "copy", links="inside")
    assert (report.files, report.links) == (2, 1)
    assert os.readlink(tmp_path / "copy" / "alias") == "sub/data.txt"
    assert (tmp_path / "copy" / "sub" / "data.txt").read_text() == "data\n"
    assert (tmp_path / "copy" / "check.py").stat().st_mode & 0o7777 == 0o755  # setuid dropped
    with pytest.raises(CaseError, match=re.escape(f"{folder / 'alias'}: is a symlink")):
        safefs.copy_tree(folder, tmp_path / "copy2", links="refuse")


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda f, o: (f / "leak").symlink_to(o), id="link-to-host-file"),
        pytest.param(lambda f, o: (f / "leak").symlink_to("/dev/zero"), id="dev-zero"),
        pytest.param(lambda f, o: os.mkfifo(f / "leak"), id="fifo"),
        pytest.param(lambda f, o: (f / "leak").symlink_to("nope"), id="dangling"),
        pytest.param(lambda f, o: ((f / "leak").symlink_to("."), (f / "sub" / "x").symlink_to("..")), id="cycle"),
    ],
)
def test_copy_tree_refuses_hostile_entries(folder: Path, outside: Path, tmp_path: Path, make: object) -> None:
    make(folder, outside)  # type: ignore[operator]
    with pytest.raises(CaseError) as info:
        safefs.copy_tree(folder, tmp_path / "copy", links="inside")
    _one_line(info, str(folder / "leak"))
    assert CANARY not in "".join(p.read_text() for p in (tmp_path / "copy").rglob("*") if p.is_file()
                                 and not p.is_symlink())


def test_copy_tree_keep_recreates_absolute_links_verbatim(tmp_path: Path, outside: Path) -> None:
    src = tmp_path / "tpl"
    (src / "etc").mkdir(parents=True)
    (src / "etc" / "localtime").symlink_to(str(outside))
    safefs.copy_tree(src, tmp_path / "root", links="keep")
    assert os.readlink(tmp_path / "root" / "etc" / "localtime") == str(outside)


def test_copy_tree_bounds_bytes(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(CaseError, match=r"over 6 bytes|exceeds its byte limit"):
        safefs.copy_tree(folder, tmp_path / "copy", max_bytes=6)


def test_write_file_beneath_replaces_a_link_instead_of_writing_through_it(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "tpl"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "localtime").symlink_to(str(outside))
    with pytest.raises(CaseError, match="is a symlink; refused"):
        safefs.write_file_beneath(root, "etc/localtime", b"x")
    safefs.write_file_beneath(root, "etc/localtime", b"mine", mode=0o640, replace_links=True)
    assert outside.read_text() == CANARY
    assert not (root / "etc" / "localtime").is_symlink()
    assert (root / "etc" / "localtime").read_text() == "mine"
    assert (root / "etc" / "localtime").stat().st_mode & 0o7777 == 0o640


def test_write_file_beneath_never_creates_through_a_linked_folder(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "tpl"
    root.mkdir()
    (root / "etc").symlink_to(str(outside.parent))
    with pytest.raises(CaseError, match="etc: is a symlink, not a folder"):
        safefs.write_file_beneath(root, "etc/new.txt", b"x")
    safefs.write_file_beneath(root, "etc/new.txt", b"x", replace_links=True)
    assert not (outside.parent / "new.txt").exists()
    assert (root / "etc" / "new.txt").read_text() == "x"
    with pytest.raises(CaseError, match="mode 0o4755"):
        safefs.write_file_beneath(root, "a", b"x", mode=0o4755)


def test_write_file_beneath_replaces_a_fifo_without_opening_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    safefs.write_file_beneath(tmp_path, "p", b"ok", replace_links=True)
    assert (tmp_path / "p").read_text() == "ok"


def test_remove_tree_removes_deep_locked_trees_without_following_links(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "episode"
    _nest(root, 1200)
    (root / "link").symlink_to(outside.parent)
    (root / "locked" / "inner").mkdir(parents=True)
    (root / "locked" / "inner" / "f").write_text("x")
    (root / "locked" / "inner").chmod(0)
    (root / "locked").chmod(0)
    os.mkfifo(root / "fifo")
    safefs.remove_tree(root)
    assert not root.exists()
    assert outside.read_text() == CANARY


def test_chown_tree_changes_links_not_their_targets(tmp_path: Path, outside: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("changing owners needs root")
    root = tmp_path / "tpl"
    root.mkdir()
    (root / "l").symlink_to(outside)
    (root / "f").write_text("x")
    safefs.chown_tree(root, 1000, 1000)
    assert os.lstat(root / "l").st_uid == 1000 and (root / "f").stat().st_uid == 1000
    assert outside.stat().st_uid == 0


def test_refusals_deep_in_a_tree_leave_no_fd_open(folder: Path, outside: Path, tmp_path: Path) -> None:
    deep = folder / "a" / "b" / "c"
    deep.mkdir(parents=True)
    os.mkfifo(deep / "pipe")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(CaseError, match="a FIFO"):
            safefs.walk_folder(folder)
        with pytest.raises(CaseError, match="a FIFO"):
            safefs.copy_tree(folder, tmp_path / "copy")
        safefs.remove_tree(tmp_path / "copy")
    assert len(os.listdir("/proc/self/fd")) == before


def test_hard_links_inside_the_installed_package_are_accepted(tmp_path: Path) -> None:
    """Installers (uv) hard-link a package's files from their cache: the built-in suite must still load."""
    import toolemu

    package_file = Path(toolemu.__file__).resolve()
    st = package_file.stat()
    fake = os.stat_result((st.st_mode, st.st_ino, st.st_dev, 2, *st[4:]))
    safefs.check_single_link(package_file, fake, "built-in suite")  # no error
    with pytest.raises(CaseError, match="hard link"):
        safefs.check_single_link(tmp_path / "x.yaml", fake, "case folder")
