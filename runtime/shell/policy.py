"""The guard's inputs and outputs: the compiled shell policy, the verdict,
how a verdict meets the shell tool's permission, and the approval
fingerprint."""

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from charter.runtime.plan.shell import SafeShellCommand, ShellPolicy
from charter.runtime.plan.vocabulary import RANK, Permission, stricter

__all__ = [
    "CLIENT_SETTINGS_RULE",
    "PERSON_ONLY_RULES",
    "REDIRECT_WRITE_RULE",
    "RULE_KEYS",
    "Finding",
    "SafeShellCommand",
    "ShellPolicy",
    "Verdict",
    "Write",
    "combine",
    "fingerprint",
    "person_only",
]


# The records are NamedTuples: they are defined at every start-up, and a
# NamedTuple costs a tenth of a frozen dataclass to define.
class Finding(NamedTuple):
    """One reason found in one simple command."""

    decision: Permission
    rule: str
    span: tuple[int, int]
    message: str


class Write(NamedTuple):
    """A file the command writes or deletes (through a redirect or a
    recognised writer such as ``cp`` or ``rm``). ``path`` is the resolved
    absolute path, or None when the target cannot be named before the
    command runs."""

    path: str | None
    inside_workspace: bool
    span: tuple[int, int]


class Verdict(NamedTuple):
    """The shell guard's decision on a command, the deciding rule and where in the text."""

    decision: Permission
    rule: str
    span: tuple[int, int]
    message: str
    writes: tuple[Write, ...] = ()
    # Never cache an approval of this command: its meaning depends on values
    # only known when it runs.
    ungrantable: bool = False
    findings: tuple[Finding, ...] = ()

    @property
    def person_only(self) -> Finding | None:
        """The first ask that only a person can answer (see :func:`person_only`)."""
        return person_only(self)

    def to_json(self) -> dict[str, object]:
        only = self.person_only
        return {
            "decision": self.decision,
            "rule": self.rule,
            "span": list(self.span),
            "message": self.message,
            "ungrantable": self.ungrantable,
            "person_only": None if only is None else only.rule,
            "writes": [
                {"path": w.path, "inside_workspace": w.inside_workspace, "span": list(w.span)}
                for w in self.writes
            ],
            "findings": [
                {"decision": f.decision, "rule": f.rule, "span": list(f.span), "message": f.message}
                for f in self.findings
            ],
        }


# Findings that only say "this redirect writes a file inside the workspace":
# combine() answers those with the write_file permission instead.
REDIRECT_WRITE_RULE = "redirect-write"
# A write into a coding client's own settings or instructions (see
# charter.runtime.policy.workspace.client_settings_reason): only a person may
# approve it, so no launch flag lifts it.
CLIENT_SETTINGS_RULE = "client-settings"

# Asks that only a person can answer: no permission and no launch flag
# (``--allow shell``, ``--yolo``) lifts them, as none lifts the file tools'
# ask for a credential path. A credential read, a write under .git/, a
# write into a coding client's settings, a
# write whose target is only known when the command runs (the guard cannot
# tell it is inside the workspace, so a flag would be a way out of it), and a
# command the guard cannot parse (nothing it writes can be named).
PERSON_ONLY_RULES: frozenset[str] = frozenset(
    {
        "credential-path",
        CLIENT_SETTINGS_RULE,
        "vcs-internal-write",
        "unnameable-redirect",
        "unnameable-write",
        # text the guard cannot read: what it writes cannot be named either
        "unparseable",
        "internal-error",
        # a bound the guard stopped at (a command too long to read, a tree too
        # large to walk for credentials): a bound is never a way to allow, so
        # a launch flag does not lift it either
        "too-long",
        "tree-too-large",
    }
)


def person_only(verdict: Verdict) -> Finding | None:
    """The first of the verdict's asks that only a person can answer, if any."""
    for f in verdict.findings:
        if f.decision == "ask" and f.rule in PERSON_ONLY_RULES:
            return f
    return None


