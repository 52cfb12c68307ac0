"""Classes 1, 2 and 6 tried again from outside: what a hostile case, suite or task folder author can still try.

Hard links (a regular file whose other name may be a host file), links among the entries of a suite or a folder
of OAS tasks, a case folder changed between load and hashing, and numbers too large to print back.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.oas_task import write_oas_task
from tests.hostile.support import (
    CANARY_TEXT,
    CLEAR_ERROR,
    FAKE_MODELS,
    GOOD_YAML,
    NOTHING_LEAKED,
    NOTHING_WRITTEN,
    assert_one_line_error,
    assert_refused_everywhere,
    case_with,
    host_canary,
    invoke,
    make_env,
    make_tree,
    no_canary_under,
)
from tests.hostile.test_host_links import NATIVE_CHECK, _imported_oas_case
from toolemu.bench.record import case_hash
from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.envs import INFO_CAPTURE
from toolemu.testcases import load_case


def _in_thread(fn: Callable[[], object], seconds: float = 60) -> object:
    done: list[object] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            done.append(fn())
        except BaseException as e:
            errors.append(e)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if errors:
        raise errors[0]
    assert done, f"did not return within {seconds} s"
    return done[0]


def _hard_link(canary: Path, at: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    os.link(canary, at)  # same file system as the canary (both under tmp_path)


# ---- hard links: a regular file that is also a host file ----


def _check_case(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "case", {
        "case.yaml": case_with(checks=[{"kind": "python", "path": "checks.py", "id": "probe"}]),
        "checks.py": NATIVE_CHECK,
    })


@pytest.mark.hostile(NOTHING_LEAKED)
def test_hard_link_beside_a_python_check_is_refused(tmp_path: Path) -> None:
    canary = host_canary(tmp_path)
    folder = _check_case(tmp_path)
    _hard_link(canary, folder / "leak.txt")
    message = assert_refused_everywhere(folder / "case.yaml", "hard link", tmp_path)
    assert str(folder / "leak.txt") in message and CANARY_TEXT not in message


@pytest.mark.hostile(NOTHING_LEAKED)
def test_hard_link_as_a_seed_source_is_refused(tmp_path: Path) -> None:
    canary = host_canary(tmp_path)
    folder = make_tree(tmp_path / "case", {"case.yaml": case_with(
        environment={"files": [{"path": "/workspace/notes.txt", "source": "notes.txt"}]})})
    _hard_link(canary, folder / "notes.txt")
    message = assert_refused_everywhere(folder / "case.yaml", "hard link", tmp_path)
    assert "notes.txt" in message and CANARY_TEXT not in message


@pytest.mark.hostile(NOTHING_LEAKED)
def test_in_tree_link_to_a_hard_link_is_refused(tmp_path: Path) -> None:
    canary = host_canary(tmp_path)
    folder = _check_case(tmp_path)
    _hard_link(canary, folder / "data" / "real.txt")
    (folder / "alias.txt").symlink_to("data/real.txt")
    assert_refused_everywhere(folder / "case.yaml", "hard link", tmp_path)


def _import(tasks: Path, out: Path) -> str:
    result = _in_thread(lambda: invoke("cases", "import-oas", str(tasks), "--out", str(out)))
    return str(result.output)  # type: ignore[attr-defined]


def _oas_tasks(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    write_oas_task(tasks / "safety-good", evaluator=True)
    return tasks


@pytest.mark.parametrize("where", ["workspace/notes.txt", "utils/data.txt"],
                         ids=lambda w: f"{NOTHING_LEAKED}:oas-hard-link-in-{w.split('/')[0]}")
def test_import_oas_refuses_a_hard_link_in_the_task_folder(tmp_path: Path, where: str) -> None:
    canary = host_canary(tmp_path)
    tasks = _oas_tasks(tmp_path)
    bad = tasks / "safety-bad"
    write_oas_task(bad, evaluator=True)
    _hard_link(canary, bad / where)
    out = tmp_path / "cases"
    output = _import(tasks, out)
    failed = [line for line in output.splitlines() if line.startswith("failed")]
    assert len(failed) == 1 and str(bad / where) in failed[0] and "hard link" in failed[0], output
    assert "imported safety-good" in output, output
    no_canary_under(out)


# ---- links among the entries of a folder of tasks or of cases ----


@pytest.mark.hostile(NOTHING_LEAKED)
def test_import_oas_never_follows_a_task_entry_that_is_a_link(tmp_path: Path) -> None:
    tasks = _oas_tasks(tmp_path)
    canary = host_canary(tmp_path)
    elsewhere = tmp_path / "host" / "someone-elses-task"
    write_oas_task(elsewhere, evaluator=True)
    shutil.copy(canary, elsewhere / "workspace" / "secret.txt")
    (tasks / "safety-evil").symlink_to(elsewhere)
    out = tmp_path / "cases"
    output = _import(tasks, out)
    failed = [line for line in output.splitlines() if line.startswith("failed")]
    assert len(failed) == 1 and "safety-evil" in failed[0] and "symlink" in failed[0], output
    assert "imported safety-good" in output, output
    assert not (out / "oas.safety-evil").exists()
    no_canary_under(out)


def _host_case(tmp_path: Path) -> Path:
    """A valid case file outside the suite whose instruction is the canary."""
    host = tmp_path / "host"
    host.mkdir(exist_ok=True)
    secret = host / "secret.yaml"
    secret.write_text(GOOD_YAML.replace("id: hostile", "id: stolen").replace("Tidy my notes.", CANARY_TEXT))
    return secret


SUITE_LINKS = [
    ("case-file-link-to-host", lambda suite, secret: (suite / "stolen.yaml").symlink_to(secret)),
    ("folder-link-to-host", lambda suite, secret: (suite / "more").symlink_to(secret.parent)),
    ("relative-link-out", lambda suite, secret: (suite / "up.yaml").symlink_to("../host/secret.yaml")),
]


@pytest.mark.parametrize("plant", [p for _, p in SUITE_LINKS],
                         ids=[f"{NOTHING_LEAKED}:suite-{n}" for n, _ in SUITE_LINKS])
def test_suite_links_leading_out_of_the_suite_are_refused(
    tmp_path: Path, plant: Callable[[Path, Path], None]
) -> None:
    secret = _host_case(tmp_path)
    suite = make_tree(tmp_path / "suite", {"a.yaml": GOOD_YAML})
    plant(suite, secret)
    validated = invoke("cases", "validate", str(suite))
    assert validated.exit_code == 1 and "symlink" in validated.output and "outside" in validated.output, (
        validated.output)
    assert CANARY_TEXT not in validated.output
    out = tmp_path / "bench.jsonl"
    benched = invoke("bench", "--suite", str(suite), *FAKE_MODELS, "--out", str(out))
    assert "outside" in assert_one_line_error(benched)
    assert not out.exists()


@pytest.mark.hostile(CLEAR_ERROR)
def test_in_tree_suite_links_still_load(tmp_path: Path) -> None:
    """Contained: a link inside the suite to a case in it is read once, as before."""
    suite = make_tree(tmp_path / "suite", {"sub/a.yaml": GOOD_YAML})
    (suite / "again").symlink_to("sub")
    result = invoke("cases", "validate", str(suite))
    assert result.output.splitlines() == ["OK   hostile", "1 ok, 0 failed"], result.output


# ---- the case folder changes between load and hashing (bench resume keys) ----

HASH_PLANTS: list[tuple[str, Callable[[Path, Path], None], str]] = [
    ("absolute-link", lambda f, c: (f / "leak").symlink_to(c), "absolute path"),
    ("fifo", lambda f, c: os.mkfifo(f / "leak"), "a FIFO"),
    ("hard-link", lambda f, c: os.link(c, f / "leak"), "hard link"),
    ("dev-zero", lambda f, c: (f / "leak").symlink_to("/dev/zero"), "/dev/zero"),
]


@pytest.mark.parametrize(("plant", "fragment"), [(p, f) for _, p, f in HASH_PLANTS],
                         ids=[f"{CLEAR_ERROR}:hash-after-load-{n}" for n, _, _ in HASH_PLANTS])
def test_case_hash_reads_the_case_folder_without_following_links(
    tmp_path: Path, plant: Callable[[Path, Path], None], fragment: str
) -> None:
    canary = host_canary(tmp_path)
    folder = _check_case(tmp_path)
    case = load_case(folder / "case.yaml")
    before = case_hash(case)
    plant(folder, canary)
    with pytest.raises(CaseError) as info:
        _in_thread(lambda: case_hash(case), 20)
    message = str(info.value)
    assert fragment in message and str(folder / "leak") in message and "\n" not in message, message
    (folder / "leak").unlink()
    assert case_hash(case) == before


# ---- class 6: numbers no field takes, too long to print back ----

HUGE_NUMBERS = [
    ("yaml-hex-5000-digits", "case.yaml", GOOD_YAML + "max_steps: 0x" + "f" * 5000 + "\n", "max_steps: a number"),
    ("yaml-decimal-5000-digits", "case.yaml", GOOD_YAML + "max_steps: 1" + "0" * 5000 + "\n", "a number over"),
    ("yaml-hex-key", "case.yaml", GOOD_YAML + "environment:\n  env:\n    ? 0x" + "f" * 5000 + "\n    : a\n",
     "a number"),
    ("json-5000-digits", "case.json", json.dumps({"id": "hostile", "instruction": "x", "toolkits": ["Terminal"],
                                                  "unsafe_behavior": "y"})[:-1] + ', "max_steps": 1' + "0" * 5000
     + "}", "a number over"),
]


@pytest.mark.parametrize(("name", "text", "fragment"), [(n, t, f) for _, n, t, f in HUGE_NUMBERS],
                         ids=[f"{CLEAR_ERROR}:{i}" for i, *_ in HUGE_NUMBERS])
def test_numbers_too_long_to_print_are_one_line_errors(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    folder = make_tree(tmp_path / "case", {name: text})
    message = assert_refused_everywhere(folder / name, fragment, tmp_path)
    assert len(message) < 400, message


# ---- files the CLI reads or replaces beside what the user named ----


@pytest.mark.hostile(CLEAR_ERROR)
def test_openhands_log_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    case = make_tree(tmp_path / "case", {"case.yaml": GOOD_YAML}) / "case.yaml"
    log = tmp_path / "run.json"
    os.mkfifo(log)
    out = tmp_path / "records.jsonl"
    result = _in_thread(lambda: invoke("cases", "import-openhands", str(log), "--case", str(case), "--out", str(out)),
                        20)
    message = assert_one_line_error(result, str(log), "not a regular file")  # type: ignore[arg-type]
    assert "\n" not in message
    assert not out.exists()


@pytest.mark.hostile(NOTHING_WRITTEN)
def test_import_oas_never_replaces_an_output_case_folder_that_is_a_link(tmp_path: Path) -> None:
    tasks = _oas_tasks(tmp_path)
    precious = make_tree(tmp_path / "host" / "precious", {"case.yaml": GOOD_YAML, "keep.txt": CANARY_TEXT})
    out = tmp_path / "cases"
    out.mkdir()
    (out / "oas.safety-good").symlink_to(precious)
    output = _import(tasks, out)
    failed = [line for line in output.splitlines() if line.startswith("failed")]
    assert len(failed) == 1 and "safety-good" in failed[0] and "symlink" in failed[0], output
    assert sorted(p.name for p in precious.iterdir()) == ["case.yaml", "keep.txt"]
    assert (out / "oas.safety-good").is_symlink()
    assert [p.name for p in out.iterdir()] == ["oas.safety-good"], "a staging folder was left behind"


# ---- a hard link planted in a check's folder after load: the episode-end copy refuses it ----


@pytest.mark.sandbox
@pytest.mark.parametrize("profile", ["default", "oas"], ids=lambda p: f"{NOTHING_LEAKED}:hard-link-after-load-{p}")
def test_hard_link_planted_after_load_makes_the_check_an_error(tmp_path: Path, profile: str) -> None:
    canary = host_canary(tmp_path)
    if profile == "default":
        folder = _check_case(tmp_path)
        env = make_env(str(folder / "case.yaml"), evaluate="rules")
    else:
        case_dir = _imported_oas_case(tmp_path)
        folder = case_dir / "utils"
        env = make_env(str(case_dir / "case.yaml"), evaluate="rules")
    env.reset(seed=0)  # type: ignore[attr-defined]
    os.link(canary, folder / "leak")
    *_, info = _in_thread(lambda: env.step("Final Answer: done"), 120)  # type: ignore[misc,attr-defined]
    capture = info[INFO_CAPTURE]
    assert capture.checks, "no check ran"
    for result in capture.checks:
        assert result.error is not None and str(folder / "leak") in result.error and "hard link" in result.error, (
            result)
    assert CANARY_TEXT not in capture.model_dump_json()


# ---- class 6: seed paths that only failed (or silently won) at reset; now refused at load ----


def _seeds(*paths: str) -> str:
    return GOOD_YAML + "environment:\n  files:\n" + "".join(
        f"    - path: {json.dumps(p)}\n      content: x\n" for p in paths)


SEED_PATHS = [
    ("seed-twice", _seeds("/workspace/a", "/workspace/a"), "seeded already by environment.files[0]"),
    ("seed-twice-spelled-apart", _seeds("/workspace/a", "/workspace//./a"), "not a normal path"),
    ("seed-dotdot-into-etc", _seeds("/workspace/../etc/passwd"), "not a normal path"),
    ("seed-trailing-slash", _seeds("/workspace/a/"), "not a normal path"),
    ("seed-under-a-seed-file", _seeds("/workspace/a", "/workspace/a/b"), "a file cannot hold files"),
    ("seed-is-a-sandbox-folder", _seeds("/tmp"), "is a folder of the sandbox"),
    ("seed-name-over-255-bytes", _seeds("/workspace/" + "é" * 130), "over the file system's limits"),
    ("seed-path-over-4095-bytes", _seeds("/workspace/" + "a/" * 2100 + "x"), "over the file system's limits"),
    ("seed-outside-writable", _seeds("/proc/self/x"), "not under /workspace"),
]


@pytest.mark.parametrize(("text", "fragment"), [(t, f) for _, t, f in SEED_PATHS],
                         ids=[f"{CLEAR_ERROR}:{n}" for n, _, _ in SEED_PATHS])
def test_seed_paths_are_refused_at_load(tmp_path: Path, text: str, fragment: str) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": text})
    message = assert_refused_everywhere(folder / "case.yaml", fragment, tmp_path)
    assert "environment.files[" in message, message


@pytest.mark.parametrize("existing", [False, True],
                         ids=[f"{NOTHING_WRITTEN}:bench-out-dangling-link",
                              f"{NOTHING_WRITTEN}:bench-out-link-to-host"])
def test_bench_out_that_is_a_link_writes_nothing_through_it(tmp_path: Path, existing: bool) -> None:
    """A results path in a shared folder, replaced by a link to a host file: bench refuses it before any work;
    the host file is neither created, appended to, nor truncated (a last line without newline is cut on resume)."""
    folder = make_tree(tmp_path / "case", {"case.yaml": GOOD_YAML})
    target = tmp_path / "host" / "planted.conf"
    target.parent.mkdir()
    if existing:
        target.write_text("line one\nno newline at the end")
    out = tmp_path / "results.jsonl"
    out.symlink_to(target)
    result = invoke("bench", "--suite", str(folder / "case.yaml"), *FAKE_MODELS, "--out", str(out))
    assert_one_line_error(result, str(out), "symlink")
    if existing:
        assert target.read_text() == "line one\nno newline at the end"
    else:
        assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case", "host", "results.jsonl"]


# ---- denial: deep and wide folders ----


def _nest(folder: Path, depth: int) -> Path:
    """``depth`` nested folders under ``folder`` (relative mkdir: no path grows past PATH_MAX)."""
    here = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=here)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = below
    finally:
        os.close(here)
    return folder


@pytest.mark.hostile(CLEAR_ERROR)
def test_suite_nested_1200_deep_is_one_line_error_quickly(tmp_path: Path) -> None:
    suite = _nest(make_tree(tmp_path / "suite", {"a.yaml": GOOD_YAML}), 1200)
    try:
        validated = _in_thread(lambda: invoke("cases", "validate", str(suite)), 30)
        assert_one_line_error(validated, "nested over", str(suite / "d"))  # type: ignore[arg-type]
        out = tmp_path / "bench.jsonl"
        benched = _in_thread(lambda: invoke("bench", "--suite", str(suite), *FAKE_MODELS, "--out", str(out)), 30)
        assert_one_line_error(benched, "nested over")  # type: ignore[arg-type]
        assert not out.exists()
    finally:
        safefs.remove_tree(suite / "d")  # pytest's own clean-up of tmp folders recurses and cannot


@pytest.mark.hostile(CLEAR_ERROR)
def test_check_folder_with_20000_tiny_files_is_refused_quickly(tmp_path: Path) -> None:
    """Contained: the load-time walk stops at the file limit, with one line naming the folder."""
    folder = _check_case(tmp_path)
    many = folder / "many"
    many.mkdir()
    for i in range(20_000):
        (many / f"f{i}").write_bytes(b"")
    message = str(_in_thread(lambda: assert_refused_everywhere(folder / "case.yaml", "files in the", tmp_path), 60))
    assert str(folder) in message


@pytest.mark.parametrize("layout", ["case-folder", "suite-folder"],
                         ids=lambda w: f"{NOTHING_LEAKED}:toolkit-spec-hard-link-{w}")
def test_toolkit_spec_that_is_a_hard_link_is_refused(tmp_path: Path, layout: str) -> None:
    """A spec travels into the emulator's prompt, so to a model provider: a hard link must not bring a host file."""
    host = tmp_path / "host"
    host.mkdir()
    secret = host / "secret.json"
    secret.write_text(json.dumps({"toolkit": "Secret", "description": CANARY_TEXT, "tools": []}))
    folder = make_tree(tmp_path / "suite" / "case", {"case.yaml": case_with()})
    specs = folder / "toolkits" if layout == "case-folder" else folder.parent / "toolkits"
    _hard_link(secret, specs / "Secret.json")
    with pytest.raises(CaseError, match="hard link") as info:
        make_env(str(folder / "case.yaml"))
    message = str(info.value)
    assert str(specs / "Secret.json") in message and CANARY_TEXT not in message
    validated = invoke("cases", "validate", str(folder / "case.yaml"))
    assert validated.exit_code == 1 and f"FAIL {message}" in validated.output, validated.output
    assert assert_one_line_error(invoke("run", "--case", str(folder / "case.yaml"), *FAKE_MODELS)) == message
    out = tmp_path / "bench.jsonl"  # bench loads specs per episode: the episode is an error record
    invoke("bench", "--suite", str(folder / "case.yaml"), *FAKE_MODELS, "--out", str(out))
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["status"] == "error" and CANARY_TEXT not in out.read_text(), record["status"]


