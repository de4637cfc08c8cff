"""Walking the command tree: every simple command, every word expansion,
nested scripts and the salvage of what does not parse.

:func:`judge_text` parses one text and judges each simple command in it
(through :func:`~.argv.judge_argv` and :func:`~.confine.judge_redirect`).
Text that bash runs as a command line of its own (``bash -c``, ``eval``,
backticks, a here-string fed to a shell, ``echo CMD | sh``) is judged by
:func:`nested`, its findings pointing at the argument that carries it. Text
that does not parse is searched piece by piece by :func:`salvage`, which
keeps only refusals: a guess can make a command denied, never allowed.

The program rules (:mod:`.argv`) and the redirect rules (:mod:`.confine`)
call back into this module for nested text through the state they are given
(``st.walk()``, a :class:`~.state.Walker` that is this module): they never
import it, so the guard's modules import one another without a cycle.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from functools import partial

from charter.runtime.shell.guard.argv import assignments, judge_argv
from charter.runtime.shell.guard.confine import judge_redirect
from charter.runtime.shell.guard.state import MAX_TOKENS, PARSE_COST, State, clip
from charter.runtime.shell.lexer import expansions_in_heredoc
from charter.runtime.shell.policy import Write
from charter.runtime.shell.programs import SHELLS
from charter.runtime.shell.report import Collector
from charter.runtime.shell.syntax import (
    ParseResult,
    Part,
    Program,
    ShellSyntaxError,
    ShellTooLong,
    SimpleCommand,
    Subshell,
    Word,
    parse,
)

__all__ = ["heredoc_body", "judge_program", "judge_text", "nested", "report_embedded", "salvage"]
# A function whose body pipes it into itself. Linear on any text: a name
# starts at a name boundary and is never backtracked into (a possessive
# run), and the body is bounded (a bound only limits what can be *denied*:
# a function definition never parses, so it is never allowed).
_FORK_BOMB = re.compile(
    r"(?<![^\s(){};|&<>])([^\s(){};|&<>]++)\s*+\(\s*+\)\s*+\{[^}]{0,400}?"
    r"\1\s*\|\s*&?\s*\1(?![^\s;&|}])"
)
# the same with the `function NAME` keyword form, which parses (as an opaque
# control structure), so it is looked for in every command line
_FORK_BOMB_KW = re.compile(
    r"\bfunction\s++([^\s(){};|&<>]++)\s*+(?:\(\s*+\)\s*+)?\{[^}]{0,400}?"
    r"\1\s*\|\s*&?\s*\1(?![^\s;&|}])"
)
_SALVAGE_SPLIT = re.compile(r"[;&|(){}\n`]|\$\(")
_NAMES_SOMETHING = re.compile(r"[^\W_]")

_EXPANSION_RULE = {
    "param": ("parameter-expansion", "expands a variable whose value is only known at run time"),
    "param_brace": (
        "parameter-expansion",
        "expands a variable whose value is only known at run time",
    ),
    "dollar": ("parameter-expansion", "has an unquoted `$` the shell may expand"),
    "arith": ("arithmetic-expansion", "computes a value with arithmetic expansion"),
    "legacy_arith": ("arithmetic-expansion", "computes a value with $[...] arithmetic"),
    "cmdsub": ("command-substitution", "runs a command substitution"),
    "backtick": ("command-substitution", "runs a backtick command substitution"),
    "procsub": ("process-substitution", "runs a process substitution"),
}


def judge_text(st: State) -> None:
    result = parse(st.text, max_tokens=max(0, st.budget[0]))
    st.budget[0] -= result.tokens + PARSE_COST
    if isinstance(result.error, ShellTooLong) or st.budget[0] < 0:
        st.budget[0] = 0
        st.ungrantable = True
        st.add(
            "ask",
            "too-long",
            (0, len(st.text)),
            f"the command has more than {MAX_TOKENS} tokens, more than the guard reads; "
            "it needs approval every time",
        )
        if st.seen is not None:
            st.seen.opaque = True
        return
    if result.spliced is not None:
        # judge what bash reads: the text with its line continuations
        # removed (offsets are mapped back to the input by _evaluate)
        st.text = result.text
        st.spliced = result
    if result.program is None:
        err = result.error
        pos = err.pos if err is not None else 0
        why = err.message if err is not None else "unknown error"
        st.add(
            "ask",
            "unparseable",
            (pos, min(pos + 1, len(st.text))),
            f"Charter cannot parse this command ({why}); it needs approval",
        )
        if st.seen is not None:
            st.seen.opaque = True
        salvage(st, st.text, (0, len(st.text)))
        return
    judge_program(st, result.program)
    # after every command of the text (the jobs just spawned): the order of
    # the findings decides which one names the verdict
    if result.comments or "function" in st.text:
        st.spawn(partial(_text_checks, st, result))


def _text_checks(st: State, result: ParseResult) -> None:
    if "function" in st.text and _FORK_BOMB_KW.search(st.text):
        st.add("deny", "fork-bomb", (0, len(st.text)), "a fork bomb is never run")
    for start, end in result.comments:
        body = st.text[start:end]
        if any(c in body for c in "$`'\"\\") or "<(" in body or ">(" in body:
            # Inert to bash, but a shell with comments switched off (an
            # interactive zsh) would run it, and quotes in a comment are how
            # a reader is misled about where a string ends: conservatively ask.
            st.add(
                "ask",
                "comment-expansion",
                (start, end),
                "a comment contains quotes or substitution syntax; remove the comment to run "
                "unprompted",
            )


def salvage(
    st: State, text: str, span: tuple[int, int], *, opaque: bool = True, unquote: bool = False
) -> None:
    """Look for destructive payloads in text that did not parse: judge each
    piece between shell operators on its own and keep only refusals.
    ``opaque=False`` when the text is an argument searched only in case the
    program evaluates it (the guard's verdict does not rest on the search)."""
    if opaque and st.seen is not None:
        st.seen.opaque = True  # the pieces are guesses, not bash's reading
    if _FORK_BOMB.search(text) or _FORK_BOMB_KW.search(text):
        st.add("deny", "fork-bomb", span, "a fork bomb is never run")
    pieces = _SALVAGE_SPLIT.split(text)
    if unquote:
        # The whole reading failed (nesting deeper than the guard follows):
        # quotes around a piece (`"$("rm -rf /")"`) may be ones bash removes,
        # so each quoted piece is also searched without them. Only denies are
        # kept, and only on this path, where the answer is already a person's.
        pieces += [q for q in (p.replace('"', "").replace("'", "") for p in pieces) if q]
    searched: set[str] = set()
    for piece in pieces:
        if _NAMES_SOMETHING.search(piece) is None:
            continue  # no letter or digit: it names no program
        if piece in searched:
            continue  # the same text holds the same refusals: padding costs nothing
        searched.add(piece)
        if st.budget[0] <= 0:
            # The pieces are searched for refusals; one left unsearched could
            # hold a deny, so stopping here is an answer no flag lifts, never
            # the ask a shorter text would get.
            st.ungrantable = True
            st.add(
                "ask",
                "too-long",
                span,
                f"the text is longer than the guard searches ({MAX_TOKENS} tokens) for "
                "destructive commands; it needs approval every time",
            )
            break
        sub = st.sub(piece)
        sub.seen = None  # the pieces are only searched, never reported
        result = parse(piece, max_tokens=st.budget[0])
        st.budget[0] -= result.tokens + PARSE_COST
        if result.program is None:
            continue
        judge_program(sub, result.program)
        st.spawn(partial(_keep_refusals, st, sub, span))


def heredoc_body(st: State, body: str, span: tuple[int, int]) -> None:
    """The commands an unquoted here-document runs when bash expands it: its
    ``$(...)`` and backquotes, judged in full like any nested command line,
    and the ``${...}`` holding one searched for refusals. Read as bash reads
    it (a line is not a command), so a long body costs its length, not a
    parse per line."""
    if st.seen is not None:
        # Where bash ends a here-document inside other constructs (a
        # continued delimiter line, backquotes) can differ from this reading
        # (the oracle found one in 100,000): the list of commands is not claimed whole.
        st.seen.opaque = True
    try:
        found = expansions_in_heredoc(body)
    except ShellSyntaxError:
        salvage(st, body, span)  # an unclosed expansion: search what is there
        return
    for kind, start, end in found:
        if kind == "cmdsub":
            nested(st, body[start + 2 : end - 1], span)
        elif kind == "backtick":
            nested(st, _unescape_backtick(body[start + 1 : end - 1]), span)
        elif "$(" in body[start:end] or "`" in body[start:end]:
            salvage(st, body[start + 2 : end - 1], span)


def _keep_refusals(st: State, sub: State, span: tuple[int, int]) -> None:
    for f in sub.findings:
        if f.decision == "deny":
            st.add("deny", f.rule, span, f.message)


# Reserved words that open and close a compound command. A `cd` inside one
# may run in a pipeline's or a background job's subshell (`{ cd x; } &`), so
# the guard stops tracking the directory there.
_OPENERS = frozenset({"{", "if", "while", "until", "for", "case", "select", "coproc", "function"})
_CLOSERS = frozenset({"}", "fi", "done", "esac"})


def report_embedded(st: State, text: str) -> None:
    """For judge(): list the commands a substitution inside an argument that
    bash may evaluate would run (only reported, never judged: the salvage
    search already looked for refusals)."""
    assert st.seen is not None
    sub = st.sub(text)
    # a text that does not parse as shell does not make the command unread:
    # it is only listed in case the program evaluates it
    sub.seen = Collector()
    st.spawn(partial(judge_text, sub))
    st.spawn(partial(_report_sub, st.seen, sub.seen))


def _report_sub(seen: Collector, sub: Collector) -> None:
    seen.commands.extend(sub.commands)


def judge_program(st: State, program: Program) -> None:
    """Judge every command of ``program``: one job each, spawned in order."""
    prev: SimpleCommand | None = None
    cmds = program.commands
    depth = 0
    for n, cmd in enumerate(cmds):
        if isinstance(cmd, SimpleCommand):
            first = cmd.words[0] if cmd.words else None
            word = first.value if first is not None and not first.quoted else None
            if word in _OPENERS:
                depth += 1
            st.spawn(partial(_command, st, cmds, n, depth, prev))
            if word in _CLOSERS:
                depth = max(depth - 1, 0)
            prev = cmd
        else:
            st.spawn(partial(_subshell, st, cmd))


def _command(
    st: State,
    cmds: tuple[SimpleCommand | Subshell, ...],
    n: int,
    depth: int,
    prev: SimpleCommand | None,
) -> None:
    cmd = cmds[n]
    assert isinstance(cmd, SimpleCommand)
    # whether the command runs in the shell itself is only asked by cd and
    # eval: worked out when they ask (see sequential)
    st.place = (cmds, n, depth)
    _simple(st, cmd)
    st.place = None
    if prev is not None and st.text[prev.end : cmd.start].strip() in ("|", "|&"):
        _piped_script(st, prev, cmd)


def _subshell(st: State, cmd: Subshell) -> None:
    st.add(
        "ask",
        "subshell",
        (cmd.start, cmd.start + 1),
        "a ( ... ) subshell is never allowed automatically; "
        "run its commands without the parentheses",
    )
    saved = st.location()
    judge_program(st, cmd.body)
    st.spawn(partial(_subshell_end, st, cmd, saved))


def _subshell_end(
    st: State, cmd: Subshell, saved: tuple[str | None, str | None, str | None]
) -> None:
    st.restore(saved)  # the body ran in a child shell: its cd is its own
    for r in cmd.redirects:
        judge_redirect(st, r)
    for r in cmd.redirects:
        _word_expansions(st, r.target)


def _simple(st: State, cmd: SimpleCommand) -> None:
    # Order matters only for which finding names the verdict (the first one
    # at the strictest decision): the program's own reason, then redirects,
    # then the expansions inside words.
    st.commands += 1
    words = cmd.words
    i = assignments(st, words)
    judge_argv(st, words[i:])
    for r in cmd.redirects:
        judge_redirect(st, r)
    for w in words:
        # A word with a value has no expanding part (an expansion has no
        # value, and neither has a string holding one): only its tilde,
        # glob or brace can still need a finding.
        if w.value is None or w.tilde or w.glob or w.brace:
            _word_expansions(st, w)
    for r in cmd.redirects:
        _word_expansions(st, r.target)
    name = words[i].value if i < len(words) else None
    sourced = name in (".", "source") and i + 1 < len(words)
    if sourced and words[i + 1].value not in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"):
        sourced = False
    # (rpartition is posixpath.basename for a str, without its type checks)
    if name is not None and (name.rpartition("/")[2] in SHELLS or sourced):
        # `bash <<< 'CMD'` and `bash <<EOF`: the inline text is the shell's script
        for r in cmd.redirects:
            if r.op == "<<<" and r.target.value is not None:
                nested(st, r.target.value, (r.start, r.end))
            elif r.op in ("<<", "<<-") and r.heredoc is not None:
                nested(st, r.heredoc.body, (r.start, r.end))


def _word_expansions(st: State, w: Word) -> None:
    for p in w.parts:
        if p.kind in _EXPANSION_RULE:  # (most parts are literal text: no call)
            _part(st, p)
        # (an inner ${...} lies in the text its outer one already searched:
        # searching it again would cost time quadratic in the nesting)
        searched = p.kind in _SEARCHED and ("$(" in p.raw or "`" in p.raw)
        for q in p.inner:
            _part(st, q, search=not searched)
    if w.tilde:
        st.add(
            "ask",
            "parameter-expansion",
            (w.start, w.end),
            f"{clip(w.raw)} has a ~ that the shell replaces with a home directory; write the "
            "path out to run unprompted",
        )
    if w.glob:
        st.add(
            "ask",
            "filename-expansion",
            (w.start, w.end),
            f"{w.raw} is expanded to matching file names by the shell; quote it or "
            "name the files to run unprompted",
        )
    if w.brace:
        st.add(
            "ask",
            "brace-expansion",
            (w.start, w.end),
            f"{w.raw} is expanded by brace expansion; write the words out to run unprompted",
        )


_SEARCHED = frozenset({"param_brace", "arith", "legacy_arith"})


def _part(st: State, p: Part, *, search: bool = True) -> None:
    rule = _EXPANSION_RULE.get(p.kind)
    if rule is None:
        return
    st.add(
        "ask",
        rule[0],
        (p.start, p.end),
        f"{clip(p.raw)} {rule[1]}; write the value literally to run unprompted",
    )
    if p.body is not None:
        if st.seen is not None and "<<" in p.raw:
            # bash 5.2 reads the text after a here-document inside `$(...)`
            # differently from its own grammar (a `;` can be lost), so what
            # follows cannot be listed with certainty
            st.seen.opaque = True
        st.spawn(partial(_substitution, st, p.body, st.location()))
    elif p.kind == "backtick":
        nested(st, _unescape_backtick(p.raw[1:-1]), (p.start, p.end))
    elif search and p.kind in _SEARCHED and ("$(" in p.raw or "`" in p.raw):
        salvage(st, p.raw[2:-1], (p.start, p.end))


def _substitution(
    st: State, body: Program, at: tuple[str | None, str | None, str | None]
) -> None:
    """A substitution's commands, judged where the command holding it stood
    (``at``); it runs in a subshell, so its cd does not outlive it."""
    back = st.location()
    st.restore(at)
    judge_program(st, body)
    st.spawn(partial(st.restore, back))


def _unescape_backtick(body: str) -> str:
    return re.sub(r"\\([$`\\])", r"\1", body)


def nested(
    st: State,
    script: str,
    span: tuple[int, int],
    then: Callable[[State], None] | None = None,
) -> None:
    """Judge a command line found inside this one (bash -c, eval, backticks,
    env -S): its findings point at the argument that carries it. ``then``
    is given the inner state once it is judged (eval runs in this shell: its
    `cd` is this shell's)."""
    sub = st.sub(script)
    st.spawn(partial(judge_text, sub))
    st.spawn(partial(_merge, st, sub, span, then))


def _merge(
    st: State, sub: State, span: tuple[int, int], then: Callable[[State], None] | None
) -> None:
    for f in sub.findings:
        st.add(f.decision, f.rule, span, f.message)
    for w in sub.writes:
        st.writes.append(Write(w.path, w.inside_workspace, span))
    st.ungrantable = st.ungrantable or sub.ungrantable
    st.commands += sub.commands
    if then is not None:
        then(sub)


def _piped_script(st: State, producer: SimpleCommand, shell: SimpleCommand) -> None:
    """`echo 'CMD' | bash`: literal text printed into a shell reading its
    standard input is that shell's script."""
    words = shell.words
    name = words[0].value if words else None
    if name is None or posixpath.basename(name) not in SHELLS:
        return
    if any(
        w.value is None or not w.value.startswith(("-", "+")) or w.value == "-c" for w in words[1:]
    ):
        return  # a script file or -c: standard input is not the script
    src = producer.words
    if not src or src[0].value not in ("echo", "printf"):
        return
    texts = [w.value for w in src[1:]]
    if any(t is None for t in texts):
        return
    body = " ".join(t for t in texts if t is not None).replace("\\n", "\n")
    nested(st, body, (producer.start, shell.end))
