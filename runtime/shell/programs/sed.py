"""sed: the script language, read the way GNU sed 4.9 reads it.

A sed script is a program: ``e`` runs a shell command, ``w``/``W`` and the
``w`` flag of ``s`` write files (opened, and so truncated, while the script
is still being compiled), ``r``/``R`` read other files, and the ``e`` flag of
``s`` runs the pattern space. A string search for those letters is not
enough: GNU sed ends a label at a blank, ``;``, ``}`` or ``#``
(``:x e id`` is a label and then an ``e`` command), a file name runs to the
end of the line (``w out;p`` writes ``out;p``), text after ``a``/``i``/``c``
may continue into the next ``-e`` script, and a ``[...]`` bracket
expression hides the delimiter of an ``s`` command. :func:`parse_sed` follows
GNU sed's own compiler step by step, sharing block and pending-text state
across ``-e`` scripts as sed does.

Where GNU sed would reject a script, sed runs nothing (but ``w`` files seen
before the error are already open): the guard still asks, because its own
reading might be the one that is wrong. ``--posix`` only removes extensions,
so reading every script as GNU sed reads it covers it. With ``--sandbox`` sed
itself refuses ``e``, ``r``, ``w`` and their kin, so any script is safe.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from charter.runtime.errors import CharterError
from charter.runtime.shell.options import Spec, read_args
from charter.runtime.shell.programs.base import Checked, Issue, one

__all__ = ["SedCommand", "SedError", "exec_commands", "parse_sed", "sed"]

_BLANK = " \t"
_SPACE = " \t\n\v\f\r"
_END = None  # end of one -e script


# SedCommand is a NamedTuple (a tenth of a frozen dataclass's cost to define
# at start-up); the parser's mutable state compares by identity.
class SedCommand(NamedTuple):
    """One compiled command: its letter, its label/file name/text, and for
    ``s`` its flags."""

    name: str
    arg: str = ""
    flags: str = ""
    script: int = 0  # which script (of several -e) it came from


class SedError(CharterError):
    """sed would refuse the script. ``partial`` holds the commands compiled
    before the error (a ``w`` among them has already opened its file)."""

    def __init__(self, message: str, script: int) -> None:
        super().__init__(message)
        self.script = script
        self.partial: list[SedCommand] = []


@dataclass(eq=False)
class _Source:
    text: str
    index: int
    pos: int = 0

    def get(self) -> str | None:
        if self.pos < len(self.text):
            c = self.text[self.pos]
            self.pos += 1
            return c
        return _END

    def unget(self, c: str | None) -> None:
        if c is not _END:  # sed's savchar ignores the end, too
            self.pos -= 1

    def nonblank(self) -> str | None:
        c = self.get()
        while c is not _END and c in _BLANK:
            c = self.get()
        return c

    def fail(self, message: str) -> SedError:
        return SedError(message, self.index)


@dataclass(eq=False)
class _State:
    commands: list[SedCommand]
    blocks: int = 0
    pending_text: bool = False


def parse_sed(scripts: Sequence[str]) -> list[SedCommand]:
    """The commands of ``scripts`` (the ``-e`` scripts in order), or
    :class:`SedError` where GNU sed would refuse them."""
    state = _State([])
    try:
        for n, script in enumerate(scripts):
            _compile(_Source(script, n), state)
        if state.blocks:
            raise SedError("unmatched `{'", len(scripts) - 1)
    except SedError as err:
        err.partial = state.commands
        raise
    return state.commands


def _compile(src: _Source, st: _State) -> None:
    if st.pending_text:
        _read_text(src, st, "\n")
    while True:
        c = src.get()
        while c is not _END and (c == ";" or c in _SPACE):
            c = src.get()
        if c is _END:
            return
        addressed = _address(src, c)
        if addressed:
            c = src.nonblank()
            if c == ",":
                if not _address(src, src.nonblank()):
                    raise src.fail("unexpected `,'")
                c = src.nonblank()
        if c == "!":
            c = src.nonblank()
            if c == "!":
                raise src.fail("multiple `!'s")
        if c is _END:
            raise src.fail("missing command")
        _command(src, st, c, addressed)


def _address(src: _Source, c: str | None) -> bool:
    if c == "/" or c == "\\":
        delim = src.get() if c == "\\" else c
        _delimited(src, delim, regex=True)
        c = src.nonblank()
        while c in ("I", "M"):
            c = src.nonblank()
        src.unget(c)
        return True
    if c is not _END and c.isdigit() and c.isascii():
        _integer(src, c)
        c = src.nonblank()
        if c == "~":
            _integer(src, src.nonblank())
        else:
            src.unget(c)
        return True
    if c in ("+", "~"):
        _integer(src, src.nonblank())
        return True
    return c == "$"


def _integer(src: _Source, c: str | None) -> None:
    while c is not _END and c.isascii() and c.isdigit():
        c = src.get()
    src.unget(c)


def _delimited(src: _Source, delim: str | None, *, regex: bool) -> None:
    """Skip one delimited part of an address, ``s`` or ``y`` command."""
    if delim is _END or delim == "\n" or not delim.isascii():
        # a multibyte delimiter is refused by sed in a UTF-8 locale and read
        # byte by byte in the C locale: ask rather than guess the locale
        raise src.fail("unsupported delimiter")
    stops = _stops(delim, regex)
    text = src.text
    while True:
        # jump to the next character that matters (the scan is the same as
        # reading one character at a time, only faster)
        m = stops.search(text, src.pos)
        if m is None:
            raise src.fail("unterminated address regex, `s' or `y' command")
        src.pos = m.end()
        c = m.group()
        if c == "\n":
            raise src.fail("unterminated address regex, `s' or `y' command")
        if c == delim:
            return
        if c == "\\":
            if src.get() is _END:
                raise src.fail("unterminated `s' command")
        elif c == "[" and regex:
            if _bracket(src) != "]":
                raise src.fail("unterminated bracket expression")


@functools.lru_cache(maxsize=64)
def _stops(delim: str, regex: bool) -> re.Pattern[str]:
    """The characters that end or change a delimited part: the delimiter, a
    backslash, a newline and (in a regex) an opening bracket."""
    chars = {delim, "\\", "\n"} | ({"["} if regex else set())
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")


def _bracket(src: _Source) -> str | None:
    """Skip a bracket expression after its ``[``, the way sed's compiler
    does (a delimiter inside ``[...]`` does not end the regex, and ``[:``,
    ``[.``, ``[=`` open classes that a ``]`` does not close). Returns the
    character that ended it: ``]`` when it closed."""
    c = src.get()
    if c == "^":
        c = src.get()
    if c == "]":
        c = src.get()
    state = 0
    opener = ""
    while True:
        if c is _END or c == "\n":
            return c
        if c in ".:=":
            if state == 1:
                opener, state = c, 2
                c = src.get()
                continue
            if state == 2 and c == opener:
                state = 3
                c = src.get()
                continue
        elif c == "[":
            if state == 0:
                state = 1
            c = src.get()
            continue
        elif c == "]":
            if state in (0, 1):
                return c
            if state == 3:
                state = 0
        state &= ~1
        c = src.get()


def _label(src: _Source) -> str:
    out: list[str] = []
    c = src.nonblank()
    while c is not _END and c != "\n" and c not in _BLANK and c not in ";}#":
        out.append(c)
        c = src.get()
    src.unget(c)
    return "".join(out)


def _filename(src: _Source) -> str:
    out: list[str] = []
    c = src.nonblank()
    while c is not _END and c != "\n":
        out.append(c)
        c = src.get()
    return "".join(out)


def _end_of_command(src: _Source) -> None:
    c = src.nonblank()
    if c in ("}", "#"):
        src.unget(c)
    elif c is not _END and c not in "\n;":
        raise src.fail("extra characters after command")


def _read_text(src: _Source, st: _State, lead: str | None) -> str:
    """The text of ``a``/``i``/``c``/``e``: to the end of the line, a
    backslash carrying it over a newline; a backslash at the very end of a
    script carries it into the next ``-e`` script."""
    out: list[str] = []
    if lead is _END:
        st.pending_text = True
        return ""
    st.pending_text = True
    if lead != "\n":
        out.append(lead)
    c = src.get()
    while c is not _END and c != "\n":
        if c == "\\":
            c = src.get()
            if c is _END:
                return "".join(out)  # pending: continues in the next script
            out.append("\\")
        out.append(c)
        c = src.get()
    st.pending_text = False
    return "".join(out)


_SIMPLE = frozenset("=dDFgGhHnNpPzx")


def _command(src: _Source, st: _State, c: str, addressed: bool) -> None:
    add = st.commands.append
    n = src.index
    if c == "#":
        if addressed:
            raise src.fail("comments don't accept any addresses")
        d: str | None = c
        while d is not _END and d != "\n":
            d = src.get()
        return
    if c == "v":
        _label(src)
        return
    if c == "{":
        st.blocks += 1
        add(SedCommand("{", script=n))
        return
    if c == "}":
        if not st.blocks:
            raise src.fail("unexpected `}'")
        if addressed:
            raise src.fail("`}' doesn't want any addresses")
        _end_of_command(src)
        st.blocks -= 1
        add(SedCommand("}", script=n))
        return
    if c in "aice":
        lead = src.nonblank()
        if c == "e" and (lead is _END or lead == "\n"):
            add(SedCommand("e", script=n))
            return
        if lead is _END:
            raise src.fail("expected \\ after `a', `c' or `i'")
        if lead == "\\":
            lead = src.get()
        else:
            src.unget(lead)
            lead = "\n"
        add(SedCommand(c, _read_text(src, st, lead), script=n))
        return
    if c == ":":
        if addressed:
            raise src.fail(": doesn't want any addresses")
        label = _label(src)
        if not label:
            raise src.fail('":" lacks a label')
        add(SedCommand(":", label, script=n))
        return
    if c in "bTt":
        add(SedCommand(c, _label(src), script=n))
        return
    if c in "qQlL":
        d = src.nonblank()
        if d is not _END and d.isascii() and d.isdigit():
            _integer(src, d)
        else:
            src.unget(d)
        _end_of_command(src)
        add(SedCommand(c, script=n))
        return
    if c in _SIMPLE:
        _end_of_command(src)
        add(SedCommand(c, script=n))
        return
    if c in "rRwW":
        name = _filename(src)
        if not name:
            raise src.fail("missing filename in r/R/w/W commands")
        add(SedCommand(c, name, script=n))
        return
    if c == "s":
        delim = src.get()
        _delimited(src, delim, regex=True)
        _delimited(src, delim, regex=False)
        add(SedCommand("s", *_subst_flags(src), script=n))
        return
    if c == "y":
        delim = src.get()
        _delimited(src, delim, regex=False)
        _delimited(src, delim, regex=False)
        _end_of_command(src)
        add(SedCommand("y", script=n))
        return
    raise src.fail(f"unknown command: `{c}'")


def _subst_flags(src: _Source) -> tuple[str, str]:
    """(the ``w`` file name, the flags) of an ``s`` command."""
    flags: list[str] = []
    while True:
        c = src.nonblank()
        if c is not _END and c in "iImMepg":
            flags.append(c)
        elif c == "w":
            flags.append("w")
            name = _filename(src)
            if not name:
                raise src.fail("missing filename in r/R/w/W commands")
            return name, "".join(flags)
        elif c is not _END and c.isascii() and c.isdigit():
            _integer(src, c)
        elif c in ("}", "#"):
            src.unget(c)
            return "", "".join(flags)
        elif c is _END or c in "\n;":
            return "", "".join(flags)
        elif c == "\r" and src.get() == "\n":
            return "", "".join(flags)
        else:
            raise src.fail("unknown option to `s'")


# --- the command line --------------------------------------------------------------------------

_SPEC = Spec(
    text="el",
    path="f",
    long_text=("expression", "line-length"),
    long_path=("file",),
    long_optional=("in-place",),
    long_flags=(
        "binary",
        "debug",
        "follow-symlinks",
        "help",
        "null-data",
        "zero-terminated",
        "posix",
        "quiet",
        "silent",
        "regexp-extended",
        "sandbox",
        "separate",
        "unbuffered",
        "version",
    ),
)
_KNOWN_SHORT = frozenset("nrsuzEbiefl")
# Output files sed names itself: writing to them is printing.
_STD_OUT = frozenset({"/dev/stdout", "/dev/stderr"})


def sed(args: Sequence[str]) -> Checked:
    r = read_args(args, _SPEC)
    for o in r.opts:
        if o.name.startswith("-i") or o.name == "--in-place":
            scripted = any(g.name in ("-e", "--expression", "-f", "--file") for g in r.opts)
            files = r.operands if scripted else r.operands[1:]
            return one(
                "in-place-edit",
                o.index,
                "sed -i rewrites the files it reads; print the result instead of editing "
                "in place to run unprompted",
                writes=tuple((k, args[k]) for k in files),
            )
        if o.name.startswith("--") and o.name[2:] not in (
            *_SPEC.long_text,
            *_SPEC.long_path,
            *_SPEC.long_flags,
        ):
            return one("sed-script", o.index, f"sed {o.name} is not an option Charter knows")
        if not o.name.startswith("--") and o.name[1] not in _KNOWN_SHORT:
            return one("sed-script", o.index, f"sed {o.name} is not an option Charter knows")
    sandbox = r.given("--sandbox") is not None
    scripts: list[tuple[int, str]] = []
    for o in r.opts:
        if o.name in ("-e", "--expression"):
            scripts.append((o.value_index if o.value_index is not None else o.index, o.value or ""))
        elif o.name in ("-f", "--file") and not sandbox:
            return one(
                "exec-option",
                o.index,
                "sed -f reads its script from a file Charter cannot see; give the script "
                "with -e (or add --sandbox) to run unprompted",
            )
    text = set(r.option_words)
    operands = list(r.operands)
    if not any(o.name in ("-e", "--expression", "-f", "--file") for o in r.opts):
        if not operands:
            return one("sed-script", -1, "sed without a script")
        scripts.append((operands[0], args[operands[0]]))
        text.add(operands[0])
        operands = operands[1:]
    paths = list(r.path_values())
    if sandbox:
        # sed refuses e, r, R, w, W and the e and w flags of s: nothing to read
        return Checked((), frozenset(text), tuple(paths))
    try:
        commands = parse_sed([s for _, s in scripts])
    except SedError as err:
        issue = _issues(err.partial, scripts, paths)
        writes = _writes(err.partial, scripts)
        if issue is not None:
            return Checked((issue,), frozenset(text), tuple(paths), writes=writes)
        return one(
            "sed-script",
            scripts[err.script][0],
            f"sed would reject this script ({err}); fix it to run unprompted",
            writes=writes,
        )
    issue = _issues(commands, scripts, paths)
    return Checked(
        () if issue is None else (issue,),
        frozenset(text),
        tuple(paths),
        writes=_writes(commands, scripts),
    )


def exec_commands(args: Sequence[str]) -> list[tuple[int, str]]:
    """(argument index, command line) of each ``e COMMAND`` of the script,
    which sed runs through a shell. Only the commands read before an error
    count (sed runs none of a script it rejects; they are judged anyway)."""
    if not any("e" in a for a in args):
        return []
    r = read_args(args, _SPEC)
    if r.given("--sandbox") is not None:
        return []
    scripts: list[tuple[int, str]] = [
        (o.value_index if o.value_index is not None else o.index, o.value or "")
        for o in r.opts
        if o.name in ("-e", "--expression")
    ]
    if not any(o.name in ("-e", "--expression", "-f", "--file") for o in r.opts) and r.operands:
        scripts.append((r.operands[0], args[r.operands[0]]))
    if not scripts:
        return []
    try:
        commands: Sequence[SedCommand] = parse_sed([t for _, t in scripts])
    except SedError as err:
        commands = err.partial
    return [(scripts[c.script][0], c.arg) for c in commands if c.name == "e" and c.arg.strip()]


def _writes(
    commands: Sequence[SedCommand], scripts: list[tuple[int, str]]
) -> tuple[tuple[int, str | None], ...]:
    """Every file the script's w and W commands and s///w flags write (all of
    them, not only the first: each is confined)."""
    return tuple(
        (scripts[cmd.script][0], cmd.arg)
        for cmd in commands
        if (cmd.name in "wW" or (cmd.name == "s" and "w" in cmd.flags)) and cmd.arg not in _STD_OUT
    )


def _issues(
    commands: Sequence[SedCommand], scripts: list[tuple[int, str]], paths: list[tuple[int, str]]
) -> Issue | None:
    """The first command that executes or writes; files read are added to ``paths``."""
    for cmd in commands:
        where = scripts[cmd.script][0]
        if cmd.name == "e" or (cmd.name == "s" and "e" in cmd.flags):
            what = "the e command" if cmd.name == "e" else "the s command's e flag"
            return Issue(
                "exec-option",
                where,
                f"sed: {what} runs a shell command; use a script that only prints to run "
                "unprompted",
            )
        if (cmd.name in "wW" or (cmd.name == "s" and "w" in cmd.flags)) and (
            cmd.arg not in _STD_OUT
        ):
            return Issue(
                "embedded-write",
                where,
                f"sed: the w command writes the file {cmd.arg!r}; use a script that only "
                "prints to run unprompted",
            )
        if cmd.name in "rR" and cmd.arg != "/dev/stdin":
            paths.append((where, cmd.arg))
    return None
