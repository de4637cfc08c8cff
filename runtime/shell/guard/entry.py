"""The guard's entry points: :func:`evaluate` and :func:`judge`.

Each reading of the text (raw, ANSI-stripped, NFKC, and with ``$IFS``
split) is judged on its own :class:`~.state.State`; the findings of all of
them are merged into one verdict, the strictest, named by the finding a
person must see first. Anything unforeseen is caught here and becomes an ask
(or the deny a flat search of the text still finds): the guard never raises.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from functools import partial
from pathlib import Path

from charter.runtime.deadline import Abandoned
from charter.runtime.plan.vocabulary import Permission, stricter
from charter.runtime.shell.guard import commands as command_walk
from charter.runtime.shell.guard.commands import judge_text, salvage
from charter.runtime.shell.guard.paths import realpath
from charter.runtime.shell.guard.state import MAX_COMMAND_CHARS, State
from charter.runtime.shell.normalize import Reading, hidden_characters, readings
from charter.runtime.shell.policy import (
    PERSON_ONLY_RULES,
    REDIRECT_WRITE_RULE,
    Finding,
    ShellPolicy,
    Verdict,
    Write,
)
from charter.runtime.shell.report import Collector, Judgement
from charter.runtime.shell.syntax import ParseResult

__all__ = ["evaluate", "judge"]


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
    except Abandoned:
        raise  # answered already (serve's time limit): no more work for it
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
    decision: Permission,
    rule: str,
    span: tuple[int, int],
    message: str,
    *,
    ungrantable: bool = False,
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
        st = State(command, cw, ws, ws_real, policy, walker=command_walk)
        st.root = command
        st.drive(lambda: salvage(st, command, (0, len(command)), unquote=True))
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
        st = State(reading.text, cw, ws, ws_real, policy, walker=command_walk)
        st.root = command
        if reading.label == "raw":
            st.seen = seen
        st.drive(partial(judge_text, st))
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
    decision: Permission = "allow"
    for f in findings:
        decision = stricter(decision, f.decision)
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


def _map_spans(st: State, parsed: ParseResult) -> None:
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
    return ws, cw, realpath(ws)
