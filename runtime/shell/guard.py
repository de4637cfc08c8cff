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

from charter.runtime.shell.gitrepo import untrusted_repository
from charter.runtime.shell.normalize import Reading, hidden_characters, readings
from charter.runtime.shell.options import scan
from charter.runtime.shell.policy import (
    CLIENT_SETTINGS_RULE,
    PERSON_ONLY_RULES,
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
from charter.runtime.shell.programs.base import Walk
from charter.runtime.shell.report import DYNAMIC, Collector, JudgedCommand, Judgement
from charter.runtime.shell.syntax import (
    ParseResult,
    Part,
    Program,
    Redirect,
    ShellTooLong,
    SimpleCommand,
    Subshell,
    Word,
    parse,
)
from charter.runtime.shell.walk import WALK_LIMIT, Budget, gitignored_dirs, walk_tree
from charter.runtime.shell.writers import CWD, RUN_TIME, Target, write_targets
from charter.runtime.shell.writers import PROGRAMS as WRITER_PROGRAMS
from charter.runtime.workspace import (
    case_insensitive,
    client_settings_reason,
    is_sensitive,
    protection,
)

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
    r"|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)(?:$|\.)"
    # another process's environment, memory, command line or open files (the
    # runtime's own API keys live in its environment)
    r"|^/proc/(?:self|thread-self|[0-9]+)(?:/task/[0-9]+)?/(?:environ|mem|cmdline|fd/|map_files/)",
)
# NUL is the null device only on Windows; bash on a POSIX system creates a file of that name
_DISCARD = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}) | (
    frozenset({"NUL", "nul"}) if os.name == "nt" else frozenset()
)
_FD_PATH = re.compile(r"^/dev/fd/[0-9]+$")
# Device files a read-only command may name as they are (an argument, or
# `<`). Not /dev/tty: reading it would read what a person types.
_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
        "/dev/full",
    }
)
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


# Every credential name above and in the file tools' list contains one of
# these once lower-cased: a text without any is not sensitive, which is most
# arguments and most names in a tree walk, at a fraction of the cost.
_MAYBE_SENSITIVE = re.compile(
    r"\.(?:env|npmrc|pypirc|netrc|pgpass|git-credentials|htpasswd|docker|aws|kube|ssh"
    r"|gnupg|azure|gcloud|password-store|boto|s3cfg|pem|key|p12|pfx|jks)"
    r"|id_|_netrc|gcloud|credentials\.json|service-account\.json|^/proc/",
)


def sensitive_path(value: str) -> bool:
    if value.isascii() and _MAYBE_SENSITIVE.search(value.lower()) is None:
        return False  # (non-ASCII text can case-fold into a credential name: full check)
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
    # after `cd ~/x` or a bare `cd`: the cwd as a ~ path (a place in the home directory)
    home_cwd: str | None = None
    # $OLDPWD, once a `cd` in this command has set it (None: not known)
    prev_cwd: str | None = None
    # where the simple command being judged sits: (its list, its index, the
    # compound depth), for _sequential
    place: tuple[tuple[SimpleCommand | Subshell, ...], int, int] | None = None
    # what `cd` does and what $PWD holds can be changed by the command itself
    # (CDPATH, cdable_vars, set -P, a trap, a function named cd, PWD=...):
    # then the guard does not follow them. None: not looked at yet (the
    # whole command line, ``root``, is searched once, when first needed).
    root: str = ""
    cd_trusted: bool | None = None
    pwd_trusted: bool | None = None

    def location(self) -> tuple[str | None, str | None, str | None]:
        return self.cwd, self.home_cwd, self.prev_cwd

    def restore(self, saved: tuple[str | None, str | None, str | None]) -> None:
        self.cwd, self.home_cwd, self.prev_cwd = saved
    # set by judge(): where the simple commands judged are reported
    seen: Collector | None = None
    # the parse, when its text had line continuations: maps offsets back
    spliced: ParseResult | None = None
    # tokens this reading may still lex (shared with every nested state)
    budget: list[int] = field(default_factory=lambda: [MAX_TOKENS])

    def sub(self, text: str) -> _State:
        """A state for a text found inside this one: the same places (the
        working directory and what is known of cd and $PWD), the same token
        budget and the same report."""
        sub = _State(
            text, self.cwd, self.ws, self.ws_real, self.policy, seen=self.seen, budget=self.budget
        )
        sub.home_cwd, sub.prev_cwd, sub.root = self.home_cwd, self.prev_cwd, self.root
        sub.cd_trusted, sub.pwd_trusted = self.cd_trusted, self.pwd_trusted
        return sub

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
            return _single("deny", refusal.rule, refusal.span, refusal.message)
        return _single(
            "ask",
            "internal-error",
            (0, len(command)),
            f"the guard could not judge this command ({type(exc).__name__}); it needs approval",
        )


