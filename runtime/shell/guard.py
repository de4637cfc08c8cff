"""The shell command guard: one decision for one command line.

:func:`evaluate` parses the command with Charter's grammar and judges every
simple command in the tree, with no cap on their number. Each simple command
yields findings (allow, ask or deny, with a stable rule key, a span and a
message); the verdict is the strictest finding over every command and every
reading of the text (raw, ANSI-stripped, NFKC). What does not parse is
"ask", and a best-effort scan of its pieces can still find a destructive
payload and make it "deny", never anything weaker.
"""

from __future__ import annotations

import functools
import glob
import itertools
import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from charter.runtime.shell.normalize import Reading, hidden_characters, readings
from charter.runtime.shell.options import scan
from charter.runtime.shell.policy import (
    REDIRECT_WRITE_RULE,
    Decision,
    Finding,
    SafeShellCommand,
    ShellPolicy,
    Verdict,
    Write,
)
from charter.runtime.shell.programs import (
    ASK_PROGRAMS,
    READ_ONLY,
    RESERVED_OPAQUE,
    RESERVED_PREFIX,
    SHELLS,
    UNKNOWN,
    WRAPPERS,
    block_device,
    destructive,
    unwrap,
)
from charter.runtime.shell.report import DYNAMIC, Collector, JudgedCommand, Judgement
from charter.runtime.shell.syntax import (
    ParseResult,
    Part,
    Program,
    Redirect,
    ShellTooLong,
    SimpleCommand,
    Word,
    parse,
)
from charter.runtime.workspace import is_sensitive

__all__ = ["MAX_COMMAND_CHARS", "MAX_TOKENS", "evaluate", "judge", "sensitive_path"]

# The guard's size limits. A command line longer than MAX_COMMAND_CHARS is
# "ask" (`too-long`) without being read; each reading of a shorter one may
# lex at most MAX_TOKENS tokens in all (the command, and every nested script,
# substitution and salvaged piece in it), past which it is "ask" too. Both
# keep every decision within a small, linear time on any input; neither can
# make a command allowed.
MAX_COMMAND_CHARS = 65_536
MAX_TOKENS = 12_000
# What one parse costs beyond its tokens, in tokens: many tiny nested texts
# (backticks, salvaged pieces) cost more than their tokens say.
_PARSE_COST = 20

_RANK = {"allow": 0, "ask": 1, "deny": 2}

