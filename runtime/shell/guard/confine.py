"""Where a write lands: redirects and the targets of writing programs.

Every file a command writes or deletes, through a redirect or as the target of
a recognised writer (``cp``, ``rm``, ``tee``, ``dd of=``, ``find -delete``,
...; see ``writers.py``), is held to the confinement ``write_file`` gets:

- outside the workspace: a deny no permission or flag lifts. The home
  directory counts as outside whatever HOME is: under ``charter run`` the
  child's HOME is the run's own folder in ``.charter/``, which the agent
  never writes; under a hook it is the user's home;
- inside, a protected path (``workspace.protection``): ``.charter/`` is a
  deny, ``.git/`` and credential paths are asks only a person answers;
- a target that cannot be named before the command runs (a variable, a
  command substitution, a directory changed to by a name only known then,
  file names ``xargs`` reads from its input) is an ask only a person
  answers, never cached: a flag lifting it would be a way out of the
  workspace.

How a target is named (``~``, ``$HOME``, ``$PWD``, ``~-``...) is
:mod:`.places`' part; reading redirects (``<``) are judged like any path
an argument names (:mod:`.paths`).
"""

from __future__ import annotations

import posixpath

from charter.runtime.policy.workspace import RECORDS_DIR, case_insensitive, protection
from charter.runtime.shell.guard.paths import (
    DISCARD,
    FD_PATH,
    match_outside,
    outside,
    real_below,
    relative,
    sensitive_path,
    within,
)
from charter.runtime.shell.guard.places import ASSIGNMENT, brace_words, locate, word_text
from charter.runtime.shell.guard.state import State, clip
from charter.runtime.shell.policy import CLIENT_SETTINGS_RULE, REDIRECT_WRITE_RULE, Write
from charter.runtime.shell.programs import UNKNOWN, block_device
from charter.runtime.shell.syntax import Redirect, Word
from charter.runtime.shell.writers import CONFIGURED, CWD, RUN_TIME, Target, write_targets

__all__ = ["confine_write", "embedded_write", "judge_redirect", "unnameable", "writer_targets"]


# --- redirects -------------------------------------------------------------------------------


def judge_redirect(st: State, r: Redirect) -> None:
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
            st.walk().heredoc_body(st, doc.body, span)
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
            elif outside(st, v, target.tilde, target.glob):
                st.add(
                    "ask",
                    "path-outside-workspace",
                    span,
                    f"{v} is outside the workspace; reading it needs approval",
                )
        return
    # every remaining operator writes (or opens for writing) a file
    if v is not None and (v in DISCARD or FD_PATH.match(v)):
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
    text, tilde = word_text(st, target)
    confine_write(st, text, tilde, target, span, redirect=True, kind="write")


def confine_write(
    st: State,
    text: str | None,
    tilde: bool,
    word: Word | None,
    span: tuple[int, int],
    *,
    redirect: bool,
    kind: str,
    makes_links: bool = False,
) -> None:
    """Judge one file the command writes (``kind`` "write") or removes
    ("delete"), named by ``text``, as ``write_file`` would be judged.
    ``makes_links``: the program may leave a symlink there (ln, cp, mv...)."""
    verb = "writes" if kind == "write" else "removes"
    by = "the redirect" if redirect else "the command"
    if text is None:
        shown = clip(word.raw) if word is not None else "its target"
        unnameable(st, span, redirect, f"{by} {verb} {shown}, which is only known at run time")
        return
    if word is None or not word.brace:
        _confine_one(
            st, text, tilde, word, span, redirect=redirect, verb=verb, by=by, links=makes_links
        )
        return
    variants = brace_words(text, _BRACE_LIMIT + 1)
    if len(variants) > _BRACE_LIMIT:
        # more names than the guard looks at: the rest cannot be named
        unnameable(st, span, redirect, f"{by} {verb} more than {_BRACE_LIMIT} brace-expanded names")
        return
    for variant in variants:
        # brace expansion comes first: {~,x}/f is ~/f, a home directory path
        home = tilde or variant.startswith("~")
        _confine_one(
            st, variant, home, word, span, redirect=redirect, verb=verb, by=by, links=makes_links
        )


_BRACE_LIMIT = 64
# Programs that may leave a symbolic link at a path they write: making one
# (ln, cp -s), copying one (cp -P/-a/-r), moving one (mv), or unpacking one.
LINK_MAKERS = frozenset({"ln", "link", "cp", "mv", "rsync", "tar", "cpio", "unzip", "install"})
# The names protection() compares case-folded on a case-insensitive file system.
_FOLDED_NAMES = frozenset({RECORDS_DIR, ".git"})


def _fold_matters(parts: tuple[str, ...]) -> bool:
    """Whether folding case can change what protection() says of ``parts``:
    only a component that is one of the folded names in another case
    (``.GIT``). Otherwise both answers are the same, and the file system
    need not be asked whether it ignores case (a directory scan per write)."""
    return any(p not in _FOLDED_NAMES and p.casefold() in _FOLDED_NAMES for p in parts)