def _single(
    decision: Decision, rule: str, span: tuple[int, int], message: str, *, ungrantable: bool = False
) -> Verdict:
    """A verdict resting on one finding, which it also lists: what a verdict
    holds is judged from its findings (``person_only`` among them)."""
    finding = Finding(decision, rule, span, message)
    return Verdict(decision, rule, span, message, ungrantable=ungrantable, findings=(finding,))


def _flat_refusal(command: str, cwd: str, workspace: str, policy: ShellPolicy) -> Finding | None:
    """When the full reading fails (nesting deeper than the parser goes), the
    pieces between shell operators are still searched for destructive payloads."""
    try:
        ws, cw, ws_real = _roots(workspace, cwd)
        st = _State(command, cw, ws, ws_real, policy)
        st.root = command
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
        return _single(
            "ask",
            "too-long",
            span_all,
            f"the command is {len(command)} characters long, more than the guard reads "
            f"({MAX_COMMAND_CHARS}); it needs approval every time",
            ungrantable=True,
        )
    if not command.strip(" \t\n"):
        # (only these are blanks to bash: `\r` or a no-break space is a word)
        return _single("ask", "empty-command", span_all, "the command is empty")
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
        st.root = command
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
    # A finding only a person may approve names the verdict, so the reason
    # says why no flag lifts it. A redirect-write finding only names it when
    # nothing else at the same level does: it is the part combine() hands to
    # write_file.
    top = next(
        (f for f in findings if f.decision == decision and f.rule in PERSON_ONLY_RULES),
        None,
    ) or next(
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
        sub = st.sub(piece)
        sub.seen = None  # the pieces are only searched, never reported
        result = parse(piece, max_tokens=st.budget[0])
        st.budget[0] -= result.tokens + _PARSE_COST
        if result.program is None:
            continue
        _program(sub, result.program)
        for f in sub.findings:
            if f.decision == "deny":
                st.add("deny", f.rule, span, f.message)


# Reserved words that open and close a compound command. A `cd` inside one
# may run in a pipeline's or a background job's subshell (`{ cd x; } &`), so
# the guard stops tracking the directory there.
_OPENERS = frozenset({"{", "if", "while", "until", "for", "case", "select", "coproc", "function"})
_CLOSERS = frozenset({"}", "fi", "done", "esac"})


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
    cmds = program.commands
    depth = 0
    for n, cmd in enumerate(cmds):
        if isinstance(cmd, SimpleCommand):
            first = cmd.words[0] if cmd.words else None
            word = first.value if first is not None and not first.quoted else None
            if word in _OPENERS:
                depth += 1
            # whether the command runs in the shell itself is only asked by
            # cd and eval: worked out when they ask (see _sequential)
            st.place = (cmds, n, depth)
            _simple(st, cmd)
            st.place = None
            if word in _CLOSERS:
                depth = max(depth - 1, 0)
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
            saved = st.location()
            _program(st, cmd.body)
            st.restore(saved)
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
        saved = st.location()  # a substitution runs in a subshell
        _program(st, p.body)
        st.restore(saved)
    elif p.kind == "backtick":
        _nested(st, _unescape_backtick(p.raw[1:-1]), (p.start, p.end))
    elif ("$(" in p.raw or "`" in p.raw) and p.kind in ("param_brace", "arith", "legacy_arith"):
        _salvage(st, p.raw[2:-1], (p.start, p.end))


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unescape_backtick(body: str) -> str:
    return re.sub(r"\\([$`\\])", r"\1", body)


def _nested(st: _State, script: str, span: tuple[int, int]) -> _State:
    """Judge a command line found inside this one (bash -c, eval, backticks,
    env -S): its findings point at the argument that carries it. Returns the
    inner state (eval runs in this shell: its `cd` is this shell's)."""
    sub = st.sub(script)
    _judge(sub)
    for f in sub.findings:
        st.add(f.decision, f.rule, span, f.message)
    for w in sub.writes:
        st.writes.append(Write(w.path, w.inside_workspace, span))
    st.ungrantable = st.ungrantable or sub.ungrantable
    st.commands += sub.commands
    return sub


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
    if v is not None and (v in _DISCARD or _FD_PATH.match(v)):
        return
    if v is not None and v.startswith(("/dev/tcp/", "/dev/udp/")):
        st.ungrantable = True
        st.writes.append(Write(None, False, span))
        st.add(
            "ask",
            "unnameable-redirect",
            span,
            f"{v} opens a network connection, not a file; it asks every time",
        )
        return
    if v is not None and v.startswith("/dev/") and block_device(v):
        st.add(
            "deny",
            "block-device-write",
            span,
            f"writing to the block device {v} destroys its data and is never run",
        )
        return
    text, tilde = _word_text(st, target)
    _confine_write(st, text, tilde, target, span, redirect=True, kind="write")


# --- where a write lands -----------------------------------------------------------------------
#
# Every file a command writes or deletes, through a redirect or as the target of
# a recognised writer (``cp``, ``rm``, ``tee``, ``dd of=``, ``find -delete``,
# ...; see ``writers.py``), is held to the confinement ``write_file`` gets:
#
# - outside the workspace: a deny no permission or flag lifts. The home
#   directory counts as outside whatever HOME is: under ``charter run`` the
#   child's HOME is the run's own folder in ``.charter/``, which the agent
#   never writes; under a hook it is the user's home;
# - inside, a protected path (``workspace.protection``): ``.charter/`` is a
#   deny, ``.git/`` and credential paths are asks only a person answers;
# - a target that cannot be named before the command runs (a variable, a
#   command substitution, a directory changed to by a name only known then,
#   file names ``xargs`` reads from its input) is an ask only a person
#   answers, never cached: a flag lifting it would be a way out of the
#   workspace.
#
# Naming a target: a literal, ``~``/``$HOME``/``${HOME}`` (the home
# directory), ``~user``, ``~+``/``$PWD``/``$(pwd)``/```pwd``` (the working
# directory, as tracked through ``cd``), ``${PWD%/*}`` (its parent),
# ``~-``/``$OLDPWD`` (once a ``cd`` in the command set it). Anything else
# that expands is only known at run time.

# ${HOME}, ${HOME:-x}, ${HOME-x}, ${HOME:=x}, ${HOME:?x}, ${HOME%/}, ${HOME%/*}, ...:
# a place in or next to the home directory, never inside the workspace
_HOME_OPS = re.compile(r"^(?:|:?[-=?].*|%%?.*)$", re.DOTALL)
_PARAM = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(.*)\})$", re.DOTALL)
_PWD_WORDS = (["pwd"], ["pwd", "-L"], ["pwd", "-P"])
_SPLITS = frozenset(" \t\n*?[")