# Credential files and directories (defence in depth: reading them through the
# shell needs approval even when the program is read-only).
_SENSITIVE = re.compile(
    r"(?:^|[^A-Za-z0-9_])\.env(?:$|[.\-_A-Za-z0-9]*$|[/:,])"
    r"|\.(?:npmrc|pypirc|netrc|pgpass|git-credentials|htpasswd|dockercfg)(?:$|[^A-Za-z0-9_])"
    r"|(?:^|[^A-Za-z0-9_])\.(?:aws|kube|ssh|gnupg|docker|azure|gcloud|config/gcloud)(?:/|$)"
    r"|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)(?:$|\.)",
)
# NUL is the null device only on Windows; bash on a POSIX system creates a file of that name
_DISCARD = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}) | (
    frozenset({"NUL", "nul"}) if os.name == "nt" else frozenset()
)
_FD_PATH = re.compile(r"^/dev/fd/[0-9]+$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
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


def sensitive_path(value: str) -> bool:
    # the file tools' list too (key material, credentials.json, .ENV, ...),
    # so the shell is no way around a path the read_file tool would ask about
    return (
        _SENSITIVE.search(value) is not None
        or is_sensitive(value)
        or ("=" in value and is_sensitive(value.split("=", 1)[1]))  # --opt=FILE
    )


@dataclass
class _State:
    """What the guard gathers while walking one command: findings, writes, flags."""

    text: str
    cwd: str | None
    ws: str
    ws_real: str
    policy: ShellPolicy
    findings: list[Finding] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    ungrantable: bool = False
    safe_hits: list[str] = field(default_factory=list)
    commands: int = 0
    # after `cd ~/x` or a bare `cd`: the cwd as a ~ path, for the destructive checks only
    home_cwd: str | None = None
    # set by judge(): where the simple commands judged are reported
    seen: Collector | None = None
    # the parse, when its text had line continuations: maps offsets back
    spliced: ParseResult | None = None
    # tokens this reading may still lex (shared with every nested state)
    budget: list[int] = field(default_factory=lambda: [MAX_TOKENS])

    def sub(self, text: str) -> _State:
        """A state for a text found inside this one (same places, budget, report)."""
        return _State(
            text, self.cwd, self.ws, self.ws_real, self.policy, seen=self.seen, budget=self.budget
        )

    def add(self, decision: Decision, rule: str, span: tuple[int, int], message: str) -> None:
        self.findings.append(Finding(decision, rule, span, message))


def evaluate(
    command: str, *, cwd: str | Path, workspace: str | Path, policy: ShellPolicy
) -> Verdict:
    """Judge ``command`` as run from ``cwd`` inside ``workspace``. Never raises."""
    return _guarded(command, str(cwd), str(workspace), policy, None)


def judge(
    command: str, *, cwd: str | Path, workspace: str | Path, policy: ShellPolicy
) -> Judgement:
    """:func:`evaluate`'s verdict together with every simple command the guard
    judged to reach it (see :mod:`charter.runtime.shell.report`). Never raises."""
    seen = Collector()
    verdict = _guarded(command, str(cwd), str(workspace), policy, seen)
    if verdict.rule in ("internal-error", "too-long"):
        seen.opaque = True
    return Judgement(verdict, tuple(seen.commands), seen.opaque)


def _guarded(
    command: str, cwd: str, workspace: str, policy: ShellPolicy, seen: Collector | None
) -> Verdict:
    try:
        return _evaluate(command, cwd, workspace, policy, seen)
    except Exception as exc:  # fail closed on anything unforeseen
        refusal = _flat_refusal(command, str(cwd), str(workspace), policy)
        if refusal is not None:
            return Verdict("deny", refusal.rule, refusal.span, refusal.message)
        return Verdict(
            "ask",
            "internal-error",
            (0, len(command)),
            f"the guard could not judge this command ({type(exc).__name__}); it needs approval",
        )


def _flat_refusal(command: str, cwd: str, workspace: str, policy: ShellPolicy) -> Finding | None:
    """When the full reading fails (nesting deeper than the parser goes), the
    pieces between shell operators are still searched for destructive payloads."""
    try:
        ws, cw, ws_real = _roots(workspace, cwd)
        st = _State(command, cw, ws, ws_real, policy)
        _salvage(st, command, (0, len(command)))
        return next((f for f in st.findings if f.decision == "deny"), None)
    except Exception:
        return None


def _evaluate(
    command: str, cwd: str, workspace: str, policy: ShellPolicy, seen: Collector | None
) -> Verdict:
    ws, cw, ws_real = _roots(workspace, cwd)
    span_all = (0, len(command))
    if len(command) > MAX_COMMAND_CHARS:
        return Verdict(
            "ask",
            "too-long",
            span_all,
            f"the command is {len(command)} characters long, more than the guard reads "
            f"({MAX_COMMAND_CHARS}); it needs approval every time",
            ungrantable=True,
        )
    if not command.strip(" \t\n"):
        # (only these are blanks to bash: `\r` or a no-break space is a word)
        return Verdict("ask", "empty-command", span_all, "the command is empty")
    findings: list[Finding] = []
    writes: list[Write] = []
    ungrantable = False
    safe_hits: list[str] = []
    commands = 0
    extra: list[Reading] = []
    if "$IFS" in command or "${IFS}" in command:
        # rm${IFS}-rf${IFS}/ is rm -rf / once the shell splits the words
        extra.append(Reading("IFS-split", re.sub(r"\$\{IFS\}|\$IFS\b", " ", command)))
    for reading in [*readings(command), *extra]:
        if reading.label != "raw" and ungrantable and any(f.rule == "too-long" for f in findings):
            # the raw text was too long to read to its end: the other
            # readings could only add refusals, at the same cost again
            break
        st = _State(reading.text, cw, ws, ws_real, policy)
        if reading.label == "raw":
            st.seen = seen
        _judge(st)
        if st.spliced is not None:
            _map_spans(st, st.spliced)
        if reading.label == "raw":
            findings.extend(st.findings)
            writes.extend(st.writes)
            safe_hits.extend(st.safe_hits)
        else:
            known = {(f.decision, f.rule) for f in findings}
            for f in st.findings:
                if (f.decision, f.rule) not in known:
                    findings.append(
                        Finding(
                            f.decision,
                            f.rule,
                            span_all,
                            f"{f.message} (in the {reading.label} reading of the text)",
                        )
                    )
            for w in st.writes:
                if not w.inside_workspace:
                    writes.append(Write(w.path, w.inside_workspace, span_all))
        ungrantable = ungrantable or st.ungrantable
        commands += st.commands
    for pos, name in hidden_characters(command, first=True):
        findings.insert(
            0,
            Finding(
                "ask",
                "hidden-characters",
                (pos, pos + 1),
                f"the command contains a character a reviewer cannot see or would misread "
                f"({name}); remove it to let the command be judged on what it shows",
            ),
        )
    if not (cw == ws or cw.startswith(ws.rstrip("/") + "/")):
        # every relative name would be read outside the workspace
        findings.insert(
            0,
            Finding(
                "ask",
                "path-outside-workspace",
                span_all,
                f"the command runs in {cw}, outside the workspace; it needs approval",
            ),
        )
    if commands == 0 and not findings:
        return Verdict("ask", "empty-command", span_all, "the command runs nothing")
    decision: Decision = "allow"
    for f in findings:
        if _RANK[f.decision] > _RANK[decision]:
            decision = f.decision
    if decision == "allow":
        if safe_hits:
            rule, msg = (
                "safe-command",
                (
                    "every command is read-only or covered by a [safe_commands] entry ("
                    + ", ".join(sorted(set(safe_hits)))
                    + ")"
                ),
            )
        else:
            rule, msg = "read-only", "every command is a recognised read-only command"
        return Verdict("allow", rule, span_all, msg, tuple(writes), ungrantable, tuple(findings))
    # A redirect-write finding only names the verdict when nothing else at
    # the same level does: it is the part combine() hands to write_file.
    top = next(
        (f for f in findings if f.decision == decision and f.rule != REDIRECT_WRITE_RULE),
        next(f for f in findings if f.decision == decision),
    )
    return Verdict(
        decision, top.rule, top.span, top.message, tuple(writes), ungrantable, tuple(findings)
    )


def _map_spans(st: _State, parsed: ParseResult) -> None:
    """Point the findings of a text judged without its line continuations
    back at the characters of the input."""

    def span(s: tuple[int, int]) -> tuple[int, int]:
        return (parsed.raw_offset(s[0]), parsed.raw_offset(s[1]))

    st.findings = [Finding(f.decision, f.rule, span(f.span), f.message) for f in st.findings]
    st.writes = [Write(w.path, w.inside_workspace, span(w.span)) for w in st.writes]


@functools.lru_cache(maxsize=256)
def _roots(workspace: str, cwd: str) -> tuple[str, str, str]:
    """The normalised workspace and cwd, and the workspace's real path.
    Cached: resolving the workspace's symlinks costs a system call per path
    component, and a session asks about the same workspace again and again."""
    ws = posixpath.normpath(os.path.abspath(workspace))
    cw = posixpath.normpath(os.path.join(ws, cwd))
    return ws, cw, _realpath(ws)


def _realpath(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _judge(st: _State) -> None:
    result = parse(st.text, max_tokens=max(0, st.budget[0]))
    st.budget[0] -= result.tokens + _PARSE_COST
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
        _salvage(st, st.text, (0, len(st.text)))
        return
    _program(st, result.program)
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


def _salvage(st: _State, text: str, span: tuple[int, int], *, opaque: bool = True) -> None:
    """Look for destructive payloads in text that did not parse: judge each
    piece between shell operators on its own and keep only refusals.
    ``opaque=False`` when the text is an argument searched only in case the
    program evaluates it (the guard's verdict does not rest on the search)."""
    if opaque and st.seen is not None:
        st.seen.opaque = True  # the pieces are guesses, not bash's reading
    if _FORK_BOMB.search(text) or _FORK_BOMB_KW.search(text):
        st.add("deny", "fork-bomb", span, "a fork bomb is never run")
    for piece in _SALVAGE_SPLIT.split(text):
        if _NAMES_SOMETHING.search(piece) is None:
            continue  # no letter or digit: it names no program
        if st.budget[0] <= 0:
            break  # the pieces are only searched for refusals: stopping never allows
        sub = _State(piece, st.cwd, st.ws, st.ws_real, st.policy, budget=st.budget)
        result = parse(piece, max_tokens=st.budget[0])
        st.budget[0] -= result.tokens + _PARSE_COST
        if result.program is None:
            continue
        _program(sub, result.program)
        for f in sub.findings:
            if f.decision == "deny":
                st.add("deny", f.rule, span, f.message)


def _report_embedded(st: _State, text: str) -> None:
    """For judge(): list the commands a substitution inside an argument that
    bash may evaluate would run (only reported, never judged: the salvage
    search already looked for refusals)."""
    assert st.seen is not None
    sub = st.sub(text)
    # a text that does not parse as shell does not make the command unread:
    # it is only listed in case the program evaluates it
    sub.seen = Collector()
    _judge(sub)
    st.seen.commands.extend(sub.seen.commands)


def _program(st: _State, program: Program) -> None:
    prev: SimpleCommand | None = None
    for cmd in program.commands:
        if isinstance(cmd, SimpleCommand):
            _simple(st, cmd)
            if prev is not None and st.text[prev.end : cmd.start].strip() in ("|", "|&"):
                _piped_script(st, prev, cmd)
            prev = cmd
        else:
            st.add(
                "ask",
                "subshell",
                (cmd.start, cmd.start + 1),
                "a ( ... ) subshell is never allowed automatically; "
                "run its commands without the parentheses",
            )
            saved = st.cwd
            _program(st, cmd.body)
            st.cwd = saved
            for r in cmd.redirects:
                _redirect(st, r)
            for r in cmd.redirects:
                _word_expansions(st, r.target)


def _simple(st: _State, cmd: SimpleCommand) -> None:
    # Order matters only for which finding names the verdict (the first one
    # at the strictest decision): the program's own reason, then redirects,
    # then the expansions inside words.
    st.commands += 1
    words = cmd.words
    i = _assignments(st, words)
    _argv(st, words[i:])
    for r in cmd.redirects:
        _redirect(st, r)
    for w in words:
        _word_expansions(st, w)
    for r in cmd.redirects:
        _word_expansions(st, r.target)
    name = words[i].value if i < len(words) else None
    sourced = name in (".", "source") and i + 1 < len(words)
    if sourced and words[i + 1].value not in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"):
        sourced = False
    if name is not None and (posixpath.basename(name) in SHELLS or sourced):
        # `bash <<< 'CMD'` and `bash <<EOF`: the inline text is the shell's script
        for r in cmd.redirects:
            if r.op == "<<<" and r.target.value is not None:
                _nested(st, r.target.value, (r.start, r.end))
            elif r.op in ("<<", "<<-") and r.heredoc is not None:
                _nested(st, r.heredoc.body, (r.start, r.end))


def _assignments(st: _State, words: tuple[Word, ...] | list[Word], i: int = 0) -> int:
    """Report the VAR=value words from ``words[i]`` on, where a simple
    command starts (also after a reserved word: `if a=1 ls`); return the
    index of the first word that is not one."""
    while i < len(words) and _is_assignment(words[i]):
        st.add(
            "ask",
            "inline-assignment",
            (words[i].start, words[i].end),
            "an inline VAR=value assignment changes the command's environment (PATH, "
            "LD_PRELOAD and similar change what runs); drop it to run unprompted",
        )
        i += 1
    return i


def _is_assignment(w: Word) -> bool:
    first = w.parts[0]
    return first.kind == "lit" and _ASSIGNMENT.match(first.raw) is not None


def _word_expansions(st: _State, w: Word) -> None:
    for p in w.parts:
        _part(st, p)
        for q in p.inner:
            _part(st, q)
    if w.tilde:
        st.add(
            "ask",
            "parameter-expansion",
            (w.start, w.end),
            f"{_clip(w.raw)} has a ~ that the shell replaces with a home directory; write the "
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


def _part(st: _State, p: Part) -> None:
    rule = _EXPANSION_RULE.get(p.kind)
    if rule is None:
        return
    st.add(
        "ask",
        rule[0],
        (p.start, p.end),
        f"{_clip(p.raw)} {rule[1]}; write the value literally to run unprompted",
    )
    if p.body is not None:
        if st.seen is not None and "<<" in p.raw:
            # bash 5.2 reads the text after a here-document inside `$(...)`
            # differently from its own grammar (a `;` can be lost), so what
            # follows cannot be listed with certainty
            st.seen.opaque = True
        saved = st.cwd
        _program(st, p.body)
        st.cwd = saved
    elif p.kind == "backtick":
        _nested(st, _unescape_backtick(p.raw[1:-1]), (p.start, p.end))
    elif ("$(" in p.raw or "`" in p.raw) and p.kind in ("param_brace", "arith", "legacy_arith"):
        _salvage(st, p.raw[2:-1], (p.start, p.end))


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unescape_backtick(body: str) -> str:
    return re.sub(r"\\([$`\\])", r"\1", body)


def _nested(st: _State, script: str, span: tuple[int, int]) -> None:
    """Judge a command line found inside this one (bash -c, eval, backticks,
    env -S): its findings point at the argument that carries it."""
    sub = st.sub(script)
    _judge(sub)
    for f in sub.findings:
        st.add(f.decision, f.rule, span, f.message)
    for w in sub.writes:
        st.writes.append(Write(w.path, w.inside_workspace, span))
    st.ungrantable = st.ungrantable or sub.ungrantable
    st.commands += sub.commands


# --- redirects -------------------------------------------------------------------------------


def _redirect(st: _State, r: Redirect) -> None:
    span = (r.start, r.end)
    op = r.op
    target = r.target
    v = target.value
    if op in ("<<", "<<-"):
        st.add(
            "ask",
            "heredoc",
            span,
            "a heredoc feeds inline text to the command; it is never allowed automatically",
        )
        doc = r.heredoc
        if doc is not None and not doc.quoted and ("$(" in doc.body or "`" in doc.body):
            _salvage(st, doc.body, span)
        return
    if op == "<<<":
        # Like a heredoc, a here-string is inline input; some parsers (and
        # people reviewing a transcript) read the surrounding redirections
        # differently, so it is never allowed without a person.
        st.add(
            "ask",
            "heredoc",
            span,
            "a here-string feeds inline text to the command; it is never allowed automatically",
        )
        return
    if (
        op in ("<&", ">&")
        and v is not None
        and (v.isdigit() or v == "-" or v[:-1].isdigit() and v.endswith("-"))
    ):
        return  # duplicating or closing a file descriptor
    if op in ("<", "<&"):
        if v is not None:
            if v.startswith(("/dev/tcp/", "/dev/udp/")):
                st.add("ask", "network", span, f"reading {v} opens a network connection")
            elif sensitive_path(v):
                st.add(
                    "ask",
                    "credential-path",
                    span,
                    f"{v} looks like a credential file; reading it needs approval",
                )
            elif _outside(st, v, target.tilde, target.glob):
                st.add(
                    "ask",
                    "path-outside-workspace",
                    span,
                    f"{v} is outside the workspace; reading it needs approval",
                )
        return
    # every remaining operator writes (or opens for writing) a file
    if v is None:
        st.ungrantable = True
        st.writes.append(Write(None, False, span))
        st.add(
            "ask",
            "unnameable-redirect",
            span,
            f"the redirect target {_clip(target.raw)} is only known at run time; it asks "
            "every time and an approval is never reused",
        )
        return
    if v in _DISCARD or _FD_PATH.match(v):
        return
    if v.startswith(("/dev/tcp/", "/dev/udp/")):
        st.ungrantable = True
        st.writes.append(Write(None, False, span))
        st.add(
            "ask",
            "unnameable-redirect",
            span,
            f"{v} opens a network connection, not a file; it asks every time",
        )
        return
    if v.startswith("/dev/") and block_device(v):
        st.add(
            "deny",
            "block-device-write",
            span,
            f"writing to the block device {v} destroys its data and is never run",
        )
        return
    if target.tilde:
        st.writes.append(Write(v, False, span))
        st.add(
            "deny",
            "redirect-outside-workspace",
            span,
            f"the redirect writes {v}, in the home directory outside the workspace; "
            "no permission or flag lifts this",
        )
        return
    # No lexical normalisation before resolving: the kernel follows a symlink
    # before it applies a later `..` (link/../x climbs from link's target).
    if v.startswith("/"):
        path = "/" + v.lstrip("/")
    elif st.cwd is None:
        st.ungrantable = True
        st.writes.append(Write(None, False, span))
        st.add(
            "ask",
            "unnameable-redirect",
            span,
            f"the redirect writes {v} relative to a directory changed earlier in the "
            "command; it asks every time",
        )
        return
    else:
        path = posixpath.join(st.cwd, v)
    real = _real_below(st, path)
    inside = _within(real, st.ws_real)
    if target.glob and inside:
        # bash writes to the file a pattern matches (l*/f is link/f): judge
        # the matches that exist now too, so a pattern cannot reach a
        # symlinked directory that the plain spelling would be refused for
        escaped = _match_outside(st, path)
        if escaped is not None:
            real, inside = escaped, False
    st.writes.append(Write(real, inside, span))
    if not inside:
        st.add(
            "deny",
            "redirect-outside-workspace",
            span,
            f"the redirect writes {real}, outside the workspace; no permission or flag lifts this",
        )
        return
    rel = posixpath.relpath(real, st.ws_real)
    st.add(
        "ask",
        REDIRECT_WRITE_RULE,
        span,
        f"the redirect writes {rel} in the workspace; it answers to the write_file permission",
    )
    if sensitive_path(v):
        st.add(
            "ask",
            "credential-path",
            span,
            f"{v} looks like a credential file; writing it needs approval",
        )


# --- commands --------------------------------------------------------------------------------


def _control_structure(name: str) -> str:
    return (
        f"shell control structures ({name} ...) are never allowed automatically; "
        "run the commands one by one"
    )


def _piped_script(st: _State, producer: SimpleCommand, shell: SimpleCommand) -> None:
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
    _nested(st, body, (producer.start, shell.end))


def _program_asks(
    st: _State,
    words: tuple[Word, ...] | list[Word],
    rule: str,
    message: str,
    text_args: frozenset[int] = frozenset(),
) -> None:
    """The program word itself needs approval; its arguments are still read,
    so a credential path among them is reported too."""
    w0 = words[0]
    st.add("ask", rule, (w0.start, w0.end), message)
    _generic_args(st, words[1:], text_args)


_ARITHMETIC_EVAL = frozenset(
    {"[[", "test", "[", "let", "declare", "typeset", "local", "readonly", "export", "printf"}
)


def _report(st: _State, words: tuple[Word, ...] | list[Word], first: int = 0) -> None:
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


def _argv(st: _State, words: tuple[Word, ...] | list[Word]) -> None:
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
            return
        w0 = words[first]
        prefix = w0.value
        if w0.quoted or prefix not in RESERVED_PREFIX or prefix is None:
            break
        if prefix != "!":
            st.add("ask", "control-structure", (w0.start, w0.end), _control_structure(prefix))
        first = _assignments(st, words, first + 1)
    if first:
        # what bash runs once the reserved words are taken off
        words = words[first:]
        if st.seen is not None:
            _report(st, words)
    name = w0.value
    if name is None:
        _program_asks(
            st,
            words,
            "dynamic-command",
            f"the program name {_clip(w0.raw)} is only known at run time; "
            "name the program literally",
        )
        return
    if name in _ARITHMETIC_EVAL:
        # bash evaluates these arguments as arithmetic, expanding `$(...)`
        # even inside quotes: test -v 'a[$(cmd)]' runs cmd
        for w in words[1:]:
            if w.value is not None and ("$(" in w.value or "`" in w.value):
                _salvage(st, w.value, (w.start, w.end), opaque=False)
                if st.seen is not None:
                    _report_embedded(st, w.value)
    if not w0.quoted:
        if name == "coproc":
            # coproc CMD and coproc NAME { CMD; } run CMD in the background
            st.add("ask", "control-structure", (w0.start, w0.end), _control_structure(name))
            _argv(st, words[1:])
            if len(words) > 2 and words[2].value == "{" and not words[2].quoted:
                _argv(st, words[3:])
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
            f"the program name {_clip(w0.raw)} is expanded by the shell; name the program "
            "literally",
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
    vals = [w.value if w.value is not None else UNKNOWN for w in args]

    def span_of(index: int) -> tuple[int, int]:
        w = args[index] if 0 <= index < len(args) else w0
        return (w.start, w.end)

    sym = [_symbolic(w) for w in args]
    dcwd = st.cwd if st.cwd is not None else st.home_cwd
    issue = destructive(prog, sym, dcwd, st.ws)
    for k, w in enumerate(args):
        # rm -rf {/,x} is rm -rf / x: try each word the braces make
        for variant in _brace_words(sym[k]) if w.brace and issue is None else ():
            issue = destructive(prog, [*sym[:k], variant, *sym[k + 1 :]], dcwd, st.ws)
            if issue is not None:
                break
    if issue is not None:
        st.add("deny", issue.rule, span_of(issue.index), issue.message)

    if prog in WRAPPERS and not (prog == "command" and vals[:1] in (["-v"], ["-V"])):
        _wrapper(st, prog, w0, args, vals, span_of)
        return
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
            _nested(st, " ".join(t or "" for t in texts), (args[0].start, args[-1].end))
        return
    if prog == "find":
        _find_exec(st, args, vals)

    safe = _safe_match(st.policy.safe, name, vals)
    checker = READ_ONLY.get(prog) if "/" not in name else None
    text_args: frozenset[int] = frozenset()
    if checker is not None:
        checked = checker(vals)
        for iss in checked.issues:
            st.add("ask", iss.rule, span_of(iss.index), iss.message)
        text_args = checked.text_args
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
            f"Charter does not know {_clip(prog)}; it needs approval, or a [safe_commands] entry",
        )
    if safe is not None:
        st.safe_hits.append(safe.source)
    if prog in ("cd", "pushd", "popd"):
        _change_dir(st, prog, vals)
    _generic_args(st, args, text_args)


def _brace_words(text: str, limit: int = 64, budget: list[int] | None = None) -> list[str]:
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
                    out.extend(_brace_words(variant, limit, budget))
                    if len(out) >= limit:
                        break
                return out[:limit]
    return [text]


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


def _wrapper(
    st: _State,
    prog: str,
    w0: Word,
    args: tuple[Word, ...] | list[Word],
    vals: list[str],
    span_of: object,
) -> None:
    u = unwrap(prog, vals)
    rule = "privilege" if prog in ("sudo", "doas", "su", "runuser") else "wrapper"
    st.add(
        "ask",
        rule,
        (w0.start, w0.end),
        f"{prog} runs another command; run that command directly to have it judged on its own",
    )
    for iss in u.issues:
        w = args[iss.index] if 0 <= iss.index < len(args) else w0
        st.add("ask", iss.rule, (w.start, w.end), iss.message)
    if u.split_string is not None:
        _nested(st, u.split_string, (w0.start, args[-1].end if args else w0.end))
    if u.inner_start is not None:
        _generic_args(st, args[: u.inner_start], frozenset())
        _argv(st, args[u.inner_start :])
    else:
        _generic_args(st, args, frozenset())


def _shell(
    st: _State, prog: str, w0: Word, args: tuple[Word, ...] | list[Word], vals: list[str]
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
        _generic_args(st, args, frozenset())
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
    _nested(st, script, (script_word.start, script_word.end))


def _find_exec(st: _State, args: tuple[Word, ...] | list[Word], vals: list[str]) -> None:
    """Judge the commands behind find -exec/-execdir/-ok/-okdir."""
    i = 0
    while i < len(vals):
        if vals[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(vals) and vals[j] not in (";", "+"):
                j += 1
            inner = list(args[i + 1 : j])
            sub_findings = len(st.findings)
            _argv(st, inner)
            # the inner command's own asks are already covered by find's
            # exec-option finding; only its refusals add information
            st.findings[sub_findings:] = [
                f for f in st.findings[sub_findings:] if f.decision == "deny"
            ]
            i = j
        i += 1


def _safe_match(
    entries: tuple[SafeShellCommand, ...], name: str, vals: list[str]
) -> SafeShellCommand | None:
    for e in entries:
        words = e.words
        if words[0] == name and len(vals) >= len(words) - 1:
            if all(vals[k] == words[k + 1] for k in range(len(words) - 1)):
                return e
    return None


def _change_dir(st: _State, prog: str, vals: list[str]) -> None:
    operands = [v for v in vals if not v.startswith("-") or v == "-"]
    st.home_cwd = None
    if prog == "cd" and not operands:
        st.home_cwd = "~"
    elif operands and prog != "popd" and (operands[0] == "~" or operands[0].startswith("~/")):
        st.home_cwd = posixpath.normpath(operands[0])
    if (
        prog == "popd"
        or not operands
        or operands[0] in (UNKNOWN, "-")
        or operands[0].startswith("~")
    ):
        st.cwd = None
        return
    target = operands[0]
    base = st.cwd
    if target.startswith("/"):
        st.cwd = posixpath.normpath("/" + target.lstrip("/"))
    elif st.cwd is not None:
        st.cwd = posixpath.normpath(posixpath.join(st.cwd, target))
    if st.cwd is not None and any(v.startswith("-") and "P" in v for v in vals):
        # cd -P follows symlinks before `..` (the physical directory)
        st.cwd = _realpath(posixpath.join(base or "/", target))


def _generic_args(
    st: _State, args: tuple[Word, ...] | list[Word], text_args: frozenset[int]
) -> None:
    for idx, w in enumerate(args):
        v = w.value
        if v is None:
            continue
        if sensitive_path(v):
            st.add(
                "ask",
                "credential-path",
                (w.start, w.end),
                f"{_clip(v)} names a credential file or directory; it needs approval",
            )
            continue
        if idx in text_args:
            continue
        for cand, tilde in _path_candidates(v, w):
            if _outside(st, cand, tilde, w.glob):
                st.add(
                    "ask",
                    "path-outside-workspace",
                    (w.start, w.end),
                    f"{_clip(cand)} is outside the workspace; it needs approval",
                )
                break


def _path_candidates(v: str, w: Word) -> list[tuple[str, bool]]:
    if v.startswith("-") and len(v) > 1:
        if "=" in v:
            val = v.split("=", 1)[1]
            return [(val, val.startswith("~"))]
        if not v.startswith("--") and len(v) > 2:
            # a value attached after any number of bundled flags (`-Rf/etc/x`)
            for k in range(2, len(v)):
                rest = v[k:]
                if rest.startswith(("/", "~", "..")):
                    return [(rest, rest.startswith("~"))]
        return []
    return [(v, w.tilde)]


def _outside(st: _State, value: str, tilde: bool, glob_word: bool = False) -> bool:
    """Whether a path the command names lies outside the workspace: by its
    text first, then (for a path whose text stays inside) by where its
    symlinks lead, since ``cat link/passwd`` reads the link's target."""
    if tilde or value.startswith("~"):
        return True
    if value.startswith("/"):
        if value in _DISCARD or value.startswith("/dev/fd/"):
            return False
        raw = "/" + value.lstrip("/")
    elif st.cwd is None:
        # relative to a directory changed earlier in the command: only a
        # climb is known to leave; anything else is judged where it runs
        return ".." in value.split("/")
    else:
        raw = posixpath.join(st.cwd, value)
    if not _within(posixpath.normpath(raw), st.ws):
        return True
    # No lexical normalisation before resolving: the kernel follows a symlink
    # before it applies a later `..`.
    if not _within(_real_below(st, raw), st.ws_real):
        return True
    # the shell hands the command whatever the pattern matches now
    return glob_word and any(c in value for c in "*?[") and _match_outside(st, raw) is not None


def _match_outside(st: _State, pattern: str) -> str | None:
    """The real path of the first existing match of ``pattern`` (at most
    1,000 are looked at) that lies outside the workspace, if any. A pattern
    too long to match in reasonable time (``fnmatch`` is quadratic in its
    wildcards) counts as reaching outside: it asks, never allows."""
    if len(pattern) > 1024:
        return pattern
    for match in itertools.islice(glob.iglob(pattern), 1000):
        found = _realpath(match)
        if not _within(found, st.ws_real):
            return found
    return None


def _real_below(st: _State, raw: str) -> str:
    """``os.path.realpath(raw)``, cheaper for the common case of a plain path
    below the workspace: the workspace's own real path is known, so only the
    components under it are looked at, one ``lstat`` each, and a component
    that does not exist ends the walk (nothing below it can be a link). Any
    symlink, ``.`` or ``..`` goes to the full resolution."""
    prefix = st.ws.rstrip("/") + "/"
    if not raw.startswith(prefix):
        return _realpath(raw)
    parts = raw[len(prefix) :].split("/")
    if any(p in (".", "..") for p in parts):
        return _realpath(raw)
    current = st.ws_real.rstrip("/")
    for i, part in enumerate(parts):
        if not part:
            continue  # a doubled or trailing slash
        current += "/" + part
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            rest = "/".join(p for p in parts[i + 1 :] if p)
            return current + ("/" + rest if rest else "")
        except (OSError, ValueError):
            return _realpath(raw)
        if stat.S_ISLNK(mode):
            return _realpath(raw)
    return current


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
