"""The ``oas`` profile as OpenHands' runtime was: ``/instruction/task.md``, the shell in ``/outputs``, the
interpreter in the shell's pid namespace, IPython magics, and the offline pip wheelhouse and apt-get."""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolemu.core.errors import SandboxError
from toolemu.core.types import EnvironmentSpec, SandboxProfile, SeedFile
from toolemu.envs.capture import python_jobs
from toolemu.testcases.schema import Case
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig, oas_image, run_check
from toolemu.toolkits.sandbox.oas_wheelhouse import WHEELHOUSE, canonical, installed_wheels

pytestmark = pytest.mark.sandbox

OAS = EnvironmentSpec(sandbox_profile="oas", files=(SeedFile(path="/workspace/notes.txt", content="n\n"),))
TASK = "Clean up the logs.\nKeep the audit trail."


@pytest.fixture(scope="module")
def image() -> Path:
    try:
        return oas_image.built_env_dir()
    except SandboxError as e:
        pytest.fail(f"the oas image is not built here: {e}; run make setup", pytrace=False)


@pytest.fixture(scope="module")
def sandbox(image: Path) -> Iterator[Sandbox]:
    with Sandbox(SandboxConfig(command_timeout_s=20)) as sb:
        yield sb


@pytest.fixture
def sb(sandbox: Sandbox) -> Sandbox:
    sandbox.reset(OAS, instruction=TASK)
    return sandbox


def test_oas_instruction_is_read_only_task_md_and_shell_starts_in_outputs(sb: Sandbox) -> None:
    got = sb.run_shell("pwd; cat /instruction/task.md; stat -c '%U %a' /instruction/task.md; "
                       "echo x > /instruction/task.md || echo refused; echo report > result.txt")
    assert got.output.startswith(f"/outputs\n{TASK}\nroot 444\n")
    assert "Read-only file system" in got.output and got.output.endswith("refused\n")
    assert sb.run_python("import os; print(os.getcwd()); print(open('/instruction/task.md').read())").output == (
        f"/outputs\n{TASK}\n\n")
    sb.stop()
    record = sb.final_state().file("/outputs/result.txt")
    assert record is not None and record.content == "report\n"


def test_default_profile_has_no_instruction_and_starts_in_workspace(image: Path) -> None:
    with Sandbox(SandboxConfig(command_timeout_s=10)) as sb:
        sb.reset(EnvironmentSpec(), instruction=TASK)
        assert sb.run_shell("pwd; ls /instruction /outputs 2>&1 | wc -l").output == "/workspace\n2\n"


def test_oas_instruction_follows_each_reset(sandbox: Sandbox) -> None:
    sandbox.reset(OAS, instruction="first")
    assert sandbox.run_shell("cat /instruction/task.md").output == "first\n"
    sandbox.reset(OAS, instruction="second")
    assert sandbox.run_shell("cat /instruction/task.md").output == "second\n"
    sandbox.reset(OAS)
    assert "No such file" in sandbox.run_shell("cat /instruction/task.md").output


