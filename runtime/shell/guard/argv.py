"""One simple command's words: the program and what its arguments do.

:func:`judge_argv` takes off reserved words and inline assignments, then
judges the program: a destructive payload (``rm -rf /``) is denied whatever
runs it; privilege (``sudo``) is refused; wrappers (``env``, ``xargs``,
``timeout``), shells (``bash -c``), ``eval``, ``trap`` and ``find -exec``
have their inner command judged too; a read-only program from the table in
:mod:`charter.runtime.shell.programs` is checked by its own rule, and
anything else asks unless a ``[safe_commands]`` entry covers it. The files
the command names are judged by :mod:`.paths`, the files it writes by
:mod:`.confine`.

A new program rule goes in :mod:`charter.runtime.shell.programs` (the
table); this module only changes for a new way of running another command.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import overload

from charter.runtime.shell.guard.confine import (
    confine_write,
    embedded_write,
    unnameable,
    writer_targets,
)
from charter.runtime.shell.guard.paths import (
    check_trees,
    client_settings_args,
    generic_args,
    git_repository,
)
from charter.runtime.shell.guard.places import (
    ASSIGNMENT,
    CHANGES_CD,
    brace_words,
    change_dir,
    physical,
    sequential,
    word_text,
)
from charter.runtime.shell.guard.state import MAX_TOKENS, State, clip
from charter.runtime.shell.options import scan
from charter.runtime.shell.policy import PERSON_ONLY_RULES, SafeShellCommand
from charter.runtime.shell.programs import (
    ASK_PROGRAMS,
    READ_ONLY,
    RESERVED_OPAQUE,
    RESERVED_PREFIX,
    SHELLS,
    UNKNOWN,
    WRAPPERS,
    destructive,
    may_destroy,
    unwrap,
)
from charter.runtime.shell.programs.runs import command_strings, variable_command
from charter.runtime.shell.report import DYNAMIC, JudgedCommand
from charter.runtime.shell.syntax import SimpleCommand, Subshell, Word
from charter.runtime.shell.writers import PROGRAMS as WRITER_PROGRAMS

__all__ = ["assignments", "is_assignment", "judge_argv"]


def assignments(st: State, words: tuple[Word, ...] | list[Word], i: int = 0) -> int:
    """Report the VAR=value words from ``words[i]`` on, where a simple
    command starts (also after a reserved word: `if a=1 ls`); return the
    index of the first word that is not one."""
    while i < len(words) and is_assignment(words[i]):
        w = words[i]
        st.add(
            "ask",
            "inline-assignment",
            (w.start, w.end),
            "an inline VAR=value assignment changes the command's environment (PATH, "
            "LD_PRELOAD and similar change what runs); drop it to run unprompted",
        )
        if w.value is not None:
            # PAGER=CMD, GIT_SSH_COMMAND=CMD: a command line a program runs
            name, _eq, value = w.value.partition("=")
            text = variable_command(name.rstrip("+"), value)
            if text is not None:
                st.walk().nested(st, text, (w.start, w.end))
        i += 1
    return i


def is_assignment(w: Word) -> bool:
    first = w.parts[0]
    # (an assignment's first fragment holds its `=`: most words have none)
    return first.kind == "lit" and "=" in first.raw and ASSIGNMENT.match(first.raw) is not None


def _control_structure(name: str) -> str:
    return (
        f"shell control structures ({name} ...) are never allowed automatically; "
        "run the commands one by one"
    )


def _program_asks(
    st: State,
    words: tuple[Word, ...] | list[Word],
    rule: str,
    message: str,
    text_args: frozenset[int] = frozenset(),
) -> None:
    """The program word itself needs approval; its arguments are still read,
    so a credential path among them is reported too."""
    w0 = words[0]
    st.add("ask", rule, (w0.start, w0.end), message)
    generic_args(st, words[1:], text_args)


_ARITHMETIC_EVAL = frozenset(
    {"[[", "test", "[", "let", "declare", "typeset", "local", "readonly", "export", "printf"}
)


def _report(st: State, words: tuple[Word, ...] | list[Word], first: int = 0) -> None:
    """Tell judge() about the simple command ``words[first:]`` (only called
    when it asked)."""
    assert st.seen is not None
    st.seen.commands.append(
        JudgedCommand(
            tuple(
                DYNAMIC if w.value is None or w.glob or w.brace or w.tilde else w.value
                for w in itertools.islice(words, first, None)
            ),
            (words[first].start, words[-1].end),
        )
    )
    name = words[first].value
    if name is not None and posixpath.basename(name) in _CHANGES_READING:
        # what runs after it is read differently (aliases, options, a
        # sourced file's functions) or runs code the text does not show
        st.seen.opaque = True


# Builtins after which the rest of the text can mean something else than it
# reads, or that run code kept elsewhere (a file, a later trap).
_CHANGES_READING = frozenset(
    {
        "set",
        "shopt",
        "alias",
        "unalias",
        "enable",
        "builtin",
        "hash",
        "source",
        ".",
        "trap",
        "mapfile",
        "readarray",
        "complete",
        "compgen",
        "fc",
        "bind",
    }
)


def judge_argv(st: State, words: tuple[Word, ...] | list[Word], *, run_by: bool = False) -> None:
    # Reserved words that only prefix a command (`if`, `then`, `do`, `{`,
    # `!`, ...) are taken off in a loop, not by recursion, so a long run of
    # them costs linear time and no stack.
    if not words:
        return
    if st.seen is not None:
        _report(st, words)
    first = 0
    while True:
        if first >= len(words):
            if first:
                # Only reserved words (`!`, `! !`): bash runs nothing, but
                # other shell parsers read it as an error. Where readers
                # disagree the guard asks rather than allow.
                last = words[first - 1]
                st.add(
                    "ask",
                    "control-structure",
                    (words[0].start, last.end),
                    f"{clip(' '.join(w.raw for w in words[:first]))} with no command after it",
                )
            return
        w0 = words[first]
        prefix = w0.value
        if w0.quoted or prefix not in RESERVED_PREFIX or prefix is None:
            break
        if prefix != "!":
            st.add("ask", "control-structure", (w0.start, w0.end), _control_structure(prefix))
        first = assignments(st, words, first + 1)
    if first:
        # what bash runs once the reserved words are taken off
        words = words[first:]
        if st.seen is not None:
            _report(st, words)
    name = w0.value
    if name is None:
        # it may be cd, or eval, or a function: the directory is unknown after it
        st.restore((None, None, None))
        _program_asks(
            st,
            words,
            "dynamic-command",
            f"the program name {clip(w0.raw)} is only known at run time; "
            "name the program literally",
        )
        return
    if name in _ARITHMETIC_EVAL:
        # bash evaluates these arguments as arithmetic, expanding `$(...)`
        # even inside quotes: test -v 'a[$(cmd)]' runs cmd
        for w in words[1:]:
            if w.value is not None and ("$(" in w.value or "`" in w.value):
                st.walk().salvage(st, w.value, (w.start, w.end), opaque=False)
                if st.seen is not None:
                    st.walk().report_embedded(st, w.value)
    if not w0.quoted:
        if name == "coproc":
            # coproc CMD and coproc NAME { CMD; } run CMD in the background
            st.add("ask", "control-structure", (w0.start, w0.end), _control_structure(name))
            _spawn_argv(st, words[1:])
            if len(words) > 2 and words[2].value == "{" and not words[2].quoted:
                _spawn_argv(st, words[3:])
            return
        if name in RESERVED_OPAQUE:
            _program_asks(
                st,
                words,
                "control-structure",
                _control_structure(name),
                frozenset(range(len(words) - 1)),
            )
            return
    if w0.glob or w0.brace:
        _program_asks(
            st,
            words,
            "filename-expansion",
            f"the program name {clip(w0.raw)} is expanded by the shell; name the program literally",
        )
        return
    prog = name.rsplit("/", 1)[-1] if "/" in name else name
    if "/" in name or w0.tilde:
        st.add(
            "ask",
            "non-bare-executable",
            (w0.start, w0.end),
            f"{name} runs a program by its path; only bare program names from PATH run unprompted",
        )
    args = words[1:]
    if run_by and prog not in WRAPPERS and prog not in _PRIVILEGE and _over_budget(st, words):
        return
    # read on demand: a wrapper reads only its own options, so a chain of
    # thousands of wrappers costs linear time, not a list of the rest per level

    def span_of(index: int) -> tuple[int, int]:
        w = args[index] if 0 <= index < len(args) else w0
        return (w.start, w.end)

    if may_destroy(prog):  # (for any other program destructive() is None)
        sym = _Lazy(args, partial(_destroys, st))
        dcwd = st.cwd if st.cwd is not None else st.home_cwd
        issue = destructive(prog, sym, dcwd, st.ws)
        # (what a wrapper runs is judged on its own, braces and all)
        for k, w in enumerate(args) if prog not in WRAPPERS else ():
            # rm -rf {/,x} is rm -rf / x: try each word the braces make
            for variant in brace_words(sym[k]) if w.brace and issue is None else ():
                issue = destructive(prog, [*sym[:k], variant, *sym[k + 1 :]], dcwd, st.ws)
                if issue is not None:
                    break
        if issue is not None:
            st.add("deny", issue.rule, span_of(issue.index), issue.message)
    if prog in _PRIVILEGE:
        _privilege(st, prog, w0, args, _Lazy(args, _value))
        return
    if prog in WRITER_PROGRAMS:
        writer_targets(st, prog, args)

    looks_up = prog == "command" and bool(args) and args[0].value in ("-v", "-V")
    if prog in WRAPPERS and not looks_up:
        _wrapper(st, prog, w0, args, _Lazy(args, _value), span_of)
        return
    vals = [w.value if w.value is not None else UNKNOWN for w in args]
    if prog in SHELLS:
        _shell(st, prog, w0, args, vals)
        return
    if prog == "eval":
        st.add(
            "ask",
            "shell-eval",
            (w0.start, w0.end),
            "eval runs its arguments as a new command line; run that command directly",
        )
        texts = [_script_text(w) for w in args]
        if st.seen is not None and any(w.value is None for w in args):
            st.seen.opaque = True  # the script is only known when it runs
        if args and all(t is not None for t in texts):
            st.walk().nested(
                st,
                " ".join(t or "" for t in texts),
                (args[0].start, args[-1].end),
                partial(_after_eval, st, sequential(st)),
            )
        else:
            st.restore((None, None, None))  # it may change directory to anywhere
        return
    if prog == "trap":
        _trap_action(st, args)
    if prog == "find":
        _find_exec(st, args, vals)
    for index, text in command_strings(prog, vals):
        # tar --to-command=CMD, git -c core.pager=CMD, ssh -o ProxyCommand=CMD:
        # a command line the program hands to a shell, judged like bash -c's
        st.walk().nested(st, text, span_of(index))

    safe = _safe_match(st.policy.safe, name, vals)
    checker = READ_ONLY.get(prog) if "/" not in name else None
    text_args: frozenset[int] = frozenset()
    paths: tuple[tuple[int, str], ...] = ()
    writes_too = False  # a read-only program used in a way that may write
    if checker is not None:
        checked = checker(vals)
        writes_too = bool(checked.issues)
        if prog == "git" and not checked.issues:
            # (a git shape that already asks needs no look at the repository)
            git_repository(st, w0, vals)
        for iss in checked.issues:
            st.add(
                "deny" if iss.decision == "deny" else "ask",
                iss.rule,
                span_of(iss.index),
                iss.message,
            )
        text_args = checked.text_args
        paths = checked.paths
        for index, target in checked.writes:
            # A file named inside the program's language or options is
            # confined like a redirect's target, whatever the flags.
            tw = args[index] if 0 <= index < len(args) else None
            if tw is not None and tw.tilde and target == tw.value:
                # a whole argument the shell expands (`git archive -o ~/x`):
                # the file is where bash's expansion leads, not `./~/x`
                wtext, wtilde = word_text(st, tw)
                confine_write(
                    st, wtext, wtilde, tw, (tw.start, tw.end), redirect=False, kind="write"
                )
            else:
                embedded_write(st, prog, span_of(index), target)
        if prog in _EMBEDDED_WRITERS:
            unknown = next((k for k, v in enumerate(vals) if v == UNKNOWN), None)
            if unknown is not None:
                # Its program text or an option only known at run time may
                # name a file it writes (awk "$P", git diff $X as --output=F).
                embedded_write(st, prog, span_of(unknown), None)
        if checked.walk is not None:
            check_trees(st, prog, w0, args, checked.walk)
        if not st.policy.defaults and safe is None:
            st.add(
                "ask",
                "unknown-command",
                (w0.start, w0.end),
                f"the built-in read-only table is off ([safe_commands] defaults = false) "
                f"and no [safe_commands] entry covers {prog}",
            )
    elif safe is not None:
        pass
    elif prog in ASK_PROGRAMS:
        rule, why = ASK_PROGRAMS[prog]
        st.add(
            "ask",
            rule,
            (w0.start, w0.end),
            f"{prog} {why}; it needs approval (a [safe_commands] entry can pre-approve "
            "a program that does not write)",
        )
    else:
        st.add(
            "ask",
            "unknown-command",
            (w0.start, w0.end),
            f"Charter does not know {clip(prog)}; it needs approval, or a [safe_commands] entry",
        )
    if safe is not None:
        st.safe_hits.append(safe.source)
    if (checker is None or writes_too) and prog not in ("cd", "pushd", "popd"):
        # A program that may write: the arguments that name a client's own
        # settings ask a person (a read-only program reading them does not).
        client_settings_args(st, args, text_args)
    if prog in ("cd", "pushd", "popd"):
        change_dir(st, prog, args)
    elif prog in CHANGES_CD or (prog == "set" and physical(vals)):
        # a script run in this shell, a trap, an option: any of them may
        # change directory or what cd does, so the guard stops following it
        st.restore((None, None, None))
        st.cd_trusted = False
    generic_args(st, args, text_args, paths, probe=safe is not None and checker is None)


def _value(w: Word) -> str:
    return w.value if w.value is not None else UNKNOWN


class _Lazy(Sequence[str]):
    """``fn`` of each word, worked out when read (and remembered)."""

    __slots__ = ("_fn", "_got", "_words")

    def __init__(self, words: Sequence[Word], fn: Callable[[Word], str]) -> None:
        self._words = words
        self._fn = fn
        self._got: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._words)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self._words)))]
        if i < 0:
            i += len(self._words)
        got = self._got.get(i)
        if got is None:
            got = self._got[i] = self._fn(self._words[i])
        return got


def _after_eval(st: State, in_shell: bool, sub: State) -> None:
    if sub.cd_trusted is False:
        st.cd_trusted = False  # eval 'trap ...' is this shell's trap
    if in_shell:
        st.restore(sub.location())  # eval's cd is the shell's own
    else:
        st.restore((None, None, None))


def _spawn_argv(st: State, words: tuple[Word, ...] | list[Word]) -> None:
    """Judge ``words``, a command that the one being judged runs (a wrapper's,
    sudo's, find -exec's), as a job of its own: a chain of wrappers is walked
    with no depth of Python stack. The job stands where this command stands."""
    st.spawn(partial(_argv_job, st, words, st.place))


def _argv_job(
    st: State,
    words: tuple[Word, ...] | list[Word],
    place: tuple[tuple[SimpleCommand | Subshell, ...], int, int] | None,
) -> None:
    st.place = place
    judge_argv(st, words, run_by=True)
    st.place = None


def _over_budget(st: State, words: tuple[Word, ...] | list[Word]) -> bool:
    """Charge the token budget for a command that another one runs: its
    words were counted once when the line was read, but a runner's arguments
    are read again by each command nested in them (``find . -exec find .
    -exec ...``), so without this charge such a chain would cost time
    quadratic in its length. Out of budget is an answer no flag lifts."""
    st.budget[0] -= len(words)
    if st.budget[0] >= 0:
        return False
    st.budget[0] = 0
    st.ungrantable = True
    st.add(
        "ask",
        "too-long",
        (words[0].start, words[-1].end),
        f"the commands run by other commands here are more than the guard reads "
        f"({MAX_TOKENS} words in all); it needs approval every time",
    )
    if st.seen is not None:
        st.seen.opaque = True
    return True


def _script_text(w: Word) -> str | None:
    """A word that is run as a command line (bash -c, eval), with its
    variables left as `$NAME` text for the inner reading (`bash -c "rm -rf
    $HOME"` is judged as `rm -rf $HOME`); None when it holds a substitution."""
    if w.value is not None:
        return w.value
    out: list[str] = []
    for p in w.parts:
        for q in p.inner if p.kind == "dq" else (p,):
            if q.value is not None:
                out.append(q.value)
            elif q.kind in ("param", "param_brace") and "$(" not in q.raw and "`" not in q.raw:
                out.append(q.raw)
            else:
                return None
    return "".join(out)


# ${HOME:-x}, ${HOME-x}, ${HOME:?msg}, ${HOME:=x}, ${HOME%/}: the home directory when set
_HOME_FORM = re.compile(r"^\$\{HOME(?::?[-=?][^}]*|%%?/?)\}$")


# Programs whose language or options can name a file they write: an argument
# only known at run time may be one (see checked.writes for the known ones).
_EMBEDDED_WRITERS = frozenset(
    {"sed", "awk", "gawk", "mawk", "nawk", "busybox-awk", "git", "sort", "uniq", "find", "tree",
     "xxd", "file"}
)  # fmt: skip


def _destroys(st: State, w: Word) -> str:
    """The value a destructive-payload check sees for ``w``: the text the
    guard can name, with the working directory's own spellings (``$PWD``,
    ``$(pwd)``, `` `pwd` ``) resolved as for any write target, so ``rm -rf
    "$PWD"`` is the workspace it names; else the symbolic form."""
    if w.value is not None:
        return w.value
    text, _tilde = word_text(st, w)
    return text if text is not None else _symbolic(w)


def _symbolic(w: Word) -> str:
    """The word's value, with ``$HOME``/``${HOME}`` written as ``~`` so the
    destructive-payload checks see ``rm -rf "$HOME"`` for what it is."""
    if w.value is not None:
        return w.value
    out: list[str] = []
    for p in w.parts:
        pieces = p.inner if p.kind == "dq" else (p,)
        for q in pieces:
            if q.value is not None:
                out.append(q.value)
            elif (q.raw in ("$HOME", "${HOME}") or _HOME_FORM.match(q.raw)) and not out:
                out.append("~")
            else:
                return UNKNOWN
    return "".join(out)


# Programs that run a command as another user (root, most often). An agent
# never acquires privileges: with a command or without one (a root shell,
# an edit as root), they are refused; the inner command is still judged so
# that the message names the worst of it.
_PRIVILEGE = frozenset({"sudo", "sudoedit", "doas", "su", "runuser", "pkexec", "run0"})


def _privilege(
    st: State, prog: str, w0: Word, args: tuple[Word, ...] | list[Word], vals: Sequence[str]
) -> None:
    # the inner command first: a refusal of its own (sudo rm -rf /) names the verdict
    if prog in WRAPPERS:
        u = unwrap(prog, vals)
        if u.split_string is not None:
            st.walk().nested(st, u.split_string, (w0.start, args[-1].end if args else w0.end))
        if u.inner_start is not None:
            _spawn_argv(st, args[u.inner_start :])
    elif prog != "sudoedit":
        # pkexec [--user U] CMD, run0 [OPTIONS] CMD: the first operand
        s = scan(
            vals,
            "uDg" if prog == "run0" else "",
            ("user", "machine", "chdir", "group", "property", "description", "slice", "setenv"),
            permute=False,
        )
        if s.operands:
            _spawn_argv(st, args[s.operands[0] :])
    st.spawn(
        partial(
            st.add,
            "deny",
            "privilege",
            (w0.start, w0.end),
            f"{prog} runs a command with another user's privileges; Charter never runs that, "
            "whatever the permissions or flags",
        )
    )


def _wrapper(
    st: State,
    prog: str,
    w0: Word,
    args: tuple[Word, ...] | list[Word],
    vals: Sequence[str],
    span_of: object,
) -> None:
    u = unwrap(prog, vals)
    st.add(
        "ask",
        "wrapper",
        (w0.start, w0.end),
        f"{prog} runs another command; run that command directly to have it judged on its own",
    )
    if prog == "xargs" and u.inner_start is not None:
        inner = args[u.inner_start].value
        if inner is not None and posixpath.basename(inner) in WRITER_PROGRAMS:
            # xargs adds the names it reads from its input to the command's
            # arguments: what the writer changes is only known at run time
            unnameable(
                st,
                (w0.start, args[-1].end),
                False,
                f"xargs runs {posixpath.basename(inner)} on names it reads from its input",
            )
    for iss in u.issues:
        w = args[iss.index] if 0 <= iss.index < len(args) else w0
        st.add("ask", iss.rule, (w.start, w.end), iss.message)
    if u.split_string is not None:
        st.walk().nested(st, u.split_string, (w0.start, args[-1].end if args else w0.end))
    if u.inner_start is not None:
        generic_args(st, args[: u.inner_start], frozenset())
        _spawn_argv(st, args[u.inner_start :])
    else:
        generic_args(st, args, frozenset())


def _shell(
    st: State, prog: str, w0: Word, args: tuple[Word, ...] | list[Word], vals: list[str]
) -> None:
    # `+o opt`, `+O opt` and `+e` are options to a shell just like their `-` forms
    s = scan(
        [("-" + v[1:]) if v[:1] == "+" else v for v in vals],
        "oO",
        ("rcfile", "init-file"),
        permute=False,
    )
    has_c = any(o.name == "-c" for o in s.opts)
    if st.seen is not None and (not has_c or not s.operands or args[s.operands[0]].value is None):
        st.seen.opaque = True  # a script file, standard input, or a script built at run time
    if not has_c:
        st.add(
            "ask", "executes-code", (w0.start, w0.end), f"{prog} runs a script; it needs approval"
        )
        generic_args(st, args, frozenset())
        return
    st.add(
        "ask",
        "shell-eval",
        (w0.start, w0.end),
        f"{prog} -c runs a new command line; run that command directly",
    )
    if not s.operands:
        return
    script_word = args[s.operands[0]]
    script = _script_text(script_word)
    if script is None:
        return  # its expansions are already findings
    st.walk().nested(st, script, (script_word.start, script_word.end))


def _trap_action(st: State, args: tuple[Word, ...] | list[Word]) -> None:
    """``trap ACTION SIGNAL...`` keeps ACTION to run later in this shell (on
    exit, on a signal): it is judged as a command line now, so a destructive
    action is refused like the same command typed directly. (``trap`` itself
    asks anyway: what runs, and when, is decided by signals.)"""
    rest = list(args)
    while rest and rest[0].value in ("-l", "-p", "-lp", "-pl"):
        rest = rest[1:]
    if rest and rest[0].value == "--":
        rest = rest[1:]
    if len(rest) < 2:
        return  # listing, or resetting one signal: no action to run
    text = _script_text(rest[0])
    if text is None:
        if st.seen is not None:
            st.seen.opaque = True  # the action is only known when it runs
        return
    if text.strip() in ("", "-"):
        return
    st.walk().nested(st, text, (rest[0].start, rest[0].end))


def _find_exec(st: State, args: tuple[Word, ...] | list[Word], vals: list[str]) -> None:
    """Judge the commands behind find -exec/-execdir/-ok/-okdir."""
    i = 0
    while i < len(vals):
        if vals[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(vals) and vals[j] not in (";", "+"):
                j += 1
            mark = [0]
            st.spawn(partial(_mark, st, mark))
            _spawn_argv(st, args[i + 1 : j])
            st.spawn(partial(_only_refusals_since, st, mark))
            i = j
        i += 1


def _mark(st: State, mark: list[int]) -> None:
    mark[0] = len(st.findings)


def _only_refusals_since(st: State, mark: list[int]) -> None:
    # find's inner command's own asks are already covered by find's
    # exec-option finding; only its refusals and the asks only a person can
    # answer (what it writes cannot be named) add information
    st.findings[mark[0] :] = [
        f for f in st.findings[mark[0] :] if f.decision == "deny" or f.rule in PERSON_ONLY_RULES
    ]


def _safe_match(
    entries: tuple[SafeShellCommand, ...], name: str, vals: list[str]
) -> SafeShellCommand | None:
    for e in entries:
        words = e.words
        if e.exact and len(vals) != len(words) - 1:
            continue
        if words[0] == name and len(vals) >= len(words) - 1:
            if all(vals[k] == words[k + 1] for k in range(len(words) - 1)):
                return e
    return None