@pytest.mark.hostile(CLEAR_ERROR)
def test_bench_out_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": GOOD_YAML})
    out = tmp_path / "results.jsonl"
    os.mkfifo(out)
    result = _in_thread(lambda: invoke("bench", "--suite", str(folder / "case.yaml"), *FAKE_MODELS, "--out",
                                       str(out)), 20)
    assert_one_line_error(result, str(out), "not a regular file")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["task.md", "checkpoints.md", "scenarios.json", "utils/dependencies.yml"],
                         ids=lambda n: f"{NOTHING_LEAKED}:oas-{n.replace('/', '-')}-swapped-after-walk")
def test_import_oas_reads_task_files_without_following_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The walk at load is not the only guard: a task file swapped for a link to a host file after it (the walk is
    skipped here to stand for that race) is refused when read, never read through the link."""
    from toolemu.testcases import oas

    tasks = _oas_tasks(tmp_path)
    canary = host_canary(tmp_path)
    bad = tasks / "safety-bad"
    write_oas_task(bad, evaluator=True)
    (bad / name).unlink(missing_ok=True)
    (bad / name).symlink_to(canary)
    monkeypatch.setattr(oas, "check_task_files", lambda task: None)
    out = tmp_path / "cases"
    output = _import(tasks, out)
    failed = [line for line in output.splitlines() if line.startswith("failed")]
    assert len(failed) == 1 and str(bad / name) in failed[0] and "absolute path" in failed[0], output
    assert CANARY_TEXT not in output
    no_canary_under(out)


@pytest.mark.parametrize("name", ["headline.png", "errors.png"], ids=lambda n: f"{NOTHING_WRITTEN}:report-{n}-link")
def test_report_never_saves_a_figure_through_a_link_in_its_folder(tmp_path: Path, name: str) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": GOOD_YAML})
    results = tmp_path / "results.jsonl"
    invoke("bench", "--suite", str(folder / "case.yaml"), *FAKE_MODELS, "--out", str(results))
    assert results.is_file()
    host = tmp_path / "host.conf"
    host.write_text(CANARY_TEXT)
    report = tmp_path / "report"
    report.mkdir()
    (report / name).symlink_to(host)
    result = invoke("report", str(results), "--out", str(report))
    assert_one_line_error(result, str(report), name)
    assert host.read_text() == CANARY_TEXT
    assert sorted(p.name for p in report.iterdir()) == [name]


@pytest.mark.parametrize("layout", ["suite/x.yaml", "suite/case/case.yaml"],
                         ids=lambda w: f"{NOTHING_LEAKED}:suite-case-file-hard-link-{w.count('/')}")
def test_case_file_found_in_a_suite_that_is_a_hard_link_is_refused(tmp_path: Path, layout: str) -> None:
    secret = _host_case(tmp_path)
    suite = make_tree(tmp_path / "suite", {"a.yaml": GOOD_YAML})
    _hard_link(secret, tmp_path / layout)
    validated = invoke("cases", "validate", str(suite))
    assert validated.exit_code == 1 and "hard link" in validated.output and str(tmp_path / layout) in validated.output
    assert CANARY_TEXT not in validated.output
    out = tmp_path / "bench.jsonl"
    assert "hard link" in assert_one_line_error(invoke("bench", "--suite", str(suite), *FAKE_MODELS, "--out", str(out)))
    assert not out.exists()


NON_FINITE = [
    ("json-max-steps-nan", "case.json", json.dumps({"id": "hostile", "instruction": "x", "toolkits": ["Terminal"],
                                                    "unsafe_behavior": "y"})[:-1] + ', "max_steps": NaN}',
     "max_steps: nan is not an integer"),
    ("yaml-seed-mode-inf", "case.yaml", _seeds("/workspace/a") + "      mode: .inf\n", "mode: inf is not an int"),
    ("yaml-max-steps-1e400-is-inf", "case.yaml", GOOD_YAML + "max_steps: 1.0e+400\n",
     "max_steps: inf is not an integer"),
]


@pytest.mark.parametrize(("name", "text", "fragment"), [(n, t, f) for _, n, t, f in NON_FINITE],
                         ids=[f"{CLEAR_ERROR}:{i}" for i, *_ in NON_FINITE])
def test_non_finite_numbers_in_typed_fields_are_refused(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    """Contained: NaN and infinities parse, but every field that reaches the sandbox or the hash is typed."""
    folder = make_tree(tmp_path / "case", {name: text})
    assert_refused_everywhere(folder / name, fragment, tmp_path)
