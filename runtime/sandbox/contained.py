"""Decisions that know about containment.

Some commands need a person's approval only because of what they could do
*outside* a sandbox: read the home's credentials, reach the network, signal
other processes, change the system. Inside a sandbox that hides the home,
has no network, sees only its own processes and holds no privileges, those
reasons are answered by the sandbox itself, so the plan may mark them
(``contained_allow``: shell-guard rule keys) and ``charter run`` lets such a
command through unprompted, as Claude Code's sandboxed auto-allow does.

Only where the sandbox is really in force: the run applies the marks per
stage, and only when the stage's sandbox was built completely on this host
(:meth:`Containment.rules <charter.runtime.sandbox.run.Containment.rules>`);
``charter check`` and the client hooks contain nothing and never apply them.

The groups a user names in ``[sandbox] auto_allow``:

``outside``
    reasons about paths and processes outside the workspace: reading
    outside it (the home and credentials are hidden), changing directory,
    signalling processes (only the sandbox's own are visible), system and
    clock changes (no capability to make them). (``sudo`` and friends are
    refused by the guard outright, so there is nothing left to answer.)
``network``
    network access, for a sandbox whose network is ``none``;
``code``
    programs whose effect the guard cannot foresee but the sandbox bounds:
    interpreters and test runners, builds, wrappers, ``-exec`` options,
    expansions and compound commands. They may still change the workspace
    (except its protected paths), so this group is the user's choice.

Never answered by containment: text the guard cannot read (unparseable,
hidden characters), changes to the workspace itself (file writes and
deletes, in-place edits, redirects, git history), reading credentials that
live inside the workspace, file lists and program text the guard cannot see
(they could name such a credential), a tree too large for the guard to walk
(a bound is never a way to allow), a repository whose configuration Charter
does not trust, every ask only a person may answer
(:data:`~charter.runtime.shell.policy.PERSON_ONLY_RULES`), and anything the
guard refuses outright. A plan that marks one of these anyway is ignored on
that point.
"""

from __future__ import annotations

from collections.abc import Iterable

from charter.runtime.shell.policy import (
    PERSON_ONLY_RULES,
    REDIRECT_WRITE_RULE,
    Finding,
    Verdict,
    person_only,
)

__all__ = [
    "CONTAINED_RULE",
    "GROUPS",
    "NEVER",
    "allow_contained",
    "rules_for_groups",
]

CONTAINED_RULE = "sandbox-contained"

GROUPS: dict[str, tuple[str, ...]] = {
    "outside": (
        "path-outside-workspace",
        "cwd-change",
        "process-kill",
        "system-change",
        "system-time",
    ),
    "network": ("network", "git-network"),
    "code": (
        "executes-code",
        "exec-option",
        "wrapper",
        "shell-eval",
        "non-bare-executable",
        "unknown-command",
        "dynamic-command",
        "inline-assignment",
        "shell-state",
        "git-global-option",
        "command-substitution",
        "process-substitution",
        "parameter-expansion",
        "arithmetic-expansion",
        "filename-expansion",
        "brace-expansion",
        "subshell",
        "control-structure",
        "heredoc",
    ),
}

# Reasons containment never answers (checked by a test against GROUPS and
# the guard's rule keys: every ask is either in a group or here).
NEVER: frozenset[str] = PERSON_ONLY_RULES | frozenset(
    {
        "empty-command",
        "unparseable",
        "hidden-characters",
        "comment-expansion",
        "internal-error",
        "malformed-command",
        "interactive",
        "file-write",
        "file-delete",
        "in-place-edit",
        "embedded-write",
        "sed-script",
        "git-mutation",
        # Committed contents reach the model whatever contains the command.
        "git-history",
        "git-config",
        "credential-path",
        "redirect-write",
        "unnameable-redirect",
        # The operator's terminal is reachable from inside a sandbox too.
        "terminal-write",
        # Names the guard never sees, or program text it cannot read: either
        # could be a credential inside the workspace.
        "hidden-file-list",
        "awk-program",
        # A bound the guard hit: never a way to allow.
        "tree-too-large",
        # git would run programs a repository's own configuration names.
        "untrusted-repository",
    }
)


def rules_for_groups(groups: Iterable[str], *, network_none: bool) -> tuple[str, ...]:
    """The rule keys the named groups mark; ``network`` only counts for a
    sandbox without network."""
    out: list[str] = []
    for g in groups:
        if g == "network" and not network_none:
            continue
        out.extend(GROUPS.get(g, ()))
    return tuple(sorted(set(out)))


def allow_contained(verdict: Verdict, rules: frozenset[str]) -> Verdict:
    """``verdict`` with its asks lifted when every one of them is a reason
    the sandbox in force answers; otherwise ``verdict`` unchanged. A deny
    stays a deny, redirects still answer to the write_file permission."""
    if verdict.decision != "ask" or not rules or person_only(verdict) is not None:
        return verdict
    rules = rules - NEVER  # whatever a plan says, these stay asks
    asks = [f for f in verdict.findings if f.decision == "ask" and f.rule != REDIRECT_WRITE_RULE]
    if not asks or any(f.rule not in rules for f in asks):
        return verdict
    if any(f.decision == "deny" for f in verdict.findings):
        return verdict
    lifted = tuple(
        Finding("allow", f.rule, f.span, f"{f.message} (answered by the sandbox)")
        if f.decision == "ask" and f.rule in rules
        else f
        for f in verdict.findings
    )
    reasons = ", ".join(dict.fromkeys(f.rule for f in asks))
    return verdict._replace(
        decision="allow",
        rule=CONTAINED_RULE,
        message=(
            f"it runs inside this run's sandbox, which answers what the guard asks about "
            f"({reasons})"
        ),
        findings=lifted,
    )