# Programs after which the directory is unknown and cd is no longer
# followed: a script run in this shell, a trap (run before every later
# command), aliases and enable; `set -P` too (see _physical).
_CHANGES_CD = frozenset({"source", ".", "trap", "alias", "enable"})


def _physical(vals: list[str]) -> bool:
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


def _sequential(st: _State) -> bool:
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


def _cd_trusted(st: _State) -> bool:
    if st.cd_trusted is None:
        st.cd_trusted = _CD_NAMES.search(st.root) is None
    return st.cd_trusted


def _pwd_trusted(st: _State) -> bool:
    if st.pwd_trusted is None:
        st.pwd_trusted = _PWD_NAMES.search(st.root) is None
    return st.pwd_trusted


def _cwd_value(st: _State) -> tuple[str, bool] | None:
    """The working directory as (text, in the home directory), or None."""
    if st.cwd is not None:
        return st.cwd, False
    if st.home_cwd is not None:
        return st.home_cwd, True
    return None


def _known_expansion(st: _State, q: Part, quoted: bool) -> tuple[str, bool] | None:
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


def _word_text(st: _State, w: Word) -> tuple[str | None, bool]:
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


def _locate(st: _State, text: str, tilde: bool) -> tuple[str, str]:
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
        return "home", posixpath.join(base[0], text)
    return "path", posixpath.join(base[0], text)


