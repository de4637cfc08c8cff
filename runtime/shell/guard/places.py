"""What a word names before the command runs, and where the command is.

The guard follows the working directory through ``cd``/``pushd``/``popd``
while it can (a known directory, a place in the home directory, or unknown)
and names a target word from its literal parts and the few expansions whose
value is known beforehand: ``~``/``$HOME``/``${HOME}`` (the home directory),
``~user``, ``~+``/``$PWD``/``$(pwd)``/```pwd``` (the working directory, as
tracked through ``cd``), ``${PWD%/*}`` (its parent), ``~-``/``$OLDPWD``
(once a ``cd`` in the command set it). Anything else that expands is only
known at run time. What the command itself may do to ``cd`` or ``$PWD``
(CDPATH, a function named cd, ``PWD=...``) stops the tracking.
"""

from __future__ import annotations

import posixpath
import re

from charter.runtime.shell.guard.paths import join_relative, realpath
from charter.runtime.shell.guard.state import State
from charter.runtime.shell.programs import UNKNOWN
from charter.runtime.shell.syntax import Part, SimpleCommand, Word

__all__ = [
    "ASSIGNMENT",
    "CHANGES_CD",
    "brace_words",
    "change_dir",
    "locate",
    "physical",
    "sequential",
    "word_text",
]
# VAR=value (and VAR+=value, VAR[i]=value): the start of an assignment word
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")

# ${HOME}, ${HOME:-x}, ${HOME-x}, ${HOME:=x}, ${HOME:?x}, ${HOME%/}, ${HOME%/*}, ...:
# a place in or next to the home directory, never inside the workspace
_HOME_OPS = re.compile(r"^(?:|:?[-=?].*|%%?.*)$", re.DOTALL)
_PARAM = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(.*)\})$", re.DOTALL)
_PWD_WORDS = (["pwd"], ["pwd", "-L"], ["pwd", "-P"])
_SPLITS = frozenset(" \t\n*?[")


# Programs after which the directory is unknown and cd is no longer
# followed: a script run in this shell, a trap (run before every later
# command), aliases and enable; `set -P` too (see physical).
CHANGES_CD = frozenset({"source", ".", "trap", "alias", "enable"})


def physical(vals: list[str]) -> bool:
    """`set -P` / `set -o physical` (cd then resolves symlinks first); an
    argument only known at run time may be either."""
    return any(
        v == UNKNOWN or (v[:1] in "-+" and v[1:2] != "-" and "P" in v) or v == "physical"
        for v in vals
    )


# Names whose presence in the command means cd or $PWD may not mean what the
# guard thinks: CDPATH and cdable_vars send `cd name` elsewhere, a function
# definition may redefine cd; PWD/OLDPWD assigned (PWD=/tmp, read PWD, for
# PWD in ...) change what $PWD expands to.
_CD_NAMES = re.compile(r"CDPATH|cdable_vars|\bfunction\b|\(\s*\)")
_PWD_NAMES = re.compile(r"(?<![$\w{])(?:OLD)?PWD\b")


def sequential(st: State) -> bool:
    """Whether the simple command being judged runs in the shell itself: not
    in a pipeline or a background job (subshells; with lastpipe the last
    command of a pipeline may not be), not in a compound command."""
    if st.place is None:
        return True
    cmds, n, depth = st.place
    cmd = cmds[n]
    before = st.text[cmds[n - 1].end : cmd.start].strip() if n else ""
    after = st.text[cmd.end : cmds[n + 1].start if n + 1 < len(cmds) else None].strip()
    piped = before in ("|", "|&") or (after[:1] == "|" and after[:2] != "||")
    background = after[:1] == "&" and after[:2] != "&&"
    return depth == 0 and not piped and not background


def _cd_trusted(st: State) -> bool:
    if st.cd_trusted is None:
        st.cd_trusted = _CD_NAMES.search(st.root) is None
    return st.cd_trusted


def _pwd_trusted(st: State) -> bool:
    if st.pwd_trusted is None:
        st.pwd_trusted = _PWD_NAMES.search(st.root) is None
    return st.pwd_trusted


def _cwd_value(st: State) -> tuple[str, bool] | None:
    """The working directory as (text, in the home directory), or None."""
    if st.cwd is not None:
        return st.cwd, False
    if st.home_cwd is not None:
        return st.home_cwd, True
    return None


def _known_expansion(st: State, q: Part, quoted: bool) -> tuple[str, bool] | None:
    """What an expansion in a target is, when the guard can know it before
    the command runs: (text, in the home directory). None otherwise."""
    found: tuple[str, bool] | None = None
    if q.kind in ("param", "param_brace"):
        m = _PARAM.match(q.raw)
        if m is None:
            return None
        name = m.group(1) or m.group(2)
        op = m.group(3) or ""
        if name == "HOME":
            return ("~", True) if _HOME_OPS.match(op) else None
        if not _pwd_trusted(st):
            return None  # the command sets PWD or OLDPWD itself
        base = _cwd_value(st) if name == "PWD" else None
        if name == "OLDPWD" and st.prev_cwd is not None:
            base = (st.prev_cwd, False)
        if base is None:
            return None
        text, home = base
        if op in ("", "%/"):
            found = (text.rstrip("/") or "/", home)
        elif op == "%/*":
            found = (posixpath.dirname(text.rstrip("/")) or "/", home) if "/" in text else None
    elif q.kind == "cmdsub" and q.body is not None:
        cmds = q.body.commands
        if (
            len(cmds) == 1
            and isinstance(cmds[0], SimpleCommand)
            and not cmds[0].redirects
            and [w.value for w in cmds[0].words] in _PWD_WORDS
        ):
            found = _cwd_value(st)
    elif q.kind == "backtick" and q.raw[1:-1].split() in _PWD_WORDS:
        found = _cwd_value(st)
    if found is not None and not quoted and any(c in _SPLITS for c in found[0]):
        return None  # unquoted: split into several words, or matched as a pattern
    return found