def combine(
    tool_permission: Permission,
    verdict: Verdict,
    write_permission: Permission,
    *,
    lifted_by_flag: bool,
) -> tuple[Permission, str]:
    """The final decision for one shell call, and why.

    1. A write outside the workspace, or any guard ``deny``, is final.
    2. Otherwise the result is the stricter of the tool's permission and the
       guard's verdict, except that a guard ``allow`` lifts the tool's ``ask``.
    3. Each file the command writes (a redirect, or a recognised writer such
       as ``cp``, ``rm``, ``tee``) answers to the write_file permission: the
       result is at least as strict as that.
    4. Launch flags (``--allow shell``, ``--yolo``) lift a remaining ``ask``,
       unless the guard found one that only a person can answer
       (:data:`PERSON_ONLY_RULES`).
    Nothing lifts ``deny``; a tool ``allow`` never lowers a guard ``ask``.
    """
    if any(w.path is not None and not w.inside_workspace for w in verdict.writes):
        return "deny", "the command writes outside the workspace; no permission or flag lifts that"
    guard: Permission = "allow"
    for f in verdict.findings:
        if f.rule != REDIRECT_WRITE_RULE:
            guard = stricter(guard, f.decision)
    if guard == "deny":
        return "deny", f"the shell guard refuses this command ({verdict.rule})"
    if tool_permission == "deny":
        return "deny", "the shell tool's permission is deny"
    if guard == "allow" and tool_permission == "ask":
        decision: Permission = "allow"
        reason = "the guard recognises the command as safe, which lifts the shell tool's ask"
    else:
        decision = stricter(tool_permission, guard)
        reason = (
            f"the guard asks ({_guard_rule(verdict)})"
            if guard == "ask"
            else f"the shell tool's permission is {tool_permission}"
        )
    if verdict.writes:
        if write_permission == "deny":
            return "deny", "the command writes a file and write_file is denied"
        if RANK[write_permission] > RANK[decision]:
            decision = write_permission
            reason = "the command writes a file, which answers to write_file"
    if decision == "ask":
        only = person_only(verdict)
        if only is not None:
            return "ask", (
                f"the guard asks ({only.rule}); only a person can approve this "
                "(launch flags do not)"
            )
        if lifted_by_flag:
            return "allow", "a launch flag lifts the remaining ask"
    return decision, reason


def _guard_rule(verdict: Verdict) -> str:
    only = person_only(verdict)
    if only is not None:
        return only.rule
    for f in verdict.findings:
        if f.rule != REDIRECT_WRITE_RULE and f.decision != "allow":
            return f.rule
    return verdict.rule


def fingerprint(
    command: str,
    cwd: str | Path,
    env_overlay: Mapping[str, str],
    *,
    background: bool,
    timeout_s: int,
) -> str:
    """A digest of one execution shape: the exact command text, the working
    directory, the explicit environment overlay (keys and values) and the
    execution options. An approval stored under it covers that shape only."""
    payload = {
        "v": 1,
        "command": command,
        "cwd": str(cwd),
        "env": sorted([str(k), str(v)] for k, v in env_overlay.items()),
        "background": bool(background),
        "timeout_s": int(timeout_s),
    }
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


# Every rule key the guard can report, with the decision it carries. Keys are
# stable: tools and transcripts match on them.
RULE_KEYS: dict[str, Permission] = {
    # allow
    "read-only": "allow",
    "safe-command": "allow",
    # deny
    "destructive-rm": "deny",
    "destructive-chmod": "deny",
    "mkfs": "deny",
    "block-device-write": "deny",
    "fork-bomb": "deny",
    "power-control": "deny",
    "kill-all": "deny",
    "redirect-outside-workspace": "deny",
    "sudo-stdin": "deny",
    "write-outside-workspace": "deny",
    "run-records-write": "deny",
    "privilege": "deny",
    # ask: the text itself
    "empty-command": "ask",
    "unparseable": "ask",
    "hidden-characters": "ask",
    "comment-expansion": "ask",
    "internal-error": "ask",
    "too-long": "ask",
    # ask: structure
    "subshell": "ask",
    "control-structure": "ask",
    "heredoc": "ask",
    # ask: expansions
    "command-substitution": "ask",
    "process-substitution": "ask",
    "parameter-expansion": "ask",
    "arithmetic-expansion": "ask",
    "filename-expansion": "ask",
    "brace-expansion": "ask",
    # ask: the program
    "dynamic-command": "ask",
    "non-bare-executable": "ask",
    "unknown-command": "ask",
    "malformed-command": "ask",
    "executes-code": "ask",
    "shell-eval": "ask",
    "wrapper": "ask",
    "inline-assignment": "ask",
    "cwd-change": "ask",
    "shell-state": "ask",
    "network": "ask",
    "file-write": "ask",
    "file-delete": "ask",
    "process-kill": "ask",
    "system-change": "ask",
    "system-time": "ask",
    "interactive": "ask",
    # ask: arguments of otherwise read-only programs
    "exec-option": "ask",
    "embedded-write": "ask",
    "in-place-edit": "ask",
    "sed-script": "ask",
    "awk-program": "ask",
    "hidden-file-list": "ask",
    "tree-too-large": "ask",
    "untrusted-repository": "ask",
    "git-global-option": "ask",
    "git-network": "ask",
    "git-mutation": "ask",
    "git-history": "ask",
    "git-config": "ask",
    "credential-path": "ask",
    "path-outside-workspace": "ask",
    # ask: redirects and writers
    "redirect-write": "ask",
    "terminal-write": "ask",
    "client-settings": "ask",
    "unnameable-redirect": "ask",
    "unnameable-write": "ask",
    "vcs-internal-write": "ask",
}