def _confine_write(
    st: _State,
    text: str | None,
    tilde: bool,
    word: Word | None,
    span: tuple[int, int],
    *,
    redirect: bool,
    kind: str,
) -> None:
    """Judge one file the command writes (``kind`` "write") or removes
    ("delete"), named by ``text``, as ``write_file`` would be judged."""
    verb = "writes" if kind == "write" else "removes"
    by = "the redirect" if redirect else "the command"
    if text is None:
        shown = _clip(word.raw) if word is not None else "its target"
        _unnameable(st, span, redirect, f"{by} {verb} {shown}, which is only known at run time")
        return
    if word is None or not word.brace:
        _confine_one(st, text, tilde, word, span, redirect=redirect, verb=verb, by=by)
        return
    variants = _brace_words(text, _BRACE_LIMIT + 1)
    if len(variants) > _BRACE_LIMIT:
        # more names than the guard looks at: the rest cannot be named
        _unnameable(
            st, span, redirect, f"{by} {verb} more than {_BRACE_LIMIT} brace-expanded names"
        )
        return
    for variant in variants:
        # brace expansion comes first: {~,x}/f is ~/f, a home directory path
        home = tilde or variant.startswith("~")
        _confine_one(st, variant, home, word, span, redirect=redirect, verb=verb, by=by)


_BRACE_LIMIT = 64


def _unnameable(st: _State, span: tuple[int, int], redirect: bool, why: str) -> None:
    st.ungrantable = True
    st.writes.append(Write(None, False, span))
    st.add(
        "ask",
        "unnameable-redirect" if redirect else "unnameable-write",
        span,
        f"{why}; only a person can approve that (launch flags do not), and the "
        "approval is never reused",
    )


def _confine_one(
    st: _State,
    text: str,
    tilde: bool,
    word: Word | None,
    span: tuple[int, int],
    *,
    redirect: bool,
    verb: str,
    by: str,
) -> None:
    outside_rule = "redirect-outside-workspace" if redirect else "write-outside-workspace"
    if text in _DISCARD or _FD_PATH.match(text):
        return
    where, path = _locate(st, text, tilde)
    if where == "unknown":
        _unnameable(st, span, redirect, f"{by} {verb} {_clip(text)}: {path}")
        return
    if where == "home":
        st.writes.append(Write(path, False, span))
        st.add(
            "deny",
            outside_rule,
            span,
            f"{by} {verb} {_clip(path)}, in a home directory outside the workspace; "
            "no permission or flag lifts this",
        )
        return
    # No lexical normalisation before resolving: the kernel follows a symlink
    # before it applies a later `..` (link/../x climbs from link's target).
    real = _real_below(st, path)
    inside = _within(real, st.ws_real)
    if word is not None and word.glob and inside:
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
            outside_rule,
            span,
            f"{by} {verb} {real}, outside the workspace; no permission or flag lifts this",
        )
        return
    rel = posixpath.relpath(real, st.ws_real)
    parts = tuple(p for p in rel.split("/") if p and p != ".")
    guarded = protection(parts, "write", fold=case_insensitive(st.ws_real))
    if guarded is not None and guarded.rule == "path-run-records":
        st.add(
            "deny",
            "run-records-write",
            span,
            f"{by} {verb} {rel}: {guarded.reason}; no permission or flag lifts this",
        )
        return
    if redirect:
        st.add(
            "ask",
            REDIRECT_WRITE_RULE,
            span,
            f"the redirect writes {rel} in the workspace; it answers to the write_file permission",
        )
    if guarded is not None and guarded.rule == "path-client-settings":
        st.add(
            "ask",
            CLIENT_SETTINGS_RULE,
            span,
            f"{by} {verb} {rel}, {guarded.reason}; only a person can approve writing it "
            "(launch flags do not)",
        )
    elif guarded is not None and guarded.rule == "path-vcs-internal":
        st.add(
            "ask",
            "vcs-internal-write",
            span,
            f"{by} {verb} {rel}: {guarded.reason}; only a person can approve that",
        )
    elif guarded is not None or sensitive_path(text):
        st.add(
            "ask",
            "credential-path",
            span,
            f"{by} {verb} {rel}, which looks like a credential file; only a person can "
            "approve that",
        )


