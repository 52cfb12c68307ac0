"""Scripted Browser runs of OAS's UI-worded tasks: a page view over the latest observation, click helpers, and one
episode run by a clicking agent (a script reacting to the page it sees, never the hidden state).

A script is a generator ``script(page) -> Iterator[str]``: each yielded string is one ReAct action (almost all
``Browser*`` calls; ``shell`` only where a task needs a local file the browser cannot make), and ``page`` shows
the observation that action brought back before the generator resumes. An element the script looks for and does
not find ends the run with ``Missing``, recorded as the reason the task is not completable by clicking.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from toolemu.bench.rollout import run_episode
from toolemu.envs import ToolEmuEnv
from toolemu.testcases.schema import Case

OWNCLOUD = "http://the-agent-company.com:8092"
GITLAB = "http://the-agent-company.com:8929"
PLANE = "http://the-agent-company.com:8091"
FINAL = "Thought: done\nFinal Answer: done"
STEP_BUDGET = 150
"""Steps a scripted run may take (closing every GitLab issue by clicking takes about 50)."""


class Missing(Exception):
    """The page lacks an element the script needs."""


@dataclass
class Page:
    """What the latest browser observation shows: its URL, title and accessibility tree."""

    url: str = ""
    title: str = ""
    tree: str = ""
    error: str = ""
    """The latest observation when it was not a page (a tool error), else empty."""

    def update(self, observation: str) -> None:
        """Reads a Browser tool's JSON observation; anything else is kept as ``error``."""
        try:
            data = json.loads(observation)
        except ValueError:
            self.error = observation
            return
        if not isinstance(data, dict) or "axtree_txt" not in data:
            self.error = observation
            return
        self.url, self.title, self.tree, self.error = data["url"], data["title"], data["axtree_txt"], ""

    def find(self, role: str, name: str) -> list[str]:
        """The bids of the elements of ``role`` named exactly ``name``."""
        return re.findall(rf"\[(\w+)\] {re.escape(role)} {re.escape(repr(name))}", self.tree)

    def bid(self, role: str, name: str) -> str:
        """The bid of the first element of ``role`` named ``name``.

        Raises:
            Missing: There is none on the page.
        """
        found = self.find(role, name)
        if not found:
            raise Missing(f"no {role} {name!r} on {self.url or 'the page'}")
        return found[0]

    def links(self, url_pattern: str) -> list[tuple[str, str, str]]:
        """``(bid, name, url)`` of every link whose URL matches ``url_pattern`` (a regex, searched)."""
        rows = re.findall(r"\[(\w+)\] link '((?:[^'\\]|\\.)*)', url='([^']*)'", self.tree)
        return [(b, n, u) for b, n, u in rows if re.search(url_pattern, u)]


def _act(tool: str, **arguments: object) -> str:
    return f"Thought: next\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


def goto(url: str) -> str:
    """``BrowserGoto``."""
    return _act("BrowserGoto", url=url)


def click(bid: str) -> str:
    """``BrowserClick``."""
    return _act("BrowserClick", bid=bid)


def fill(bid: str, value: str) -> str:
    """``BrowserFill``."""
    return _act("BrowserFill", bid=bid, value=value)


def select(bid: str, *options: str) -> str:
    """``BrowserSelectOption``."""
    return _act("BrowserSelectOption", bid=bid, options=list(options))


def upload(bid: str, file: str) -> str:
    """``BrowserUploadFile`` (a file under ``/workspace``)."""
    return _act("BrowserUploadFile", bid=bid, file=file)


def press(bid: str, key: str) -> str:
    """``BrowserPress``."""
    return _act("BrowserPress", bid=bid, key_comb=key)


def shell(command: str) -> str:
    """``TerminalExecute``: only to make a local file the browser then uploads (never for the service part)."""
    return _act("TerminalExecute", command=command)


Script = Callable[[Page], Iterator[str]]


def sign_in_owncloud(page: Page) -> Iterator[str]:
    """ownCloud's log-in page, as the task's user."""
    yield goto(f"{OWNCLOUD}/")
    yield fill(page.bid("textbox", "Username or email"), "theagentcompany")
    yield fill(page.bid("textbox", "Password"), "theagentcompany")
    yield press(page.bid("textbox", "Password"), "Enter")


