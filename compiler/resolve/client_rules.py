"""Claude Code's own permission rules, read into Charter's policy.

A team that runs Claude Code keeps ``permissions.allow``, ``ask`` and
``deny`` lists in ``.claude/settings.json`` (and each person in
``.claude/settings.local.json``): ``Bash(npm test)``, ``Bash(git diff:*)``,
``Read(./src/**)``, ``WebFetch(domain:example.com)``, ``mcp__server__tool``.
Once Charter's hook is on, Claude Code still applies the deny and ask rules
after the hook answers (seen with Claude Code 2.1.332), but a hook's ask
overrides an allow rule: without this module, ``npm test`` would ask again.

:func:`translate` says, rule by rule, what becomes of it (its *fate*):

* ``carried``: Charter's policy states the same thing. An allowed command
  becomes a ``[safe_commands]`` entry (exact for ``Bash(npm test)``, a prefix
  for ``Bash(git diff:*)`` and ``Bash(npm run *)``), which lifts only the shell
  guard's ask about the program, never a deny, a credential path, a redirect
  or another command of the same line; a rule for a whole tool becomes that
  tool's permission in the stage, where it can only tighten (``web_fetch``
  and ``web_search`` may also be allowed, as any blueprint may).
* ``already``: Charter's starter policy already gives the same answer.
* ``client``: a deny or ask Charter cannot state; Claude Code itself keeps
  applying it after the hook.
* ``not-carried``: an allow (or a rule that cannot be read) Charter cannot
  state exactly; the call keeps getting Charter's own answer (fail closed).

Every rule gets one fate and a sentence saying why, which ``charter init``
prints: nothing is dropped silently.

:func:`mirrored` is the other half: the compiler honours a blueprint's
``[safe_commands]`` entry that names a ``client_rule`` only while the same
rule, translated to the same entry, is still in the allow list of the
client's settings of the workspace holding the policy. The team's settings,
which Claude Code already honours, are what vouches for the entry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from charter.compiler.frontends.config_toml import SafeCommands

__all__ = [
    "SETTINGS_FILES",
    "ClientRule",
    "Fate",
    "Translation",
    "mirrored",
    "policy_additions",
    "read_rules",
    "toml_string",
    "translate",
    "vouched",
    "workspace_of_policy",
]

# The project's Claude Code settings, the team's and this person's.
SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
Kind = Literal["allow", "ask", "deny"]
_KINDS: tuple[Kind, ...] = ("deny", "ask", "allow")
Fate = Literal["carried", "already", "client", "not-carried"]
Decision = Literal["allow", "ask", "deny"]

# Claude Code tools a rule for the whole tool stands for, as Charter's tools
# of the starter policy (Edit rules cover every editing tool in Claude Code).
_TOOLS: dict[str, tuple[str, ...]] = {
    "Bash": ("shell", "terminal"),
    "Read": ("read_file", "read_files"),
    "Edit": ("write_file", "edit_file", "patch"),
    "Write": ("write_file", "edit_file", "patch"),
    "MultiEdit": ("write_file", "edit_file", "patch"),
    "NotebookEdit": ("write_file", "edit_file", "patch"),
    "Glob": ("search_files",),
    "Grep": ("search_files",),
    "LS": ("list_dir",),
    "WebFetch": ("web_fetch",),
    "WebSearch": ("web_search",),
    "Agent": ("delegate_task",),
    "Task": ("delegate_task",),
    "TodoWrite": ("todo",),
    "Skill": ("skill_view",),
}
# The tools a blueprint may allow beyond Charter's default without the
# user's config (docs/permissions.md): they neither write nor execute.
_BLUEPRINT_MAY_ALLOW = frozenset({"web_fetch", "web_search"})
# Tools the starter policy allows already.
_STARTER_ALLOWS = frozenset({"read_file", "read_files", "list_dir"})
_PATH_TOOLS = frozenset(
    {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS"}
)
_RULE = re.compile(r"\A([A-Za-z][A-Za-z0-9_]*)(?:\((.*)\))?\Z", re.DOTALL)
_CLIENT_KEEPS = "Claude Code keeps applying it after the hook answers"


@dataclass(frozen=True, slots=True)
class ClientRule:
    """One rule as the settings file holds it."""

    text: str
    kind: Kind
    source: str  # the settings file, relative to the workspace


@dataclass(frozen=True, slots=True)
class Translation:
    """What becomes of one rule (see the module docstring)."""

    rule: ClientRule
    fate: Fate
    why: str
    command: str | None = None  # carried as a [safe_commands] entry
    exact: bool = False
    tools: tuple[str, ...] = ()  # carried as these tools' permission
    decision: Decision | None = None


def read_rules(root: Path) -> tuple[list[ClientRule], list[str]]:
    """The rules of the workspace's Claude Code settings, deny first (the
    order Claude Code weighs them), and the problems met reading them (a file
    that is not JSON, a list that is not a list of strings)."""
    rules: list[ClientRule] = []
    problems: list[str] = []
    for name in SETTINGS_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(f"{name}: cannot be read ({exc}); none of its rules is carried")
            continue
        perms = data.get("permissions") if isinstance(data, dict) else None
        if perms is None:
            continue
        if not isinstance(perms, dict):
            problems.append(f"{name}: 'permissions' is not an object; none of its rules is carried")
            continue
        for kind in _KINDS:
            items = perms.get(kind)
            if items is None:
                continue
            if not isinstance(items, list):
                problems.append(f"{name}: permissions.{kind} is not a list; it is not carried")
                continue
            for item in items:
                if isinstance(item, str):
                    rules.append(ClientRule(item, kind, name))
                else:
                    problems.append(
                        f"{name}: permissions.{kind} holds {item!r}, which is not a rule"
                    )
    return rules, problems


def translate(rule: ClientRule) -> Translation:
    """The fate of one rule."""
    text = rule.text.strip()
    found = _RULE.match(text)
    if found is None:
        return _uncarried(rule, "it is not of the form Tool or Tool(specifier)")
    tool, spec = found.group(1), found.group(2)
    if spec is not None and spec.strip() in ("", "*"):
        spec = None  # Tool() and Tool(*) stand for the whole tool
    if tool.startswith("mcp__"):
        return _mcp(rule)
    if tool not in _TOOLS:
        return _uncarried(rule, f"Claude Code tool '{tool}' has no Charter counterpart")
    if spec is None:
        return _whole_tool(rule, tool)
    if tool == "Bash":
        return _bash(rule, spec)
    if tool in _PATH_TOOLS:
        return _paths(rule, tool, spec)
    if tool == "WebFetch" and spec.startswith("domain:"):
        if rule.kind == "allow":
            return _uncarried(
                rule, "Charter's policy has no per-domain web permission; web_fetch asks"
            )
        return _client(rule, "Charter's policy has no per-domain web permission")
    return _client_or_uncarried(rule, f"Charter cannot read the specifier of {tool}({spec})")


def _uncarried(rule: ClientRule, why: str) -> Translation:
    if rule.kind != "allow":
        return _client(rule, why)
    return Translation(rule, "not-carried", f"{why}; Charter's own answer stands")


def _client(rule: ClientRule, why: str) -> Translation:
    return Translation(rule, "client", f"{why}; {_CLIENT_KEEPS}")


def _client_or_uncarried(rule: ClientRule, why: str) -> Translation:
    return _client(rule, why) if rule.kind != "allow" else _uncarried(rule, why)


def _whole_tool(rule: ClientRule, tool: str) -> Translation:
    tools = _TOOLS[tool]
    if rule.kind != "allow":
        return Translation(
            rule,
            "carried",
            f"{', '.join(tools)} {rule.kind} in the policy (and {_CLIENT_KEEPS})",
            tools=tools,
            decision=rule.kind,
        )
    if set(tools) <= _STARTER_ALLOWS:
        return Translation(
            rule,
            "already",
            f"the policy allows {', '.join(tools)} inside the workspace; outside it they are "
            "refused whatever the rule says",
        )
    if set(tools) <= _BLUEPRINT_MAY_ALLOW:
        said = f"{', '.join(tools)} allow in the policy"
        return Translation(rule, "carried", said, tools=tools, decision="allow")
    how = (
        "the shell guard judges every command; allow single commands with Bash(COMMAND)"
        if tool == "Bash"
        else f"a policy may not allow {', '.join(tools)} beyond Charter's default; allow "
        "it in your config.toml ([agent_tool_permissions.AGENT])"
    )
    return _uncarried(rule, how)


def _bash(rule: ClientRule, spec: str) -> Translation:
    """``Bash(cmd)`` exact, ``Bash(cmd:*)`` and ``Bash(cmd *)`` prefixes."""
    body = spec.strip()
    exact = True
    if body.endswith(":*"):
        body, exact = body[:-2].rstrip(), False
    elif body.endswith(" *"):
        body, exact = body[:-2].rstrip(), False
    if rule.kind != "allow":
        return _client(rule, "Charter's policy has no per-command deny or ask")
    if not body or "*" in body:
        return _uncarried(
            rule, "a wildcard inside a command cannot be stated as Charter's safe command"
        )
    from charter.compiler.frontends.config_toml import SafeCommands, SafeShellEntry
    from charter.compiler.resolve.shell_policy import compile_shell_policy

    entry = SafeShellEntry(command=body, exact=exact, client_rule=rule.text)
    policy, diags = compile_shell_policy(
        SafeCommands(shell=(entry,)), source=rule.source, smap=None
    )
    refused = [d for d in diags if d.severity.value == "error"]
    if refused or not policy.safe:
        why = refused[0].message if refused else "Charter refuses it as a safe command"
        return _uncarried(rule, why)
    still = [d for d in diags if d.severity.value != "note"]
    if still:
        # The guard asks about these words whatever an entry says (git push).
        return _uncarried(rule, still[0].message)
    shape = "exactly this command" if exact else "this command with any arguments after it"
    return Translation(
        rule,
        "carried",
        f"a safe command: {shape}; the shell guard still judges the rest of the line",
        command=body,
        exact=exact,
    )


def _paths(rule: ClientRule, tool: str, spec: str) -> Translation:
    # //path is absolute, ~/path in the home directory; ../ climbs out.
    outside = spec.startswith(("//", "~")) or ".." in spec.split("/")
    if rule.kind != "allow":
        return _client(rule, "Charter's policy has no per-path permission")
    if outside:
        return _uncarried(rule, "Charter refuses paths outside the workspace")
    if set(_TOOLS[tool]) <= _STARTER_ALLOWS:
        return Translation(
            rule, "already", f"the policy allows {', '.join(_TOOLS[tool])} inside the workspace"
        )
    return _uncarried(rule, "Charter's policy has no per-path permission")


def _mcp(rule: ClientRule) -> Translation:
    return _client_or_uncarried(
        rule,
        "the starter policy holds no MCP server; add the server to the policy to decide its tools",
    )


def workspace_of_policy(blueprint: Path) -> Path | None:
    """The workspace a policy under ``<workspace>/.charter/`` belongs to."""
    for parent in blueprint.resolve().parents:
        if parent.name == ".charter":
            return parent.parent
    return None


def mirrored(
    blueprint: Path, entries: Iterable[tuple[str, bool, str]]
) -> tuple[set[tuple[str, bool, str]], list[ClientRule]]:
    """Which ``(command, exact, client_rule)`` entries of the blueprint at
    ``blueprint`` the workspace's Claude Code settings vouch for: the rule is
    in an allow list there and translates to that very entry."""
    root = workspace_of_policy(blueprint)
    if root is None:
        return set(), []
    rules, _problems = read_rules(root)
    allowed = {r.text: r for r in rules if r.kind == "allow"}
    out: set[tuple[str, bool, str]] = set()
    used: list[ClientRule] = []
    for command, exact, name in entries:
        rule = allowed.get(name)
        if rule is None:
            continue
        t = translate(rule)
        if t.fate == "carried" and t.command == command and t.exact == exact:
            out.add((command, exact, name))
            used.append(rule)
    return out, used


def vouched(blueprint: Path | None, safe: SafeCommands | None) -> set[tuple[str, bool]]:
    """The ``(command, exact)`` of the blueprint's ``[safe_commands]`` shell
    entries that the workspace's Claude Code settings vouch for."""
    from charter.compiler.frontends.config_toml import SafeShellEntry

    if blueprint is None or safe is None:
        return set()
    named = [
        (e.command, e.exact, e.client_rule)
        for e in safe.shell
        if isinstance(e, SafeShellEntry) and e.client_rule is not None
    ]
    if not named:
        return set()
    found, _used = mirrored(blueprint, named)
    return {(command, exact) for command, exact, _name in found}


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escapes, non-ASCII kept; DEL,
    which JSON leaves bare and TOML refuses, escaped too)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def policy_additions(found: Sequence[Translation]) -> str:
    """The ``[safe_commands]`` block for the carried commands, or ""."""
    lines = []
    for t in found:
        if t.fate != "carried" or t.command is None:
            continue
        parts = [f"command = {toml_string(t.command)}"]
        if t.exact:
            parts.append("exact = true")
        parts.append(f"client_rule = {toml_string(t.rule.text)}")
        parts.append(f"justification = {toml_string('allowed in ' + t.rule.source)}")
        lines.append("  { " + ", ".join(parts) + " },")
    if not lines:
        return ""
    return (
        "\n# Carried from Claude Code's allow rules by charter init. Each entry takes effect\n"
        "# while its client_rule stays in the allow list of .claude/settings.json (or\n"
        "# settings.local.json); it lifts only the shell guard's ask about the program,\n"
        "# never a deny, a credential path, a redirect or another command on the line.\n"
        "[safe_commands]\nshell = [\n" + "\n".join(lines) + "\n]\n"
    )