def _writer_targets(st: _State, prog: str, args: tuple[Word, ...] | list[Word]) -> None:
    """Judge every file a recognised writer among the commands changes."""
    syms = [_word_text(st, w) for w in args]
    texts = [t if t is not None else UNKNOWN for t, _ in syms]
    targets = write_targets(prog, texts)
    if targets is None:
        return
    unknown = next((k for k, (t, _) in enumerate(syms) if t is None), None)
    if unknown is not None:
        w = args[unknown]
        # an argument only known at run time may be a target, or an option
        # that moves one (-t DIR): nothing this command writes can be named
        _unnameable(
            st,
            (w.start, w.end),
            False,
            f"{prog} is given {_clip(w.raw)}, only known at run time, so what it changes "
            "cannot be named",
        )
    for t in targets:
        _writer_target(st, prog, args, syms, t)


def _writer_target(
    st: _State,
    prog: str,
    args: tuple[Word, ...] | list[Word],
    syms: list[tuple[str | None, bool]],
    t: Target,
) -> None:
    if t.index == RUN_TIME:
        w0 = args[0] if args else None
        span = (w0.start, args[-1].end) if w0 is not None else (0, 0)
        _unnameable(st, span, False, f"{prog} creates a file in $TMPDIR, only known at run time")
        return
    if t.index == CWD:
        span = (args[0].start, args[-1].end) if args else (0, 0)
        _confine_write(st, ".", False, None, span, redirect=False, kind=t.kind)
        return
    w = args[t.index]
    text, tilde = syms[t.index]
    if text is None:
        return  # reported once for the whole command
    if t.offset:
        # --output=FILE, -oFILE: no tilde expansion, except after NAME= in an
        # unquoted word (bash expands `of=~/x`)
        first = w.parts[0]
        tilde = (
            first.kind == "lit"
            and _ASSIGNMENT.match(text[: t.offset]) is not None
            and first.raw[t.offset : t.offset + 1] == "~"
        )
        text = text[t.offset :]
    if not text:
        return  # an empty name: the program refuses it
    _confine_write(st, text, tilde, w, (w.start, w.end), redirect=False, kind=t.kind)


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
        # it may be cd, or eval, or a function: the directory is unknown after it
        st.restore((None, None, None))
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
    if prog in _PRIVILEGE:
        _privilege(st, prog, w0, args, vals)
        return
    if prog in WRITER_PROGRAMS:
        _writer_targets(st, prog, args)

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
            sub = _nested(st, " ".join(t or "" for t in texts), (args[0].start, args[-1].end))
            if sub.cd_trusted is False:
                st.cd_trusted = False  # eval 'trap ...' is this shell's trap
            if _sequential(st):
                st.restore(sub.location())  # eval's cd is the shell's own
            else:
                st.restore((None, None, None))
        else:
            st.restore((None, None, None))  # it may change directory to anywhere
        return
    if prog == "trap":
        _trap_action(st, args)
    if prog == "find":
        _find_exec(st, args, vals)

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
            _git_repository(st, w0, vals)
        for iss in checked.issues:
            st.add(
                "deny" if iss.decision == "deny" else "ask",
                iss.rule,
                span_of(iss.index),
                iss.message,
            )
        text_args = checked.text_args
        paths = checked.paths
        if checked.walk is not None:
            _walk(st, prog, w0, args, checked.walk)
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
    if (checker is None or writes_too) and prog not in ("cd", "pushd", "popd"):
        # A program that may write: the arguments that name a client's own
        # settings ask a person (a read-only program reading them does not).
        _client_settings_args(st, args, text_args)
    if prog in ("cd", "pushd", "popd"):
        _change_dir(st, prog, args)
    elif prog in _CHANGES_CD or (prog == "set" and _physical(vals)):
        # a script run in this shell, a trap, an option: any of them may
        # change directory or what cd does, so the guard stops following it
        st.restore((None, None, None))
        st.cd_trusted = False
    _generic_args(st, args, text_args, paths, probe=safe is not None and checker is None)


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


# Programs that run a command as another user (root, most often). An agent
# never acquires privileges: with a command or without one (a root shell,
# an edit as root), they are refused; the inner command is still judged so
# that the message names the worst of it.
_PRIVILEGE = frozenset({"sudo", "sudoedit", "doas", "su", "runuser", "pkexec", "run0"})


