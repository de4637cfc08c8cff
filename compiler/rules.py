"""The rule catalog: every diagnostic Charter can report.

Codes are stable forever once published; a retired rule keeps its code
reserved. Groups: CH1xx files and syntax, CH2xx structure and values,
CH3xx names, CH4xx permissions, capabilities and secrets, CH5xx shell policy,
CH6xx stage graph, CH7xx tools and MCP, CH8xx policy self-tests and
suppressions.

Each rule's doc has four parts (what it checks, why it matters, an example,
how to fix), rendered by ``charter rule CODE``.
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.compiler.diagnostics import Diagnostic, Severity, Span

__all__ = ["RULES", "Rule", "by_name", "diag", "rule"]


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    why: str
    example: str
    fix: str


RULES: dict[str, Rule] = {}
_BY_NAME: dict[str, Rule] = {}


def _r(
    code: str, name: str, severity: Severity, summary: str, why: str, example: str, fix: str
) -> None:
    if code in RULES or name in _BY_NAME:
        raise RuntimeError(f"rule {code} {name} registered twice")
    r = Rule(code, name, severity, summary, why, example, fix)
    RULES[code] = r
    _BY_NAME[name] = r


E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE

# --- CH1xx: files and syntax -------------------------------------------------
_r(
    "CH101",
    "yaml-syntax-error",
    E,
    "The YAML file does not parse.",
    "A file Charter cannot read cannot be checked, so nothing in it is trusted.",
    "tools:\n  toolsets: [coding\n",
    "Fix the syntax at the reported position.",
)
_r(
    "CH102",
    "toml-syntax-error",
    E,
    "The TOML file does not parse.",
    "A file Charter cannot read cannot be checked, so nothing in it is trusted.",
    "[stages.plan\navailable_tools = []\n",
    "Fix the syntax at the reported position.",
)
_r(
    "CH103",
    "file-not-utf8",
    E,
    "The file is not valid UTF-8.",
    "Charter reads configuration as UTF-8 text; other encodings would be guessed at.",
    "A file saved as Latin-1 containing 'caf\\xe9'.",
    "Re-save the file as UTF-8.",
)
_r(
    "CH104",
    "empty-file",
    E,
    "The file is empty or holds only comments.",
    "An empty agent file usually means a botched edit or a truncated checkout.",
    "An agent.yaml of zero bytes.",
    "Write the file's content, or delete the file.",
)
_r(
    "CH105",
    "file-too-large",
    E,
    "The file is larger than Charter's limit for configuration files.",
    "Configuration is small; a huge file is a mistake or an attempt to exhaust memory.",
    "A 10 MB agent.yaml.",
    "Keep configuration files under the limit (2 MiB).",
)
_r(
    "CH106",
    "file-unreadable",
    E,
    "The file could not be read.",
    "Charter cannot check what it cannot read.",
    "A file without read permission, or a broken symlink.",
    "Check the file's permissions and that it exists.",
)
_r(
    "CH107",
    "duplicate-key",
    E,
    "A mapping defines the same key twice.",
    "Most parsers silently keep the last value, so the first one (perhaps a deny) is lost.",
    "approval:\n  default: deny\n  default: auto\n",
    "Remove one of the two entries.",
)
_r(
    "CH108",
    "yaml-alias-refused",
    E,
    "The YAML file uses an anchor or alias.",
    "Aliases allow exponential expansion ('billion laughs') and hide where a value came from.",
    "base: &b {risk: low}\nother: *b\n",
    "Write each value out in full.",
)
_r(
    "CH109",
    "yaml-ambiguous-boolean",
    W,
    "A YAML 1.1 boolean word such as yes, no, on or off.",
    "YAML 1.1 reads these as booleans and YAML 1.2 as strings; tools disagree about them.",
    "enabled: no\n",
    "Write true or false.",
)
_r(
    "CH110",
    "yaml-unsupported-tag",
    E,
    "The YAML file uses a tag Charter does not accept, or several documents.",
    "Custom tags can construct arbitrary objects in some loaders; Charter takes plain data only.",
    "risk: !!python/name:os.system\n",
    "Remove the tag and write a plain value.",
)
_r(
    "CH111",
    "nesting-too-deep",
    E,
    "The file nests mappings or lists deeper than Charter's limit.",
    "Deep nesting is never needed by agent configuration and can exhaust the stack.",
    "a: [[[[[[[[...]]]]]]]] nested hundreds of levels deep.",
    "Flatten the structure.",
)
_r(
    "CH112",
    "no-agent-files",
    E,
    "A path given to Charter holds no agent configuration.",
    "A CI job that checks nothing should fail loudly rather than pass.",
    "charter validate docs/",
    "Point Charter at a directory with agent.yaml, agent.leviath or blueprint.toml.",
)
_r(
    "CH113",
    "path-not-found",
    E,
    "A path given to Charter, or a folder a file refers to, does not exist.",
    "A missing folder means tools or servers the author expected silently do not exist.",
    "slots:\n  tools: agent/tool   # the folder is agent/tools\n",
    "Fix the path or create the folder.",
)

# --- CH2xx: structure and values ---------------------------------------------
_r(
    "CH201",
    "unknown-key",
    E,
    "A key that the format does not define.",
    "A misspelled key is silently ignored by lax loaders, so the setting the author "
    "wrote never takes effect.",
    '[stages.plan]\navailable_tool = ["read_file"]\n',
    "Use the suggested spelling, or remove the key.",
)
_r(
    "CH202",
    "wrong-type",
    E,
    "A value has the wrong type.",
    "A value of the wrong type cannot mean what its author intended.",
    'max_iterations = "ten"\n',
    "Write a value of the expected type.",
)
_r(
    "CH203",
    "invalid-value",
    E,
    "A value is not one of the accepted choices, or is out of range.",
    "Falling back to a default on a typo would hand the author a behaviour they did not write.",
    "risk: hgih\n",
    "Use one of the accepted values listed in the message.",
)
_r(
    "CH204",
    "missing-key",
    E,
    "A required key is absent.",
    "Without it the file cannot be given a meaning.",
    '[agent]\nversion = "1"   # name is missing\n',
    "Add the key.",
)
_r(
    "CH205",
    "invalid-permission-value",
    E,
    "A permission is not exactly allow, ask or deny.",
    "A misspelled deny that quietly became ask would turn a refusal into a prompt.",
    '[tool_permissions]\nshell = "dney"\n',
    "Write allow, ask or deny.",
)
_r(
    "CH206",
    "slot-only-field-in-tool-yaml",
    E,
    "tool.yaml sets a field that belongs to a slot, not to a tool.",
    "The host ignores or rejects these in tool.yaml; the author's intent would be lost.",
    "timeout_seconds: 30\n",
    "Move the field to the slot configuration in agent.yaml.",
)
_r(
    "CH207",
    "duplicate-definition",
    E,
    "The same stage, tool or server is defined twice.",
    "Which definition wins would depend on file order.",
    "[stages.plan] in agent.leviath and stages/plan.toml.",
    "Keep one definition.",
)

# --- CH3xx: names --------------------------------------------------------------
_r(
    "CH301",
    "unknown-toolset",
    E,
    "agent.yaml names a toolset that does not exist.",
    "The agent would silently lack the tools its author expected.",
    "tools:\n  toolsets: [codeing]\n",
    "Use coding, demiurge_control or schedule.",
)

# --- CH89x: suppressions (compiler/suppress.py) -------------------------------
_r(
    "CH890",
    "unused-suppression",
    N,
    "A '# charter: ignore[...]' comment names a rule that reports nothing there.",
    "A stale suppression would silently hide the next, unrelated finding of that rule "
    "on the same line.",
    'shell = "deny"  # charter: ignore[implicit-shell-policy]\n',
    "Remove the comment, or the codes in it that no longer apply.",
)
_r(
    "CH891",
    "suppression-without-codes",
    W,
    "A '# charter: ignore' comment that does not say which rules it silences.",
    "A blanket ignore would hide every finding on the line, including errors added later; "
    "Charter refuses it and suppresses nothing.",
    "toolsets: [coding]  # charter: ignore\n",
    "Name the codes or rule names, as in '# charter: ignore[CH301]' or "
    "'# charter: ignore[unknown-toolset]'.",
)
_r(
    "CH892",
    "invalid-suppression",
    W,
    "A suppression names a rule that does not exist, or one that cannot be suppressed.",
    "A misspelled code silences nothing, and file and syntax errors (CH1xx) mean the file "
    "was not read, so nothing in it can be vouched for.",
    "risk: high  # charter: ignore[CH2O1]\n",
    "Use a code or name listed by 'charter rules'; fix file and syntax errors instead.",
)


def rule(code: str) -> Rule:
    return RULES[code]


def by_name(name: str) -> Rule:
    return _BY_NAME[name]


def diag(
    name: str,
    message: str,
    span: Span,
    *,
    key_path: str = "",
    help: str | None = None,
    severity: Severity | None = None,
    data: dict[str, str] | None = None,
) -> Diagnostic:
    """Build a diagnostic for the rule called ``name``."""
    r = _BY_NAME[name]
    return Diagnostic(
        code=r.code,
        name=r.name,
        severity=severity or r.severity,
        message=message,
        span=span,
        key_path=key_path,
        help=help,
        data=tuple(sorted((data or {}).items())),
    )
