"""Containment behind a hook's allow: Claude Code's command, run in the sandbox.

``charter run`` runs every allowed command inside the stage's OS sandbox; a
client that runs the command itself runs it bare. Claude Code lets a
PreToolUse hook rewrite the call it allows (``updatedInput``), so with
``charter hook claude-code --contain`` an allowed ``Bash`` (or ``Monitor``)
command becomes::

    <charter> sandbox PLAN --agent A --stage S --workdir WORKSPACE -- /bin/bash -c 'ORIGINAL'

the same profile ``charter run`` gives the stage. The original text is one
shell word, quoted by :func:`shlex.join`, so the shell that Claude Code starts
hands it to the contained ``bash`` unchanged: nothing of it (a quote, a
newline, ``$(...)``) is read outside. When the sandbox cannot be built,
``charter sandbox`` exits 125 without running anything.

Claude Code matches its own deny and ask rules against the rewritten command
(seen with 2.1.332), where a team's ``Bash(curl:*)`` no longer matches. So
before rewriting, :func:`client_rule_hit` checks the original command against
the Bash rules of every settings file Claude Code reads, more broadly than
Claude Code does (a rule's words anywhere in the command, at a word
boundary): a hit keeps the rule's deny or ask, never an allow.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "CONTAINED_TOOLS",
    "client_rule_hit",
    "contained_command",
    "home_of",
    "settings_files",
]

# The Claude Code tools whose ``command`` runs in a shell.
CONTAINED_TOOLS = frozenset({"Bash", "Monitor"})
_BASH_RULE = re.compile(r"\ABash\((.*)\)\Z", re.DOTALL)
# Where a command word may begin: the start, after blanks, operators,
# grouping, quotes or a substitution's opening.
_BOUNDARY = r"(?:\A|(?<=[\s;&|(){}`'\"$!]))"


def contained_command(prefix: Sequence[str], workspace: str | Path, command: str) -> str | None:
    """The shell text that runs ``command`` inside the sandbox, ``prefix``
    being the ``charter sandbox PLAN --agent A --stage S`` argv; None when
    the command cannot be passed exactly (a NUL byte ends an argument)."""
    if "\0" in command:
        return None
    argv = [*prefix, "--workdir", str(workspace), "--", "/bin/bash", "-c", command]
    return shlex.join(argv)


def settings_files(project: Path, home: Path | None) -> list[Path]:
    """Every settings file whose permission rules Claude Code applies."""
    files = [
        Path("/etc/claude-code/managed-settings.json"),
        project / ".claude" / "settings.local.json",
        project / ".claude" / "settings.json",
    ]
    managed = Path("/etc/claude-code/managed-settings.d")
    if managed.is_dir():
        files.extend(sorted(managed.glob("*.json")))
    if home is not None:
        files.append(home / ".claude" / "settings.json")
    return files


def _rules(files: Iterable[Path]) -> tuple[list[tuple[str, str]], str]:
    """The (kind, rule) deny and ask rules for Bash, and a problem when a
    settings file that exists cannot be read."""
    out: list[tuple[str, str]] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            return [], f"{path} cannot be read ({exc})"
        try:
            data = json.loads(text or "{}")
        except json.JSONDecodeError as exc:
            return [], f"{path} is not JSON ({exc})"
        perms = data.get("permissions") if isinstance(data, dict) else None
        if not isinstance(perms, dict):
            continue
        for kind in ("deny", "ask"):
            items = perms.get(kind)
            for item in items if isinstance(items, list) else []:
                if isinstance(item, str) and (item == "Bash" or item.startswith("Bash(")):
                    out.append((kind, item))
    return out, ""


def _pattern(rule: str) -> re.Pattern[str] | None:
    """A regex that finds the rule's command anywhere in a command text;
    None for a rule that covers every command."""
    found = _BASH_RULE.match(rule)
    if found is None:
        return None  # "Bash": the whole tool
    body = found.group(1).strip()
    if body.endswith(":*"):
        body = body[:-2]
    body = body.strip()
    if body in ("", "*"):
        return None
    pieces = [re.escape(p) for p in body.split("*")]
    return re.compile(_BOUNDARY + ".*?".join(pieces))


def client_rule_hit(command: str, files: Iterable[Path]) -> tuple[str, str] | None:
    """The strictest of Claude Code's deny and ask rules for Bash that may
    match ``command`` (deny first), or a ("deny", why) when the rules cannot
    be read; None when none may."""
    rules, problem = _rules(files)
    if problem:
        return "deny", f"Claude Code's settings cannot be checked: {problem}"
    hits = []
    for kind, rule in rules:
        pattern = _pattern(rule)
        if pattern is None or pattern.search(command) is not None:
            hits.append((kind, rule))
    for wanted in ("deny", "ask"):
        for kind, rule in hits:
            if kind == wanted:
                return kind, rule
    return None


def home_of(environ: dict[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    home = env.get("HOME")
    return Path(home) if home else None