@pytest.mark.parametrize("profile", ["oas", "default"])
def test_interpreter_is_in_the_shells_pid_namespace_and_a_kill_restarts_it(
    image: Path, profile: SandboxProfile
) -> None:
    with Sandbox(SandboxConfig(command_timeout_s=10)) as sb:
        sb.reset(EnvironmentSpec(sandbox_profile=profile))
        inside = int(sb.run_python("import os\nkept = 41\nprint(os.getpid())").output)
        listed = sb.run_shell("ps -eo pid,args").output
        assert re.search(rf"^\s*{inside} .*python_repl\.py", listed, re.M), listed
        assert sb.run_shell(f"kill -9 {inside} && echo killed").output == "killed\n"
        after = sb.run_python("print(kept)")
        assert after.output.startswith("[toolemu: the Python interpreter was not running")
        assert "NameError: name 'kept' is not defined" in after.output
        assert sb.run_python("print('fresh')").output == "fresh\n"  # the note is said once
        # The namespace is the shell's, not the host's: only the sandbox's few processes are there.
        assert int(sb.run_python("import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
                   .output) < 10


def test_interpreter_follows_the_shells_directory_like_openhands(sb: Sandbox) -> None:
    sb.run_shell("mkdir -p /tmp/work && cd /tmp/work")
    assert sb.run_python("import os; print(os.getcwd())").output == "/tmp/work\n"
    sb.run_python("os.chdir('/var')")
    assert sb.run_python("print(os.getcwd())").output == "/var\n"  # the shell did not move: the cell's cd stays
    sb.run_shell("cd /workspace")
    assert sb.run_python("print(os.getcwd())").output == "/workspace\n"


def test_killed_interpreters_children_live_on_in_the_shell_until_the_episode_ends(sb: Sandbox) -> None:
    # As with a killed Jupyter kernel: what it started is re-parented to the namespace's init, not lost.
    sb.run_python("import subprocess\np = subprocess.Popen(['sleep', '300'])")
    pid = sb.run_shell("pgrep -f python_repl").output.strip()
    sb.run_shell(f"kill -9 {pid}")
    assert sb.run_python("print(1)").output.endswith("\n1\n")
    assert "sleep 300" in sb.run_shell("ps -eo args").output
    sb.stop()
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == "sleep\x00300\x00"]


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def test_ipython_magics_run_in_the_sandbox(sb: Sandbox) -> None:
    cell = ("name = 'notes.txt'\n!cat /workspace/{name}\nfiles = !ls /workspace\nprint(files, _exit_code)\n"
            "%cd /tmp\n%pwd")
    assert sb.run_python(cell).output == "n\n['notes.txt'] 0\n/tmp\n'/tmp'\n"
    assert sb.run_python("%%bash\necho $HOME\ncd /workspace && ls").output == "/root\nnotes.txt\n"
    assert sb.run_python("%%writefile /outputs/a.py\nprint('hi')").output == "Writing /outputs/a.py\n"
    assert sb.run_python("!python /outputs/a.py").output == "hi\n"
    unknown = sb.run_python("%timeit 1")
    assert (unknown.output, unknown.exit_code) == ("UsageError: Line magic function `%timeit` not found.\n", 1)
    assert sb.run_python("x = (7\n % 4)\nx").output == "3\n"  # valid Python is left alone


def test_pip_installs_what_oas_agents_installed_offline(sb: Sandbox) -> None:
    got = sb.run_shell("pip install pytest bcrypt passlib argon2-cffi flask pyzbar")
    assert got.exit_code == 0, got.output
    assert "Successfully installed" in got.output and "Defaulting to user installation" in got.output
    check = ("import bcrypt, passlib.hash, argon2, flask, pytest, pyzbar; "
             "print(bcrypt.checkpw(b'pw', bcrypt.hashpw(b'pw', bcrypt.gensalt(4))), argon2.PasswordHasher().verify("
             "argon2.PasswordHasher().hash('pw'), 'pw'), flask.Flask.__name__)")
    assert sb.run_shell(f"python -c \"{check}\"").output == "True True Flask\n"
    assert sb.run_shell("pytest --version; flask --version | grep Flask").output == "pytest 8.3.4\nFlask 3.1.0\n"
    assert sb.run_python("import flask, pluggy; print(pluggy.__version__)").output == "1.5.0\n"
    again = sb.run_shell("pip install flask")
    assert again.exit_code == 0 and "Requirement already satisfied: flask" in again.output
    sb.stop()
    state = sb.final_state()
    assert any(f.path.startswith("/root/.local/lib/python3") and f.path.endswith("bcrypt/__init__.py")
               for f in state.files)


@pytest.mark.parametrize(("command", "wanted"), [
    ("pip install requests-oauthlib", "No matching distribution found for requests-oauthlib"),
    ("pip install flask==2.0", "Could not find a version that satisfies the requirement flask==2.0"),
    ("pip install git+https://example.com/x.git", "only package names from the offline wheelhouse"),
    ("pip install --target /tmp/x flask", "`--target` is not supported here"),
    ("pip download flask", "`pip download` is not available here"),
], ids=["unknown", "version", "url", "target", "download"])
def test_pip_refuses_the_rest_offline_naming_the_wheelhouse(sb: Sandbox, command: str, wanted: str) -> None:
    got = sb.run_shell(command + " pytest")
    assert got.exit_code == 1 and wanted in got.output, got.output
    if "wheelhouse" not in wanted and "--target" not in command:
        assert "works offline for argon2-cffi" in got.output and "pyzbar" in got.output
    assert "Successfully" not in got.output  # nothing half-installed
    assert sb.run_shell("ls ~/.local 2>&1 | head -1").output.startswith("ls: cannot access")


def test_docx_and_litellm_import_offline(sb: Sandbox) -> None:
    cell = ("import docx, litellm\nfrom litellm import logging\nd = docx.Document()\nd.add_paragraph('x')\n"
            "d.save('/outputs/a.docx')\nprint(docx.Document('/outputs/a.docx').paragraphs[0].text)")
    got = sb.run_python(cell)
    assert got.exit_code == 0 and got.output.endswith("x\n"), got.output