def unnameable(st: State, span: tuple[int, int], redirect: bool, why: str) -> None:
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
    st: State,
    text: str,
    tilde: bool,
    word: Word | None,
    span: tuple[int, int],
    *,
    redirect: bool,
    verb: str,
    by: str,
    links: bool = False,
) -> None:
    outside_rule = "redirect-outside-workspace" if redirect else "write-outside-workspace"
    if text in DISCARD or FD_PATH.match(text):
        return
    if text == "/dev/tty":
        st.add(
            "ask",
            "terminal-write",
            span,
            f"{by} writes to /dev/tty, the terminal of the person running the agent, where "
            "escape sequences can change what they see; it needs approval",
        )
        return
    where, path = locate(st, text, tilde)
    if where == "unknown":
        unnameable(st, span, redirect, f"{by} {verb} {clip(text)}: {path}")
        return
    if where == "path":
        lexical = posixpath.normpath(path)
        made = next(
            (m for m in st.made_links if lexical == m or lexical.startswith(m.rstrip("/") + "/")),
            None,
        )
        if links:
            st.made_links.add(lexical)
        if made is not None:
            unnameable(
                st,
                span,
                redirect,
                f"{by} {verb} {clip(text)}, through {clip(made)}, which an earlier command of "
                "this line may have made a symbolic link, so where the write lands is only "
                "known at run time",
            )
            return
    if where == "home":
        st.writes.append(Write(path, False, span))
        st.add(
            "deny",
            outside_rule,
            span,
            f"{by} {verb} {clip(path)}, in a home directory outside the workspace; "
            "no permission or flag lifts this",
        )
        return
    # No lexical normalisation before resolving: the kernel follows a symlink
    # before it applies a later `..` (link/../x climbs from link's target).
    real = real_below(st, path)
    inside = within(real, st.ws_real)
    if word is not None and word.glob and inside:
        # bash writes to the file a pattern matches (l*/f is link/f): judge
        # the matches that exist now too, so a pattern cannot reach a
        # symlinked directory that the plain spelling would be refused for
        escaped = match_outside(st, path)
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
    rel = relative(real, st.ws_real)
    parts = tuple(p for p in rel.split("/") if p and p != ".")
    guarded = protection(parts, "write", fold=_fold_matters(parts) and case_insensitive(st.ws_real))
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


def embedded_write(st: State, prog: str, span: tuple[int, int], target: str | None) -> None:
    """Judge a file a program's own language or options write (sed's ``w``,
    awk's ``print >``, ``sort -o``): the program opens the name as written,
    with no tilde or variable expansion of its own."""
    if target is None or target == UNKNOWN:
        unnameable(st, span, False, f"{prog} writes a file whose name is only known at run time")
        return
    if not target:
        return  # an empty name: the program refuses it
    confine_write(st, target, False, None, span, redirect=False, kind="write")


def writer_targets(st: State, prog: str, args: tuple[Word, ...] | list[Word]) -> None:
    """Judge every file a recognised writer among the commands changes."""
    syms = [word_text(st, w) for w in args]
    texts = [t if t is not None else UNKNOWN for t, _ in syms]
    targets = write_targets(prog, texts)
    if targets is None:
        return
    unknown = next((k for k, (t, _) in enumerate(syms) if t is None), None)
    if unknown is not None:
        w = args[unknown]
        # an argument only known at run time may be a target, or an option
        # that moves one (-t DIR): nothing this command writes can be named
        unnameable(
            st,
            (w.start, w.end),
            False,
            f"{prog} is given {clip(w.raw)}, only known at run time, so what it changes "
            "cannot be named",
        )
    for t in targets:
        _writer_target(st, prog, args, syms, t)


def _writer_target(
    st: State,
    prog: str,
    args: tuple[Word, ...] | list[Word],
    syms: list[tuple[str | None, bool]],
    t: Target,
) -> None:
    if t.index == CONFIGURED:
        w0 = args[0] if args else None
        span = (w0.start, args[-1].end) if w0 is not None else (0, 0)
        unnameable(
            st,
            span,
            False,
            f"{prog} reads what it writes from a configuration (a file or a setting the "
            "guard does not follow), so its targets cannot be named",
        )
        return
    if t.index == RUN_TIME:
        w0 = args[0] if args else None
        span = (w0.start, args[-1].end) if w0 is not None else (0, 0)
        unnameable(st, span, False, f"{prog} creates a file in $TMPDIR, only known at run time")
        return
    links = t.kind == "write" and prog in LINK_MAKERS
    if t.index == CWD:
        span = (args[0].start, args[-1].end) if args else (0, 0)
        confine_write(st, ".", False, None, span, redirect=False, kind=t.kind, makes_links=links)
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
            and ASSIGNMENT.match(text[: t.offset]) is not None
            and first.raw[t.offset : t.offset + 1] == "~"
        )
        text = text[t.offset :]
    if not text:
        return  # an empty name: the program refuses it
    confine_write(
        st, text, tilde, w, (w.start, w.end), redirect=False, kind=t.kind, makes_links=links
    )