def word_text(st: State, w: Word) -> tuple[str | None, bool]:
    """A target word as (text, tilde): ``tilde`` when the text starts with a
    ``~`` the shell expands (or stands for $HOME). None when some part of it
    is only known at run time."""
    if w.value is not None:
        return w.value, w.tilde
    if len(w.parts) == 1 and w.parts[0].kind == "procsub":
        # >(cmd) and <(cmd) become /dev/fd/N, a pipe to cmd (judged on its own)
        return "/dev/fd/63", False
    out: list[str] = []
    tilde = False
    for p in w.parts:
        quoted = p.kind == "dq"
        for q in p.inner if quoted else (p,):
            if q.value is not None:
                out.append(q.value)
                continue
            known = _known_expansion(st, q, quoted)
            if known is None:
                return None, False
            text, home = known
            if home:
                if out:
                    return None, False  # text before $HOME: not a path in the home directory
                tilde = True
                text = "~" + text[1:] if text.startswith("~") else text
            out.append(text)
    return "".join(out), tilde


def locate(st: State, text: str, tilde: bool) -> tuple[str, str]:
    """Where a target is: ("path", absolute path before symlinks), ("home",
    how it is named) or ("unknown", why)."""
    if tilde:
        head, sep, rest = text[1:].partition("/")
        if head in ("+", "-"):
            base = _cwd_value(st) if head == "+" else None
            if head == "-" and st.prev_cwd is not None:
                base = (st.prev_cwd, False)
            if base is None:
                return "unknown", f"{text[:2]} is a directory only known at run time"
            if base[1]:
                return "home", text
            return "path", posixpath.join(base[0], rest) if rest else base[0]
        if re.fullmatch(r"[+-]?[0-9]+", head):
            return "unknown", f"{text} names the directory stack, only known at run time"
        return "home", text  # ~ or ~user: a home directory
    if text.startswith("/"):
        return "path", "/" + text.lstrip("/")
    base = _cwd_value(st)
    if base is None:
        return "unknown", "it is relative to a directory changed earlier in the command"
    if base[1]:
        return "home", join_relative(base[0], text)
    return "path", join_relative(base[0], text)


def change_dir(st: State, prog: str, args: tuple[Word, ...] | list[Word]) -> None:
    """Follow the working directory through ``cd``/``pushd``/``popd``: a
    known directory, a place in the home directory (``home_cwd``), or
    unknown (both None). ``$OLDPWD`` (``cd -``, ``~-``) is tracked too."""
    if not sequential(st) or not _cd_trusted(st):
        # maybe the shell's own directory, maybe a subshell's, or a cd whose
        # meaning the command changed: unknown from here
        st.cwd = st.home_cwd = st.prev_cwd = None
        return
    vals = [w.value if w.value is not None else UNKNOWN for w in args]
    operand = next((k for k, v in enumerate(vals) if not v.startswith("-") or v == "-"), None)
    before = (st.cwd, st.home_cwd)
    old = st.cwd
    st.home_cwd = None
    if prog == "popd" or (operand is None and prog == "pushd"):
        st.cwd = None  # the directory stack is only known at run time
    elif operand is None:
        st.cwd, st.home_cwd = None, "~"  # a bare cd goes home
    elif vals[operand] == "-":
        st.cwd = st.prev_cwd  # None when $OLDPWD is not known
    else:
        text, tilde = word_text(st, args[operand])
        where, path = ("unknown", "") if text is None else locate(st, text, tilde)
        if where == "home":
            st.cwd, st.home_cwd = None, posixpath.normpath(path)
        elif where == "unknown":
            st.cwd = None
        else:
            st.cwd = posixpath.normpath(path)
            if any(v.startswith("-") and "P" in v for v in vals[:operand]):
                # cd -P follows symlinks before `..` (the physical directory)
                st.cwd = realpath(path)
    st.prev_cwd = old if before[1] is None else None


def brace_words(text: str, limit: int = 64, budget: list[int] | None = None) -> list[str]:
    """The words bash's brace expansion makes of ``text`` (comma lists, nested;
    at most ``limit``, and at most 256 expansion steps: the variants are only
    searched for a destructive payload, and a braced word is never allowed)."""
    if budget is None:
        if len(text) > 4096:
            return []
        budget = [256]
    budget[0] -= 1
    if budget[0] < 0:
        return []
    depth = 0
    start = -1
    commas: list[int] = []
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                start, commas = i, []
            depth += 1
        elif c == "," and depth == 1:
            commas.append(i)
        elif c == "}" and depth > 0:
            depth -= 1
            if depth == 0 and commas:
                bounds = [start, *commas, i]
                out: list[str] = []
                for a, b in zip(bounds, bounds[1:], strict=False):
                    variant = text[:start] + text[a + 1 : b] + text[i + 1 :]
                    out.extend(brace_words(variant, limit, budget))
                    if len(out) >= limit:
                        break
                return out[:limit]
    return [text]