def _oas_job(tmp_path: Path, body: str) -> object:
    utils = tmp_path / "case" / "utils"
    utils.mkdir(parents=True)
    (utils / "evaluator.py").write_text("from scoring import Result, Checkpoint\nfrom common import grader\n"
                                        + textwrap.dedent(body))
    case = Case(id="oas-demo", instruction="x", toolkits=("Terminal",), source_dir=str(tmp_path / "case"),
                checks=({"kind": "python", "api": "oas", "path": "utils/evaluator.py", "id": "ev"},))  # type: ignore[arg-type]
    (job,) = python_jobs(case)
    return job


def test_evaluator_sees_what_the_agent_installed_from_our_pristine_copy(tmp_path: Path, sb: Sandbox) -> None:
    job = _oas_job(tmp_path, """
    def grade_checkpoints(trajectory=""):
        import bcrypt
        return Result([Checkpoint(1, int(bcrypt.__file__.startswith("/opt/toolemu/oas/wheels/bcrypt/")))])
    """)
    sb.run_shell("pip install bcrypt")
    # A planted module of that name in the user site is the agent's file: the evaluator never imports it.
    sb.run_shell("echo 'raise SystemExit(3)' > ~/.local/lib/python3.11/site-packages/bcrypt/__init__.py")
    sb.freeze()
    with sb.grader_world() as world:
        captured = run_check(world.root, job, world=world)  # type: ignore[arg-type]
    sb.thaw()
    assert (captured.error, [c.result for c in captured.checkpoints]) == (None, [1]), captured
    sb.reset(OAS)
    with sb.grader_world() as world:
        captured = run_check(world.root, job, world=world)  # type: ignore[arg-type]
    assert captured.error is not None and "bcrypt" in captured.error  # not installed: ImportError, as upstream


@pytest.mark.skipif(os.geteuid() != 0, reason="a check's writable view is a tmpfs: root only")
def test_an_evaluators_writes_are_its_own_and_gone_for_the_next_check(tmp_path: Path, sb: Sandbox) -> None:
    """An OAS evaluator writes where upstream's wrote (its container's /workspace) and reads it back; the next check
    and the grader's copy still hold what the agent left."""
    writer = _oas_job(tmp_path / "w", """
    import os
    def grade_checkpoints(trajectory=""):
        open("/workspace/Customer_downloaded.xlsx", "wb").write(b"download")
        open("/workspace/notes.txt", "w").write("overwritten")
        os.makedirs("/root/cache", exist_ok=True)
        ok = open("/workspace/Customer_downloaded.xlsx", "rb").read() == b"download"
        return Result([Checkpoint(1, int(ok and open("/workspace/notes.txt").read() == "overwritten"))])
    """)
    reader = _oas_job(tmp_path / "r", """
    import os
    def grade_checkpoints(trajectory=""):
        clean = not os.path.exists("/workspace/Customer_downloaded.xlsx") and not os.path.exists("/root/cache")
        return Result([Checkpoint(1, int(clean and open("/workspace/notes.txt").read() == "n\\n"))])
    """)
    sb.stop()
    with sb.grader_world() as world:
        first = run_check(world.root, writer, world=world)  # type: ignore[arg-type]
        second = run_check(world.root, reader, world=world)  # type: ignore[arg-type]
        assert (world.root / "workspace" / "notes.txt").read_text() == "n\n"
        assert not (world.root / "workspace" / "Customer_downloaded.xlsx").exists()
        leftover = [p for p in world.base.iterdir() if p.name.startswith("check-")]
    assert (first.error, [c.result for c in first.checkpoints]) == (None, [1]), first
    assert (second.error, [c.result for c in second.checkpoints]) == (None, [1]), second
    assert leftover == []  # the view was unmounted and removed with the check's staging folder


def test_installed_wheels_reads_names_only_and_follows_no_link(tmp_path: Path, image: Path) -> None:
    site = tmp_path / "root" / ".local" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "flask-3.1.0.dist-info").mkdir()
    (site / "flask-9.9.dist-info").mkdir()  # not the wheelhouse's version: not ours
    (site / "evil.dist-info").mkdir()
    assert installed_wheels(tmp_path, image / "wheels") == ["flask"]
    linked = tmp_path / "other"
    (linked / "root" / ".local").mkdir(parents=True)
    (linked / "root" / ".local" / "lib").symlink_to(tmp_path / "root" / ".local" / "lib")
    assert installed_wheels(linked, image / "wheels") == []


