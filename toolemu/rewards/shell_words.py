"""Reads shell commands as acts: program, flags and arguments of each simple command, in any order.

A command line is split into simple commands at ``;``, ``&``, ``&&``, ``||``, ``|`` and new lines; the
wrappers ``sudo``, ``env``, ``nohup``, ``time``, ``nice``, ``timeout``, ``command``, ``exec``, ``xargs`` are
looked through to the program they run, and ``bash -c``/``sh -c`` scripts, ``$(...)``/backquote
substitutions and ``find ... -exec`` commands are read as commands too. Nothing is executed; a line that does
not tokenise (an unclosed quote) is split on white space instead, so a malformed command is still read.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import NamedTuple

from toolemu.rewards.globs import glob_match
from toolemu.testcases.check_types import CommandSpec

_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "\n", "|&", ";;", "(", ")"})
_WRAPPERS = frozenset({"sudo", "env", "nohup", "time", "nice", "ionice", "timeout", "command", "exec", "xargs",
                       "builtin", "stdbuf", "doas", "chroot"})
_KEYWORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until", "!", "{", "}", "done", "fi", "esac"})
_HEADERS = frozenset({"for", "case", "select", "function"})
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
_SUBST = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
_MAX_DEPTH = 4


class SimpleCommand(NamedTuple):
    """One program run: its base name, its flags (short clusters split) and its other arguments."""

    program: str
    path: str
    """The program as written (``/tmp/fm.sh``, ``./run``)."""
    flags: frozenset[str]
    args: tuple[str, ...]
    piped_to: str | None = None
    """The program this command's output is piped into (``curl ... | sh``: ``sh``)."""


def _tokens(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return line.replace("\n", " ; ").split()


def _flags(token: str) -> set[str]:
    if token.startswith("--"):
        return {token.split("=", 1)[0]}
    if len(token) > 2 and token[1].isalpha():
        return {token} | {f"-{ch}" for ch in token[1:] if ch.isalpha()}
    return {token}


def _unwrap(words: list[str]) -> list[str]:
    """Drops variable assignments and wrappers (with their options) before the real program."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in _HEADERS:
            return []
        if word in _KEYWORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
            i += 1
            continue
        if posixpath.basename(word) in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            if i < len(words) and posixpath.basename(words[i - 1]) == "timeout" and words[i][:1].isdigit():
                i += 1
            continue
        break
    return words[i:]


def simple_commands(line: str, depth: int = 0) -> Iterator[SimpleCommand]:
    """Every simple command in ``line``, substitutions and nested shells included.

    Examples:
        >>> [c.program for c in simple_commands("cd /tmp && sudo rm -rf ~/.ssh; echo $(whoami)")]
        ['whoami', 'cd', 'rm', 'echo', 'whoami']
    """
    if depth > _MAX_DEPTH:
        return
    for match in _SUBST.finditer(line):
        yield from simple_commands(match.group(1) or match.group(2) or "", depth + 1)
    segments: list[tuple[list[SimpleCommand], str]] = []
    words: list[str] = []
    for token in [*_tokens(line), ";"]:
        if token in _SEPARATORS or set(token) <= set(";&|()"):
            if words:
                segments.append((list(_expand(_unwrap(words), depth)), token))
            words = []
        else:
            words.append(token)
    for index, (commands, separator) in enumerate(segments):
        # The segment's own command comes last (nested ones first); a pipe feeds it to the next segment's.
        following = segments[index + 1][0] if index + 1 < len(segments) else []
        if separator in ("|", "|&") and commands and following:
            commands[-1] = commands[-1]._replace(piped_to=following[-1].program)
        yield from commands


def _expand(words: list[str], depth: int) -> Iterator[SimpleCommand]:
    if not words:
        return
    program = posixpath.basename(words[0])
    rest = words[1:]
    if program in _SHELLS and "-c" in rest:
        index = rest.index("-c")
        if index + 1 < len(rest):
            yield from simple_commands(rest[index + 1], depth + 1)
    if program == "find" and ("-exec" in rest or "-execdir" in rest):
        key = "-exec" if "-exec" in rest else "-execdir"
        start = rest.index(key) + 1
        end = next((i for i in range(start, len(rest)) if rest[i] in ("\\;", ";", "+")), len(rest))
        yield from _expand(_unwrap(rest[start:end]), depth + 1)
    flags: set[str] = set()
    args: list[str] = []
    for word in rest:
        if word.startswith("-") and len(word) > 1:
            flags |= _flags(word)
        else:
            args.append(word)
    yield SimpleCommand(program, words[0], frozenset(flags), tuple(args))


def _expand_home(arg: str, home: str) -> str:
    for prefix in ("~/", "$HOME/", "${HOME}/"):
        if arg.startswith(prefix):
            return home.rstrip("/") + "/" + arg[len(prefix):]
    return home if arg in ("~", "$HOME", "${HOME}") else arg


def _program_matches(pattern: str, command: SimpleCommand) -> bool:
    """A base name (``rm``), a base-name glob (``*.sh``), or a path glob (``/tmp/*``) against the path written."""
    if "/" in pattern:
        return glob_match(pattern, command.path)
    return fnmatch.fnmatchcase(command.program, pattern)


def command_matches(spec: CommandSpec, command: SimpleCommand, home: str) -> bool:
    """Whether one simple command is what ``spec`` describes."""
    if spec.program and not any(_program_matches(p, command) for p in spec.program):
        return False
    if any(flag not in command.flags for flag in spec.flags):
        return False
    if spec.piped_to and not (command.piped_to and any(fnmatch.fnmatchcase(command.piped_to, p)
                                                       for p in spec.piped_to)):
        return False
    if spec.args:
        args = [_expand_home(a, home) for a in command.args]
        # An argument the shell would expand (``backups/*``) targets the folder before its first glob character.
        heads = [a[:min(a.index(c) for c in "*?[" if c in a)] for a in args if any(c in a for c in "*?[")]
        args += [posixpath.dirname(h) + "/" for h in heads if "/" in h and posixpath.dirname(h)]
        return any(glob_match(pattern, arg) for pattern in spec.args for arg in args)
    return True


def line_matches(spec: CommandSpec, line: str, home: str) -> SimpleCommand | None:
    """The first simple command of ``line`` that ``spec`` describes, or ``None``."""
    return next((c for c in simple_commands(line) if command_matches(spec, c, home)), None)
