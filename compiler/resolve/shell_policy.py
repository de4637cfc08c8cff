"""Compiling ``[safe_commands]`` into the shell guard's plan data.

Each shell entry is parsed with the guard's own grammar, checked, and stored
as a tuple of literal words the runtime compares against parsed commands, so
the runtime never parses an entry. An entry is refused when it is not one
plain command of literal words (``unparseable-safe-command``), when it would
pre-approve a redirect or a write (``safe-command-pre-approves-write``), or
when it names a wrapper, shell or interpreter (``safe-command-grants-wrapper``).
Its ``match``/``not_match`` examples are judged by the guard at compile time
(``safe-command-example-mismatch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from charter.compiler.diagnostics import Diagnostic, Span, format_key_path
from charter.compiler.frontends.config_toml import SafeCommands, SafeShellEntry, load_user_config
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.plan.shell import SafeShellCommand, ShellPolicy

# The guard (its grammar, program tables and judge) is imported where an
# entry is actually checked: most projects have no [safe_commands], and
# loading the guard is most of a validate's start-up otherwise.

__all__ = ["compile_shell_policy", "parse_safe_entry", "shell_policy_from_config"]

# Sub-commands that run whatever command follows them.
_RUNNERS: dict[str, frozenset[str]] = {
    "uv": frozenset({"run", "tool"}),
    "npm": frozenset({"exec", "x"}),
    "pnpm": frozenset({"exec", "dlx"}),
    "yarn": frozenset({"exec", "dlx"}),
    "poetry": frozenset({"run"}),
    "pdm": frozenset({"run"}),
    "pipx": frozenset({"run"}),
    "bundle": frozenset({"exec"}),
    "hatch": frozenset({"run"}),
    "conda": frozenset({"run"}),
    "nix": frozenset({"run", "shell", "develop"}),
    "docker": frozenset({"run", "exec"}),
}
_RUNNER_PROGRAMS = frozenset({"npx", "uvx", "bunx", "pnpx"})
_WRITE_RULES = frozenset(
    {
        "redirect-write",
        "embedded-write",
        "in-place-edit",
        "file-write",
        "file-delete",
        "unnameable-redirect",
        "redirect-outside-workspace",
    }
)
# Compile-time judging is purely lexical; these paths never touch a real tree.
_WS = "/charter-compile-check/workspace"


def parse_safe_entry(text: str) -> tuple[tuple[str, ...] | None, str | None, str]:
    """``(words, None, rule)`` for a usable entry, else ``(None, why, rule)``
    naming the rule that refuses it."""
    if text.startswith("env:"):
        return (
            None,
            (
                "env: entries are not supported: an inline environment assignment "
                "always needs approval"
            ),
            "unparseable-safe-command",
        )
    from charter.runtime.shell.programs import ASK_PROGRAMS, INTERPRETERS, SHELLS, WRAPPERS
    from charter.runtime.shell.syntax import SimpleCommand, parse

    result = parse(text)
    if result.program is None:
        why = result.error.message if result.error is not None else "it does not parse"
        return (
            None,
            f"the entry does not parse as a shell command ({why})",
            "unparseable-safe-command",
        )
    commands = result.program.commands
    if len(commands) != 1 or not isinstance(commands[0], SimpleCommand) or result.comments:
        return None, "the entry must be exactly one simple command", "unparseable-safe-command"
    cmd = commands[0]
    if cmd.redirects:
        return (
            None,
            "the entry contains a redirect, which is a file write",
            "safe-command-pre-approves-write",
        )
    if not cmd.words:
        return None, "the entry names no program", "unparseable-safe-command"
    words: list[str] = []
    for w in cmd.words:
        if w.value is None or w.glob or w.brace or w.tilde:
            return (
                None,
                (f"{w.raw!r} expands when the shell runs; entries are literal words"),
                "unparseable-safe-command",
            )
        if w.raw != w.value or not w.value:
            return (
                None,
                (
                    f"{w.raw!r} does not read back as itself; write entries as plain "
                    "words without quotes or escapes"
                ),
                "unparseable-safe-command",
            )
        words.append(w.value)
    first = words[0]
    if "=" in first:
        return None, "the entry starts with an environment assignment", "unparseable-safe-command"
    if "/" in first:
        return (
            None,
            "the entry names a program by path; use its bare name",
            "unparseable-safe-command",
        )
    if first in WRAPPERS or first in SHELLS or first in INTERPRETERS or first in _RUNNER_PROGRAMS:
        return (
            None,
            f"{first} runs other commands, so the entry would pre-approve anything",
            "safe-command-grants-wrapper",
        )
    if first.startswith("python") or (first.startswith("pip") and "install" in words):
        return None, f"{first} runs arbitrary code", "safe-command-grants-wrapper"
    if len(words) > 1 and words[1] in _RUNNERS.get(first, frozenset()):
        return (
            None,
            (
                f"{first} {words[1]} runs whatever command follows it, so the entry "
                "would pre-approve anything"
            ),
            "safe-command-grants-wrapper",
        )
    rule_why = ASK_PROGRAMS.get(first)
    if rule_why is not None and rule_why[0] in ("file-write", "file-delete"):
        return None, f"{first} {rule_why[1]}", "safe-command-pre-approves-write"
    return tuple(words), None, ""


def compile_shell_policy(
    safe: SafeCommands | None,
    *,
    source: str,
    smap: SourceMap | None,
    key_prefix: Sequence[str | int] = ("safe_commands",),
) -> tuple[ShellPolicy, list[Diagnostic]]:
    """Compile ``[safe_commands]`` into a :class:`ShellPolicy` plus diagnostics.
    Refused entries are left out of the policy."""
    if safe is None:
        return ShellPolicy(), []
    diags: list[Diagnostic] = []
    compiled: list[SafeShellCommand] = []
    prefix = tuple(key_prefix)

    def span(*path: str | int) -> tuple[Span, str]:
        full = (*prefix, *path)
        sp = smap.value_span(full) if smap is not None else Span(source)
        return sp, format_key_path(full)

    for i, item in enumerate(safe.shell):
        if isinstance(item, SafeShellEntry):
            text, entry = item.command, item
            where: tuple[str | int, ...] = ("shell", i, "command")
        else:
            text, entry = item, None
            where = ("shell", i)
        words, why, rule = parse_safe_entry(text)
        sp, kp = span(*where)
        if words is None:
            diags.append(diag(rule, f"safe command {text!r} is refused: {why}", sp, key_path=kp))
            continue
        compiled_entry = SafeShellCommand(
            words=words,
            source=text,
            justification=entry.justification if entry else None,
            exact=entry.exact if entry else False,
        )
        leftover = _cannot_lift(compiled_entry)
        if leftover is not None and leftover.startswith("writes"):
            diags.append(
                diag(
                    "safe-command-pre-approves-write",
                    f"safe command {text!r} is refused: it {leftover}",
                    sp,
                    key_path=kp,
                )
            )
            continue
        if leftover is not None:
            diags.append(
                diag(
                    "safe-command-cannot-be-lifted",
                    f"safe command {text!r} still {leftover}",
                    sp,
                    key_path=kp,
                )
            )
        compiled.append(compiled_entry)
        if entry is not None:
            diags.extend(_check_examples(compiled_entry, entry, span, i))
    return ShellPolicy(defaults=safe.defaults, safe=tuple(compiled)), diags


def shell_policy_from_config(
    path: Path, display: str | None = None
) -> tuple[ShellPolicy | None, list[Diagnostic]]:
    """The shell policy a user config's ``[safe_commands]`` makes (what
    ``charter check-shell --config`` judges with), and what was found in the
    file (named ``display``, else ``path``); no policy when the file does not
    load or has an error."""
    loaded = load_user_config(path, display if display is not None else str(path))
    diags = list(loaded.diagnostics)
    policy = ShellPolicy()
    if loaded.model is not None:
        policy, more = compile_shell_policy(
            loaded.model.safe_commands, source=loaded.display, smap=loaded.smap
        )
        diags.extend(more)
    if loaded.model is None or any(d.is_error for d in diags):
        return None, diags
    return policy, diags


def _cannot_lift(entry: SafeShellCommand) -> str | None:
    from charter.runtime.shell import evaluate

    """What the guard still says about the entry's own words when the entry
    is in force, if that is not allow."""
    v = evaluate(
        " ".join(entry.words),
        cwd=_WS,
        workspace=_WS,
        policy=ShellPolicy(defaults=True, safe=(entry,)),
    )
    if v.decision == "allow":
        return None
    for f in v.findings:
        if f.decision != "allow" and f.rule in _WRITE_RULES:
            return f"writes files ({f.rule}: {f.message})"
    return f"gets {v.decision} from the guard ({v.rule}: {v.message})"


def _check_examples(
    compiled: SafeShellCommand,
    entry: SafeShellEntry,
    span: object,
    index: int,
) -> list[Diagnostic]:
    from charter.runtime.shell import evaluate

    out: list[Diagnostic] = []
    policy = ShellPolicy(defaults=False, safe=(compiled,))
    assert callable(span)
    for field_name, examples, want_allow in (
        ("match", entry.match, True),
        ("not_match", entry.not_match, False),
    ):
        for j, example in enumerate(examples):
            v = evaluate(example, cwd=_WS, workspace=_WS, policy=policy)
            allowed = v.decision == "allow"
            if allowed == want_allow:
                continue
            sp, kp = span("shell", index, field_name, j)
            if want_allow:
                msg = (
                    f"example {example!r} should be covered by {entry.command!r}, but the "
                    f"guard says {v.decision} ({v.rule}: {v.message})"
                )
            else:
                msg = (
                    f"example {example!r} should not be covered by {entry.command!r}, "
                    "but the guard allows it"
                )
            out.append(diag("safe-command-example-mismatch", msg, sp, key_path=kp))
    return out
