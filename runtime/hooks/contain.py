"""Containment behind a hook's allow: a client's shell command, run in the sandbox.

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

import fnmatch
import json
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from charter.runtime.capped import read_text_capped

__all__ = [
    "CONTAINED_TOOLS",
    "GEMINI_CONTAINED_TOOLS",
    "client_rule_hit",
    "contained_command",
    "gemini_policy_files",
    "gemini_rule_hit",
    "home_of",
    "settings_files",
]

# The Claude Code tools whose ``command`` runs in a shell.
CONTAINED_TOOLS = frozenset({"Bash", "Monitor"})
# Gemini CLI's.
GEMINI_CONTAINED_TOOLS = frozenset({"run_shell_command"})
# A client's settings or policy file is a few KiB; one larger is not read.
_RULES_FILE_MAX = 4 << 20
_GEMINI_SHELL = "run_shell_command"
_GEMINI_EXCLUDE = re.compile(r"\A(?:run_shell_command|ShellTool)\((.*)\)\Z", re.DOTALL)
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
    texts, problem = _texts(files)
    for path, text in texts:
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
    return out, problem


def _texts(files: Iterable[Path]) -> tuple[list[tuple[Path, str]], str]:
    """Each file that exists with its text, and a problem when one that
    exists cannot be read (the caller then refuses: its rules are unknown)."""
    out: list[tuple[Path, str]] = []
    for path in files:
        try:
            out.append((path, read_text_capped(path, _RULES_FILE_MAX)))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            return [], f"{path} cannot be read ({exc})"
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


# -- Gemini CLI ---------------------------------------------------------------------
#
# Gemini CLI 0.61 replaces the call's arguments with a BeforeTool hook's
# ``tool_input`` and only then asks its policy engine, which so matches the
# team's rules against the contained command, where a ``commandPrefix = "rm"``
# deny no longer matches. The hook keeps those rules itself, more broadly than
# Gemini CLI does: a prefix anywhere in the command at a word boundary, a
# regular expression searched, every mode and priority. A rule with no
# pattern covers the tool whatever its arguments, so Gemini CLI applies it to
# the contained call as well.

# A test of one rule against (the command, the arguments' JSON).
_Test = Callable[[str, str], bool]


def gemini_policy_files(project: Path, home: Path | None) -> list[Path]:
    """Every policy file (TOML) and settings file (``tools.exclude``) whose
    rules Gemini CLI applies to a shell command."""
    dirs = [Path("/etc/gemini-cli/policies"), project / ".gemini" / "policies"]
    settings = [Path("/etc/gemini-cli/settings.json"), project / ".gemini" / "settings.json"]
    if home is not None:
        dirs.append(home / ".gemini" / "policies")
        settings.append(home / ".gemini" / "settings.json")
    files: list[Path] = []
    for folder in dirs:
        if folder.is_dir():
            files.extend(sorted(folder.glob("*.toml")))
    return files + settings


def _searched(pattern: str, *, in_args: bool = False) -> _Test:
    """A regular expression searched in the command (or the arguments' JSON)."""
    try:
        found = re.compile(pattern)
    except re.error:
        return lambda command, args: True  # a pattern Python cannot read may match
    if in_args:
        return lambda command, args: found.search(args) is not None
    return lambda command, args: found.search(command) is not None


def _prefixed(prefixes: list[str]) -> _Test | None:
    words = [p.strip() for p in prefixes if p.strip()]
    if not words:
        return None
    found = re.compile("|".join(_BOUNDARY + re.escape(w) for w in words))
    return lambda command, args: found.search(command) is not None


def _rule_test(rule: dict[str, Any]) -> _Test | None:
    """The test of one ``[[rule]]`` (None: it has no pattern)."""
    prefix = rule.get("commandPrefix")
    if isinstance(prefix, str | list):
        return _prefixed([prefix] if isinstance(prefix, str) else [str(p) for p in prefix])
    regex = rule.get("commandRegex")
    if isinstance(regex, str):
        return _searched(regex)
    pattern = rule.get("argsPattern")
    if isinstance(pattern, str):
        return _searched(pattern, in_args=True)
    return None


def _names_shell(tool: Any) -> bool:
    names = [tool] if isinstance(tool, str) else tool if isinstance(tool, list) else []
    return any(isinstance(n, str) and fnmatch.fnmatchcase(_GEMINI_SHELL, n) for n in names)


def _gemini_rules(files: Iterable[Path]) -> tuple[list[tuple[str, str, _Test]], str]:
    """The (kind, label, test) of every deny and ask rule with a pattern for
    the shell tool, and a problem when a file that exists cannot be read."""
    out: list[tuple[str, str, _Test]] = []
    texts, problem = _texts(files)
    for path, text in texts:
        if path.suffix == ".toml":
            import tomllib  # (only --contain for Gemini CLI reads policy files)

            try:
                data: Any = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                return [], f"{path} is not TOML ({exc})"
            rules = data.get("rule") if isinstance(data, dict) else None
            for n, rule in enumerate(rules if isinstance(rules, list) else []):
                if not isinstance(rule, dict) or not _names_shell(rule.get("toolName")):
                    continue
                kind = {"deny": "deny", "ask_user": "ask"}.get(str(rule.get("decision")))
                test = _rule_test(rule)
                if kind is not None and test is not None:
                    out.append((kind, f"{path.name} rule {n + 1}", test))
            continue
        try:
            data = json.loads(text or "{}")
        except json.JSONDecodeError as exc:
            return [], f"{path} is not JSON ({exc})"
        if not isinstance(data, dict):
            continue
        tools = data.get("tools")
        excluded = [
            *_listed(tools.get("exclude") if isinstance(tools, dict) else None),
            *_listed(data.get("excludeTools")),  # (the older name)
        ]
        for item in excluded:
            found = _GEMINI_EXCLUDE.match(item) if isinstance(item, str) else None
            test = _prefixed([found.group(1)]) if found is not None else None
            if test is not None:
                out.append(("deny", f"{path.name} tools.exclude {item}", test))
    return out, problem


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def gemini_rule_hit(
    command: str, args: Mapping[str, Any], files: Iterable[Path]
) -> tuple[str, str] | None:
    """The strictest of Gemini CLI's deny and ask rules for the shell tool
    that may match ``command`` (deny first), or a ("deny", why) when the
    rules cannot be read; None when none may."""
    rules, problem = _gemini_rules(files)
    if problem:
        return "deny", f"Gemini CLI's policies cannot be checked: {problem}"
    stable = json.dumps(args, sort_keys=True)
    hits = [(kind, label) for kind, label, test in rules if test(command, stable)]
    for wanted in ("deny", "ask"):
        for kind, label in hits:
            if kind == wanted:
                return kind, label
    return None


def home_of(environ: dict[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    home = env.get("HOME")
    return Path(home) if home else None