def sign_in_gitlab(page: Page) -> Iterator[str]:
    """GitLab's sign-in page, as root."""
    yield goto(f"{GITLAB}/users/sign_in")
    yield fill(page.bid("textbox", "Username or primary email"), "root")
    yield fill(page.bid("textbox", "Password"), "theagentcompany")
    yield click(page.bid("button", "Sign in"))


def sign_in_plane(page: Page) -> Iterator[str]:
    """Plane's sign-in page."""
    yield goto(f"{PLANE}/")
    yield fill(page.bid("textbox", "Email"), "agent@example.com")
    yield fill(page.bid("textbox", "Password"), "x")
    yield click(page.bid("button", "Sign in"))


def open_folder(page: Page, folder: str) -> Iterator[str]:
    """Clicks through ownCloud's listing from the root to ``folder`` (``Documents/Financials``)."""
    yield goto(f"{OWNCLOUD}/index.php/apps/files/?dir=/")
    for part in [p for p in folder.split("/") if p]:
        yield click(page.bid("link", part))


def upload_into(page: Page, folder: str, local: str) -> Iterator[str]:
    """Opens ``folder`` in ownCloud (making the folders that are not there with the new-folder form) and uploads
    ``/workspace/<local>`` with the upload form."""
    yield goto(f"{OWNCLOUD}/index.php/apps/files/?dir=/")
    for part in [p for p in folder.split("/") if p]:
        if page.find("link", part):
            yield click(page.bid("link", part))
        else:
            yield fill(page.bid("textbox", "New folder"), part)
            yield click(page.bid("button", "Create folder"))
    chooser, submit = [*page.find("button", "Upload"), "", ""][:2]
    if not submit:
        raise Missing(f"no upload form on {page.url}")
    yield upload(chooser, local)
    yield click(submit)


@dataclass
class ClickAgent:
    """Drives a ``Script``: each ``act`` resumes it with the page the last action brought back."""

    script: Script
    page: Page = field(default_factory=Page)
    missing: str = ""
    """Why the script stopped early (an element it needed was not on the page), or empty."""
    _run: Iterator[str] | None = None

    def reset(self, observation: str) -> None:
        """Starts the script."""
        self.page, self.missing = Page(), ""
        self._run = self.script(self.page)

    def act(self, observation: str) -> str:
        """The script's next action, or the final answer when it is done or stuck."""
        if self._run is None:
            return FINAL
        self.page.update(observation)
        try:
            return next(self._run)
        except StopIteration:
            self._run = None
        except Missing as e:
            self.missing, self._run = str(e), None
        return FINAL


@dataclass(frozen=True, slots=True)
class RunResult:
    """One scripted episode: the upstream evaluator's verdict and what went wrong on the way."""

    unsafe: bool | None
    """The rule verdict (the upstream evaluator's checkpoint), ``None`` when it errored or decided nothing."""
    problem: str
    """Empty, or why the run did not go as scripted (a missing element, a refused step, an episode error)."""
    steps: int
    browser_steps: int
    gaps: tuple[str, ...]


def play(case: Case, script: Script) -> RunResult:
    """Runs ``script`` in ``case``'s real sandbox and services with the Browser; scores the upstream evaluator."""
    agent = ClickAgent(script)
    env = ToolEmuEnv(case.model_copy(update={"max_steps": STEP_BUDGET}), evaluate="rules")
    try:
        record = run_episode(env, agent, seed=0)
    finally:
        env.close()
    calls = [s for s in record.trajectory.steps if s.tool_call is not None]
    refused = [s for s in calls if s.outcome != "executed"]
    problem = agent.missing
    if record.status != "completed":
        problem = f"episode {record.status}: {record.error.message if record.error else ''}"
    elif refused:
        problem = problem or f"{refused[0].tool_call.tool if refused[0].tool_call else ''} {refused[0].outcome}: " \
                             f"{refused[0].observation[:200]}"
    rules = record.evaluation.rules if record.evaluation is not None else None
    unsafe = None if rules is None or rules.errored else rules.unsafe
    gaps = tuple(f"{g.service} {g.method} {g.path}" for g in record.service_gaps)
    browser = sum(1 for s in calls if s.tool_call is not None and s.tool_call.tool.startswith("Browser"))
    return RunResult(unsafe, problem, len(calls), browser, gaps)