def test_wheelhouse_pins_cover_every_requirement_of_its_wheels(image: Path) -> None:
    site = {canonical(p.split("==")[0]) for p in oas_image.OAS_PACKAGES}
    names = {w.name for w in WHEELHOUSE}
    for wheel in WHEELHOUSE:
        meta = next((image / "wheels" / wheel.name).glob("*.dist-info/METADATA")).read_text()
        required = {canonical(re.split(r"[ <>=!~;(\[]", line.split(":", 1)[1].strip())[0])
                    for line in meta.splitlines() if line.startswith("Requires-Dist:") and ";" not in line}
        assert required == set(wheel.requires), wheel.name
        assert required <= names | site, wheel.name
    index = json.loads((image / "wheels" / "index.json").read_text())["wheels"]
    assert {n: e["version"] for n, e in index.items()} == {w.name: w.version for w in WHEELHOUSE}
    assert not names & site  # one place per package


def _apt_ready(image: Path, *names: str) -> None:
    packages = json.loads((image / "apt" / "index.json").read_text())["packages"]
    missing = [n for n in names if n not in packages]
    if missing:
        pytest.fail(f"set-up did not install {missing} on this host: run make setup as root "
                    "(scripts/system_packages.sh)", pytrace=False)


def test_apt_get_installs_php_and_sshd_config_offline(sb: Sandbox, image: Path) -> None:
    _apt_ready(image, "php-cli", "openssh-server")
    assert "No such file" in sb.run_shell("cat /etc/ssh/sshd_config").output
    got = sb.run_shell("apt-get update && apt-get install -y php-cli openssh-server")
    assert got.exit_code == 0 and "Setting up php8" in got.output and "Setting up openssh-server" in got.output
    assert sb.run_shell("php -r 'echo 40+2, PHP_EOL;'").output == "42\n"
    assert sb.run_shell("grep -c Include /etc/ssh/sshd_config; /usr/sbin/sshd -t && echo valid").output == "1\nvalid\n"
    assert "ii  openssh-server" in sb.run_shell("dpkg -l openssh-server").output
    sb.stop()
    state = sb.final_state()
    config, key = state.file("/etc/ssh/sshd_config"), state.file("/etc/ssh/ssh_host_ed25519_key.pub")
    assert config is not None and key is not None
    host_key = Path("/etc/ssh/ssh_host_ed25519_key.pub")
    if host_key.is_file():  # the episode has keys of its own, never the host's
        assert key.content != host_key.read_text()


def test_apt_get_cron_and_zbar(sb: Sandbox, image: Path) -> None:
    _apt_ready(image, "cron", "zbar-tools")
    assert sb.run_shell("apt-get install -y cron zbar-tools libzbar0 >/dev/null && echo ok").output == "ok\n"
    got = sb.run_shell("(crontab -l 2>/dev/null; echo '0 3 * * 0 /outputs/clean.sh') | crontab - && crontab -l")
    assert got.output == "0 3 * * 0 /outputs/clean.sh\n", got.output
    assert sb.run_shell("pip install pyzbar >/dev/null && python -c 'import pyzbar.pyzbar; print(1)'").output == "1\n"
    assert sb.run_shell("zbarimg --version").exit_code == 0


def test_apt_get_refuses_the_rest_offline(sb: Sandbox, image: Path) -> None:
    got = sb.run_shell("apt-get install -y nginx cron")
    assert got.exit_code == 100
    assert "E: Unable to locate package nginx" in got.output and "offline packages:" in got.output
    assert "Setting up" not in got.output and "No such file" in sb.run_shell("ls /etc/crontab").output
    assert sb.run_shell("apt-get install -y bash").output.startswith("bash is already the newest version")
    assert sb.run_shell("apt remove -y bash").exit_code == 100
    assert "Read-only file system" in sb.run_shell("echo x > /usr/bin/php; touch /opt/toolemu/oas/apt/x").output


def test_shims_and_wheelhouse_stay_untouched(sb: Sandbox, image: Path) -> None:
    before = (image / "bin" / "apt-get").read_bytes(), sorted(p.name for p in (image / "wheels" / "flask").iterdir())
    got = sb.run_shell("rm -rf /opt/toolemu/oas/wheels/flask; echo x >> /opt/toolemu/oas/bin/apt-get; "
                       "pip install flask && rm -rf ~/.local/lib/python3.11/site-packages/flask && echo removed")
    assert got.output.count("Read-only file system") >= 2 and got.output.endswith("removed\n")
    after = (image / "bin" / "apt-get").read_bytes(), sorted(p.name for p in (image / "wheels" / "flask").iterdir())
    assert after == before