def _privilege(
    st: _State, prog: str, w0: Word, args: tuple[Word, ...] | list[Word], vals: list[str]
) -> None:
    # the inner command first: a refusal of its own (sudo rm -rf /) names the verdict
    if prog in WRAPPERS:
        u = unwrap(prog, vals)
        if u.split_string is not None:
            _nested(st, u.split_string, (w0.start, args[-1].end if args else w0.end))
        if u.inner_start is not None:
            _argv(st, args[u.inner_start :])
    elif prog != "sudoedit":
        # pkexec [--user U] CMD, run0 [OPTIONS] CMD: the first operand
        s = scan(
            vals,
            "uDg" if prog == "run0" else "",
            ("user", "machine", "chdir", "group", "property", "description", "slice", "setenv"),
            permute=False,
        )
        if s.operands:
            _argv(st, args[s.operands[0] :])
    st.add(
        "deny",
        "privilege",
        (w0.start, w0.end),
        f"{prog} runs a command with another user's privileges; Charter never runs that, "
        "whatever the permissions or flags",
    )


def _wrapper(
    st: _State,
    prog: str,
    w0: Word,
    args: tuple[Word, ...] | list[Word],
    vals: list[str],
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
            _unnameable(
                st,
                (w0.start, args[-1].end),
                False,
                f"xargs runs {posixpath.basename(inner)} on names it reads from its input",
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


def _trap_action(st: _State, args: tuple[Word, ...] | list[Word]) -> None:
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
    _nested(st, text, (rest[0].start, rest[0].end))


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
            # exec-option finding; only its refusals and the asks only a
            # person can answer (what it writes cannot be named) add information
            st.findings[sub_findings:] = [
                f
                for f in st.findings[sub_findings:]
                if f.decision == "deny" or f.rule in PERSON_ONLY_RULES
            ]
            i = j
        i += 1


def _walk(st: _State, prog: str, w0: Word, args: tuple[Word, ...] | list[Word], walk: Walk) -> None:
    """Look through the trees a recursive program reads (see ``walk.py``)."""
    roots: list[tuple[str, tuple[int, int]]] = []
    if not walk.roots:
        if st.cwd is None:
            return  # after `cd $X`: the cd already asks, and the tree is unknown
        roots.append((st.cwd, (w0.start, w0.end)))
    for idx, value in walk.roots:
        w = args[idx] if 0 <= idx < len(args) else w0
        if (
            value == UNKNOWN
            or value.startswith("~")
            or w.glob
            or (st.cwd is None and not value.startswith("/"))
        ):
            continue  # an expansion, a home path or a pattern: already a finding
        raw = (
            "/" + value.lstrip("/")
            if value.startswith("/")
            else posixpath.join(st.cwd or "/", value)
        )
        roots.append((raw, (w.start, w.end)))
    budget = Budget()
    for raw, span in roots:
        if not _within(posixpath.normpath(raw), st.ws):
            continue  # outside: the path check has already asked
        real = _real_below(st, raw)
        if not _within(real, st.ws_real) or not os.path.isdir(real):
            continue  # a file is read as the path it is; nothing to walk
        found = walk_tree(
            real,
            st.ws_real,
            follow=walk.follow,
            hidden=walk.hidden,
            depth=walk.depth,
            secret=sensitive_path,
            budget=budget,
            skip_dirs=gitignored_dirs(real) if walk.gitignore else frozenset(),
        )
        if found is None:
            continue
        if found.kind == "credential":
            st.add(
                "ask",
                "credential-path",
                span,
                f"{prog} reads the tree under {_clip(raw)}, which holds the credential "
                f"{_clip(found.path)}; it needs approval",
            )
        elif found.kind == "outside":
            rule = "credential-path" if sensitive_path(found.target) else "path-outside-workspace"
            st.add(
                "ask",
                rule,
                span,
                f"{prog} follows the symlink {_clip(found.path)}, which leads outside the "
                f"workspace to {_clip(found.target)}; it needs approval",
            )
        else:
            st.add(
                "ask",
                "tree-too-large",
                span,
                f"{prog} reads the tree under {_clip(raw)}, which has more than "
                f"{WALK_LIMIT:,} entries for the guard to check; it needs approval",
            )
        return


def _git_repository(st: _State, w0: Word, vals: list[str]) -> None:
    """git reads the configuration of the repository it finds, and that
    configuration names programs git runs (diff.external, core.fsmonitor,
    textconv, pagers): only a repository Charter trusts is read-only."""
    if not vals or vals[0] in ("--version", "version", "help", "--help", "-h"):
        return
    if st.cwd is None:
        return  # after `cd $X`: the cd already asks
    problem = untrusted_repository(_real_below(st, st.cwd), st.ws_real, resolved=True)
    if problem is not None:
        st.add(
            "ask",
            "untrusted-repository",
            (w0.start, w0.end),
            f"git would use {problem}; its configuration can run programs, so git needs approval "
            "here",
        )


def _safe_match(
    entries: tuple[SafeShellCommand, ...], name: str, vals: list[str]
) -> SafeShellCommand | None:
    for e in entries:
        words = e.words
        if words[0] == name and len(vals) >= len(words) - 1:
            if all(vals[k] == words[k + 1] for k in range(len(words) - 1)):
                return e
    return None


def _change_dir(st: _State, prog: str, args: tuple[Word, ...] | list[Word]) -> None:
    """Follow the working directory through ``cd``/``pushd``/``popd``: a
    known directory, a place in the home directory (``home_cwd``), or
    unknown (both None). ``$OLDPWD`` (``cd -``, ``~-``) is tracked too."""
    if not _sequential(st) or not _cd_trusted(st):
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
        text, tilde = _word_text(st, args[operand])
        where, path = ("unknown", "") if text is None else _locate(st, text, tilde)
        if where == "home":
            st.cwd, st.home_cwd = None, posixpath.normpath(path)
        elif where == "unknown":
            st.cwd = None
        else:
            st.cwd = posixpath.normpath(path)
            if any(v.startswith("-") and "P" in v for v in vals[:operand]):
                # cd -P follows symlinks before `..` (the physical directory)
                st.cwd = _realpath(path)
    st.prev_cwd = old if before[1] is None else None


def _generic_args(
    st: _State,
    args: tuple[Word, ...] | list[Word],
    text_args: frozenset[int],
    paths: tuple[tuple[int, str], ...] = (),
    *,
    probe: bool = False,
) -> None:
    """Judge every argument that names a file: each word that is not text,
    and each path a program rule found inside a word (``--file=X``, ``-fX``,
    a sed ``r X`` command). ``probe``: the program's options are unknown
    and it may run unprompted ([safe_commands]), so a value glued to its
    flags is looked for on disk too."""
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
        for cand, tilde in _path_candidates(v, w, st.cwd if probe else None):
            # the word's own text was checked for a credential name just above
            if _path_finding(st, cand, tilde, (w.start, w.end), w.glob, named=cand == v):
                break
    for idx, value in paths:
        if not 0 <= idx < len(args) or args[idx].value is None or value == UNKNOWN:
            continue
        word = args[idx]
        _path_finding(st, value, value.startswith("~"), (word.start, word.end), False)


def _client_settings(st: _State, rel: str, span: tuple[int, int]) -> None:
    """A write to ``rel`` (relative to the workspace's real root) that lands in
    a coding client's settings or instructions: an ask only a person answers."""
    reason = client_settings_reason(rel.split("/"))
    if reason is not None:
        st.add(
            "ask",
            CLIENT_SETTINGS_RULE,
            span,
            f"{rel} is {reason}; only a person can approve writing it (launch flags do not)",
        )


def _client_settings_args(
    st: _State, args: tuple[Word, ...] | list[Word], text_args: frozenset[int]
) -> None:
    for idx, w in enumerate(args):
        v = w.value
        if v is None or idx in text_args:
            continue
        for cand, tilde in _path_candidates(v, w, st.cwd):
            if tilde or cand.startswith("~"):
                continue  # outside the workspace: other rules speak about it
            if cand.startswith("/"):
                raw = "/" + cand.lstrip("/")
            elif st.cwd is None:
                # relative to a directory changed earlier: judge the text alone
                if client_settings_reason(cand.split("/")) is not None:
                    _client_settings(st, cand, (w.start, w.end))
                continue
            else:
                raw = posixpath.join(st.cwd, cand)
            real = _real_below(st, raw)
            if _within(real, st.ws_real):
                _client_settings(st, posixpath.relpath(real, st.ws_real), (w.start, w.end))


def _path_finding(
    st: _State,
    value: str,
    tilde: bool,
    span: tuple[int, int],
    glob_word: bool,
    *,
    named: bool = False,
) -> bool:
    """Add the finding for one path an argument names, if it needs one."""
    problem = _path_problem(st, value, tilde, glob_word, named=named)
    if problem is None:
        return False
    rule, message = problem
    st.add("ask", rule, span, message + "; it needs approval")
    return True


def _path_candidates(v: str, w: Word, cwd: str | None) -> list[tuple[str, bool]]:
    """The paths a word may name when the program's options are not known
    (a [safe_commands] program): the word, or a value attached to an option:
    after any number of bundled flags (`-Rf/etc/x`), a rest that looks like
    a path or names an existing entry (`-fnotes.txt`, where notes.txt may
    be a symlink)."""
    if v.startswith("-") and len(v) > 1:
        if "=" in v:
            val = v.split("=", 1)[1]
            return [(val, val.startswith("~"))]
        if not v.startswith("--") and len(v) > 2:
            out: list[tuple[str, bool]] = []
            for k in range(2, len(v)):
                rest = v[k:]
                if rest.startswith(("/", "~", "..")):
                    return [*out, (rest, rest.startswith("~"))]
                if cwd is not None and os.path.lexists(posixpath.join(cwd, rest)):
                    out.append((rest, False))
            return out
        return []
    return [(v, w.tilde)]


def _outside(st: _State, value: str, tilde: bool, glob_word: bool = False) -> bool:
    """Whether a path the command names lies outside the workspace (or is a
    credential reached through it); see :func:`_path_problem`."""
    return _path_problem(st, value, tilde, glob_word) is not None


def _path_problem(
    st: _State, value: str, tilde: bool, glob_word: bool = False, *, named: bool = False
) -> tuple[str, str] | None:
    """Why reading the path ``value`` needs approval: ``credential-path`` or
    ``path-outside-workspace`` with a message, or None.

    The text is judged first, then where the kernel really leads: a
    symlink's target, ``..`` after a symlink (the kernel climbs from the
    link's target, so there is no lexical normalisation before resolving),
    ``/dev/fd/..`` and ``/proc/self`` (links into the guard's own process
    table, which is not the command's). Only a handful of device files are
    taken as they are: the standard streams, the null device and the random
    sources.
    """
    if not named and sensitive_path(value):
        return "credential-path", f"{_clip(value)} names a credential file or directory"
    if tilde or value.startswith("~"):
        return "path-outside-workspace", f"{_clip(value)} is outside the workspace"
    if value.startswith("/"):
        raw = "/" + value.lstrip("/")
        if ".." not in raw.split("/"):
            device = posixpath.normpath(raw)
            if device in _DEVICES or _FD_PATH.match(device):
                return None
    elif st.cwd is None:
        # relative to a directory changed earlier in the command: only a
        # climb is known to leave; anything else is judged where it runs
        if ".." in value.split("/"):
            return "path-outside-workspace", f"{_clip(value)} is outside the workspace"
        return None
    else:
        raw = posixpath.join(st.cwd, value)
    norm = posixpath.normpath(raw)
    if not _within(norm, st.ws):
        if sensitive_path(norm):
            return "credential-path", f"{_clip(value)} leads to the credential {_clip(norm)}"
        if raw.startswith(("/dev/", "/proc/")):
            # /dev/fd and /dev/stdin are links into /proc/self, whose meaning
            # the kernel decides: resolve them to name what is really read
            real = _realpath(raw)
            if sensitive_path(real):
                return "credential-path", f"{_clip(value)} leads to the credential {_clip(real)}"
        return "path-outside-workspace", f"{_clip(value)} is outside the workspace"
    real = _real_below(st, raw)
    if not _within(real, st.ws_real):
        if sensitive_path(real):
            return "credential-path", f"{_clip(value)} leads to the credential {_clip(real)}"
        return (
            "path-outside-workspace",
            f"{_clip(value)} leads outside the workspace to {_clip(real)}",
        )
    lexical = st.ws_real.rstrip("/") + norm[len(st.ws.rstrip("/")) :]
    if real != lexical and real != st.ws_real:
        # a symlink inside the workspace: judge the file it leads to by its name too
        rel = real[len(st.ws_real.rstrip("/")) + 1 :]
        if sensitive_path(rel):
            return "credential-path", f"{_clip(value)} leads to the credential file {_clip(rel)}"
    # the shell hands the command whatever the pattern matches now
    if glob_word and any(c in value for c in "*?[") and _match_outside(st, raw) is not None:
        return "path-outside-workspace", f"{_clip(value)} matches a file outside the workspace"
    return None


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
