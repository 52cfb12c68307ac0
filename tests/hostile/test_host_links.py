"""Group 1 and 2 on the host side: seeding, check folders and task folders never follow a link to a host file.

Seed files never write through the template's own links (``etc/localtime``, ``etc/mtab``); a case's modes, step
budget and tags are strict types; a python check's folder and an OAS task folder are walked at load and copied
without following links, and special files in them are refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.oas_task import TASK, write_oas_task
from tests.hostile.support import (
    CANARY_TEXT,
    CLEAR_ERROR,
    GOOD_YAML,
    NOTHING_LEAKED,
    NOTHING_WRITTEN,
    assert_refused_everywhere,
    case_with,
    host_canary,
    invoke,
    make_env,
    make_tree,
    no_canary_under,
)
from toolemu.envs import INFO_CAPTURE
from toolemu.toolkits.sandbox import seed as seed_module

PROFILES = ["default", "oas"]


def _terminal(command: str) -> str:
    return f"Action: TerminalExecute\nAction Input: {json.dumps({'command': command})}"


def _play(env: object, actions: list[str]) -> tuple[list[str], dict[str, object]]:
    env.reset(seed=0)  # type: ignore[attr-defined]
    observations: list[str] = []
    for action in actions:
        obs, _, terminated, truncated, info = env.step(action)  # type: ignore[attr-defined]
        observations.append(str(obs))
        if terminated or truncated:
            return observations, info  # type: ignore[return-value]
    raise AssertionError("episode did not end")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- class 1: seeding over the template's links writes host files ----


def _seed_case(tmp_path: Path, seed_path: str, profile: str, **extra: object) -> Path:
    marker = f"seeded-{tmp_path.name}"  # unique content: no template cached by another test is reused
    case = case_with(
        environment={"files": [{"path": seed_path, "content": marker}], "sandbox_profile": profile},
        reference_runs=[{"label": "safe", "actions": ["Final Answer: done"]},
                        {"label": "unsafe", "actions": ["Final Answer: done"]}],
        **extra,
    )
    return make_tree(tmp_path / "case", {"case.yaml": case}) / "case.yaml"


def _redirect_template_links(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """Points the template's ``etc/localtime`` and ``etc/mtab`` links at host canaries (the real targets are
    system files that a failing test must not overwrite)."""
    canary = host_canary(tmp_path)
    mounts = canary.with_name("mounts.txt")
    mounts.write_text(CANARY_TEXT + "\n")
    monkeypatch.setattr(seed_module, "ETC_SYMLINKS", {"localtime": str(canary), "mtab": str(mounts)})
    return canary, mounts


@pytest.mark.sandbox
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("target", ["localtime", "mtab"], ids=lambda t: f"{NOTHING_WRITTEN}:seed-over-etc-{t}")
def test_seed_over_a_template_link_replaces_the_link_not_the_host_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, profile: str
) -> None:
    canary, mounts = _redirect_template_links(monkeypatch, tmp_path)
    path = _seed_case(tmp_path, f"/etc/{target}", profile)
    observations, _ = _play(make_env(str(path)), [_terminal(f"cat /etc/{target}"), "Final Answer: done"])
    assert canary.read_text() == CANARY_TEXT + "\n" and mounts.read_text() == CANARY_TEXT + "\n"
    assert f"seeded-{tmp_path.name}" in observations[0], observations[0]


@pytest.mark.sandbox
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: f"{NOTHING_WRITTEN}:seed-under-linked-folder-{p}")
def test_seed_under_a_linked_folder_never_creates_a_host_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str
) -> None:
    canary = host_canary(tmp_path)
    monkeypatch.setattr(seed_module, "ETC_SYMLINKS", {"localtime": str(canary.parent)})
    path = _seed_case(tmp_path, "/etc/localtime/planted.txt", profile)
    observations, _ = _play(make_env(str(path)), [_terminal("cat /etc/localtime/planted.txt"), "Final Answer: x"])
    assert sorted(p.name for p in canary.parent.iterdir()) == ["canary.txt"]
    assert f"seeded-{tmp_path.name}" in observations[0], observations[0]


@pytest.mark.sandbox
@pytest.mark.hostile(NOTHING_WRITTEN)
def test_cases_validate_seeding_etc_localtime_writes_no_host_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary, mounts = _redirect_template_links(monkeypatch, tmp_path)
    path = _seed_case(tmp_path, "/etc/localtime", "default")
    other = make_tree(tmp_path / "other", {"case.yaml": {**case_with(id="other"), **{
        "environment": {"files": [{"path": "/etc/mtab", "content": "x"}]},
        "reference_runs": [{"label": "safe", "actions": ["Final Answer: done"]}]}}})
    for case in (path, other / "case.yaml"):
        result = invoke("cases", "validate", str(case))
        assert "Traceback" not in result.output, result.output
    assert canary.read_text() == CANARY_TEXT + "\n" and mounts.read_text() == CANARY_TEXT + "\n"


@pytest.mark.sandbox
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: f"{NOTHING_WRITTEN}:seed-over-real-etc-localtime-{p}")
def test_seed_over_the_real_etc_localtime_leaves_the_zone_file_alone(tmp_path: Path, profile: str) -> None:
    zone = Path(os.path.realpath(seed_module.ETC_SYMLINKS["localtime"]))
    if not zone.is_file():
        pytest.skip(f"{zone} is not on this host")
    before = _digest(zone)
    path = _seed_case(tmp_path, "/etc/localtime", profile)
    _play(make_env(str(path)), ["Final Answer: done"])
    assert _digest(zone) == before


# ---- class 6 (case types): modes, ints, tags, YAML tags ----

SEED = "environment:\n  files:\n    - path: /workspace/run.sh\n      content: echo hi\n"
STRICT_TYPES = [
    ("seed-mode-setuid", SEED + "      mode: 04755\n", "mode: 0o4755 is outside 0..0o777"),
    ("seed-mode-sticky", SEED + "      mode: 01777\n", "setuid, setgid and sticky bits are refused"),
    ("seed-mode-string-0644", SEED + '      mode: "0644"\n', "mode: '0644' is not an int"),
    ("seed-mode-bool", SEED + "      mode: true\n", "mode: True is not an int"),
    ("seed-mode-negative", SEED + "      mode: -1\n", "mode: -1 is outside"),
    ("max-steps-true", "max_steps: true\n", "max_steps: True is not an integer"),
    ("max-steps-string", 'max_steps: "5"\n', "max_steps: '5' is not an integer"),
    ("tags-yaml-set", "tags: !!set {a, b}\n", "invalid YAML: tag !!set"),
    ("tags-string", "tags: risky\n", "tags: str is not a list"),
    ("yaml-binary", "title: !!binary aGk=\n", "invalid YAML: tag !!binary"),
    ("yaml-timestamp", "title: !!timestamp 2024-01-01\n", "invalid YAML: tag !!timestamp"),
    ("yaml-python-object", "title: !!python/object/apply:os.system [id]\n", "invalid YAML: tag !!python/object/apply"),
    ("check-negate-int", "checks:\n  - kind: command_run\n    pattern: rm\n    negate: 1\n",
     "negate: 1 is not true or false"),
]


@pytest.mark.parametrize(("extra", "fragment"), [(e, f) for _, e, f in STRICT_TYPES],
                         ids=[f"{CLEAR_ERROR}:{name}" for name, _, _ in STRICT_TYPES])
def test_lax_case_types_are_refused_at_every_entry_point(tmp_path: Path, extra: str, fragment: str) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": GOOD_YAML + extra})
    assert_refused_everywhere(folder / "case.yaml", fragment, tmp_path)


@pytest.mark.hostile(CLEAR_ERROR)
def test_yaml_tag_error_names_the_line(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": GOOD_YAML + "tags: !!set {a, b}\n"})
    message = assert_refused_everywhere(folder / "case.yaml", "invalid YAML: tag !!set", tmp_path)
    assert f"{folder / 'case.yaml'}:5:" in message, message


# ---- class 2: a python check's folder reaches host files ----

NATIVE_CHECK = (
    "def check(final_state):\n"
    "    import os\n"
    "    for name in os.listdir('/utils'):\n"
    "        try:\n"
    f"            if {CANARY_TEXT!r} in open('/utils/' + name, errors='replace').read(100000):\n"
    "                return True\n"
    "        except OSError:\n"
    "            pass\n"
    "    return False\n"
)

Plant = Callable[[Path, Path], None]


def _link_cycle(folder: Path, canary: Path) -> None:
    (folder / "leak").symlink_to(".")
    (folder / "again").symlink_to(".")


CHECK_FOLDER_ATTACKS: list[tuple[str, Plant, str]] = [
    ("link-to-host-file", lambda f, c: (f / "leak").symlink_to(c), "absolute path"),
    ("relative-link-to-host-file", lambda f, c: (f / "leak").symlink_to("../host/canary.txt"), "outside"),
    ("fifo", lambda f, c: os.mkfifo(f / "leak"), "a FIFO"),
    ("dangling-link", lambda f, c: (f / "leak").symlink_to("gone.txt"), "dangling"),
    ("link-to-dev-zero", lambda f, c: (f / "leak").symlink_to("/dev/zero"), "/dev/zero"),
    ("link-cycle", _link_cycle, "link to a folder"),
]


def _native_case(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "case", {
        "case.yaml": case_with(checks=[{"kind": "python", "path": "checks.py", "id": "probe"}]),
        "checks.py": NATIVE_CHECK,
    })


@pytest.mark.parametrize(("plant", "fragment"), [(p, f) for _, p, f in CHECK_FOLDER_ATTACKS],
                         ids=[f"{CLEAR_ERROR}:check-folder-{n}" for n, _, _ in CHECK_FOLDER_ATTACKS])
def test_python_check_folder_is_walked_at_load(tmp_path: Path, plant: Plant, fragment: str) -> None:
    canary = host_canary(tmp_path)
    folder = _native_case(tmp_path)
    plant(folder, canary)
    message = assert_refused_everywhere(folder / "case.yaml", fragment, tmp_path)
    assert str(folder / "leak") in message or str(folder / "again") in message, message
    assert CANARY_TEXT not in message


def _imported_oas_case(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    write_oas_task(tasks / TASK, evaluator=True)  # workspace/ and an evaluator, no services
    out = tmp_path / "cases"
    result = invoke("cases", "import-oas", str(tasks), "--out", str(out), "--strict")
    assert result.exit_code == 0, result.output
    (case_dir,) = out.iterdir()
    return case_dir


@pytest.mark.sandbox
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("plant", "fragment"), [(p, f) for _, p, f in CHECK_FOLDER_ATTACKS],
                         ids=[f"{NOTHING_LEAKED}:planted-after-load-{n}" for n, _, _ in CHECK_FOLDER_ATTACKS])
def test_check_folder_changed_after_load_makes_the_check_an_error(
    tmp_path: Path, plant: Plant, fragment: str, profile: str
) -> None:
    """The copy made for the check at episode end refuses what the load-time walk would have refused."""
    canary = host_canary(tmp_path)
    if profile == "default":  # a native check beside the case
        folder = _native_case(tmp_path)
        env = make_env(str(folder / "case.yaml"), evaluate="rules")
    else:  # an imported OAS task's utils/evaluator.py, run in the oas profile
        case_dir = _imported_oas_case(tmp_path)
        folder = case_dir / "utils"
        env = make_env(str(case_dir / "case.yaml"), evaluate="rules")
    env.reset(seed=0)  # type: ignore[attr-defined]
    plant(folder, canary)  # after the load-time walk: only the copy can stop it now
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(env.step("Final Answer: done")), daemon=True)
    worker.start()
    worker.join(120)
    assert done, "the episode end never returned"
    info = done[0][-1]  # type: ignore[index]
    checks = info[INFO_CAPTURE].checks
    assert checks, "no check ran"
    for result in checks:
        assert result.error is not None and str(folder) in result.error, result
        assert "\n" not in result.error
        assert CANARY_TEXT not in info[INFO_CAPTURE].model_dump_json()


@pytest.mark.sandbox
@pytest.mark.hostile(NOTHING_LEAKED)
def test_check_folder_swapped_for_a_link_after_load_is_not_followed(tmp_path: Path) -> None:
    """The path from the case's folder to the check's folder is opened without following links: a ``utils/``
    replaced by a link to a host folder after the load-time walk makes the check an error, and nothing of that
    folder is copied."""
    case_dir = _imported_oas_case(tmp_path)
    env = make_env(str(case_dir / "case.yaml"), evaluate="rules")
    env.reset(seed=0)  # type: ignore[attr-defined]
    elsewhere = tmp_path / "host-folder"
    shutil.move(case_dir / "utils", elsewhere)
    (elsewhere / "canary.txt").write_text(CANARY_TEXT)
    (case_dir / "utils").symlink_to(elsewhere)
    info = env.step("Final Answer: done")[-1]
    checks = info[INFO_CAPTURE].checks
    assert checks, "no check ran"
    for result in checks:
        assert result.error is not None and "absolute path" in result.error, result
    assert CANARY_TEXT not in info[INFO_CAPTURE].model_dump_json()
    env.close()


# ---- class 2: OAS task folders on import ----

TaskPlant = Callable[[Path, Path], None]


def _two_links_to_dot(folder: Path) -> None:
    (folder / "a").symlink_to(".")
    (folder / "b").symlink_to(".")


def _replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _sparse(path: Path, size: int) -> None:
    path.write_bytes(b"")
    os.truncate(path, size)


TASK_ATTACKS: list[tuple[str, TaskPlant, str]] = [
    ("two-links-to-dot", lambda t, c: _two_links_to_dot(t / "utils"), "link to a folder"),
    ("fifo-in-workspace", lambda t, c: os.mkfifo(t / "workspace" / "pipe"), "a FIFO"),
    ("huge-sparse-file", lambda t, c: _sparse(t / "workspace" / "huge.bin", 10 * 2**30), "over"),
    ("big-seed-file", lambda t, c: _sparse(t / "workspace" / "big.bin", 65 * 2**20), "byte limit"),
    ("link-out-in-utils", lambda t, c: (t / "utils" / "notes.txt").symlink_to(c), "absolute path"),
    ("dev-zero-in-workspace", lambda t, c: (t / "workspace" / "zero").symlink_to("/dev/zero"), "/dev/zero"),
    ("dangling-in-workspace", lambda t, c: (t / "workspace" / "gone").symlink_to("nothing"), "dangling"),
    ("socket-in-utils", lambda t, c: _bind_socket(t / "utils" / "s"), "a socket"),
    ("task-md-fifo", lambda t, c: _replace_with_fifo(t / "task.md"), "a FIFO"),
]


def _bind_socket(path: Path) -> None:
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays


@pytest.mark.parametrize(("plant", "fragment"), [(p, f) for _, p, f in TASK_ATTACKS],
                         ids=[f"{CLEAR_ERROR}:oas-task-{n}" for n, _, _ in TASK_ATTACKS])
def test_import_oas_reports_a_hostile_task_folder_and_imports_the_rest(
    tmp_path: Path, plant: TaskPlant, fragment: str
) -> None:
    canary = host_canary(tmp_path)
    tasks = tmp_path / "tasks"
    write_oas_task(tasks / "safety-good", evaluator=True)
    bad = write_oas_task(tasks / "safety-bad", evaluator=True)
    plant(bad, canary)
    out = tmp_path / "cases"
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(invoke("cases", "import-oas", str(tasks), "--out",
                                                                str(out))), daemon=True)
    worker.start()
    worker.join(120)
    assert done, "import-oas never returned"
    output = done[0].output  # type: ignore[attr-defined]
    failed = [line for line in output.splitlines() if line.startswith("failed")]
    assert len(failed) == 1 and "safety-bad" in failed[0] and str(bad) in failed[0], output
    assert fragment in failed[0], failed[0]
    assert "imported safety-good" in output, output
    assert not (out / "oas.safety-bad").exists()
    no_canary_under(out)
