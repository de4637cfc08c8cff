"""Rules CH1xx: files and syntax (the readers and the loaders)."""

from __future__ import annotations

from charter.compiler.rules.catalog import E, W, register

# --- CH1xx: files and syntax -------------------------------------------------
register(
    "CH101",
    "yaml-syntax-error",
    E,
    "The YAML file does not parse.",
    "A file Charter cannot read cannot be checked, so nothing in it is trusted.",
    "tools:\n  toolsets: [coding\n",
    "Fix the syntax at the reported position.",
)
register(
    "CH102",
    "toml-syntax-error",
    E,
    "The TOML file does not parse.",
    "A file Charter cannot read cannot be checked, so nothing in it is trusted.",
    "[stages.plan\navailable_tools = []\n",
    "Fix the syntax at the reported position.",
)
register(
    "CH103",
    "file-not-utf8",
    E,
    "The file is not valid UTF-8.",
    "Charter reads configuration as UTF-8 text; other encodings would be guessed at.",
    "A file saved as Latin-1 containing 'caf\\xe9'.",
    "Re-save the file as UTF-8.",
)
register(
    "CH104",
    "empty-file",
    E,
    "The file is empty or holds only comments.",
    "An empty agent file usually means a botched edit or a truncated checkout.",
    "An agent.yaml of zero bytes.",
    "Write the file's content, or delete the file.",
)
register(
    "CH105",
    "file-too-large",
    E,
    "The file is larger than Charter's limit for configuration files.",
    "Configuration is small; a huge file is a mistake or an attempt to exhaust memory.",
    "A 10 MB agent.yaml.",
    "Keep configuration files under the limit (2 MiB).",
)
register(
    "CH106",
    "file-unreadable",
    E,
    "The file could not be read.",
    "Charter cannot check what it cannot read.",
    "A file without read permission, or a broken symlink.",
    "Check the file's permissions and that it exists.",
)
register(
    "CH107",
    "duplicate-key",
    E,
    "A mapping defines the same key twice.",
    "Most parsers silently keep the last value, so the first one (perhaps a deny) is lost.",
    "approval:\n  default: deny\n  default: auto\n",
    "Remove one of the two entries.",
)
register(
    "CH108",
    "yaml-alias-refused",
    E,
    "The YAML file uses an anchor or alias.",
    "Aliases allow exponential expansion ('billion laughs') and hide where a value came from.",
    "base: &b {risk: low}\nother: *b\n",
    "Write each value out in full.",
)
register(
    "CH109",
    "yaml-ambiguous-boolean",
    W,
    "A YAML 1.1 boolean word such as yes, no, on or off.",
    "YAML 1.1 reads these as booleans and YAML 1.2 as strings; tools disagree about them.",
    "enabled: no\n",
    "Write true or false.",
)
register(
    "CH110",
    "yaml-unsupported-tag",
    E,
    "The YAML file uses a tag Charter does not accept, or several documents.",
    "Custom tags can construct arbitrary objects in some loaders; Charter takes plain data only.",
    "risk: !!python/name:os.system\n",
    "Remove the tag and write a plain value.",
)
register(
    "CH111",
    "nesting-too-deep",
    E,
    "The file nests mappings or lists deeper than Charter's limit.",
    "Deep nesting is never needed by agent configuration and can exhaust the stack.",
    "a: [[[[[[[[...]]]]]]]] nested hundreds of levels deep.",
    "Flatten the structure.",
)
register(
    "CH112",
    "no-agent-files",
    E,
    "A path given to Charter holds no agent configuration.",
    "A CI job that checks nothing should fail loudly rather than pass.",
    "charter validate docs/",
    "Point Charter at a directory with agent.yaml, agent.leviath or blueprint.toml.",
)
register(
    "CH113",
    "path-not-found",
    E,
    "A path given to Charter, or a folder a file refers to, does not exist.",
    "A missing folder means tools or servers the author expected silently do not exist.",
    "slots:\n  tools: agent/tool   # the folder is agent/tools\n",
    "Fix the path or create the folder.",
)
register(
    "CH130",
    "yaml-ambiguous-number",
    W,
    "A YAML 1.1 number form such as 0777, 0b101, 1:20 or 1_000.",
    "PyYAML (and so the agent host) reads these as numbers (0777 is 511, 1:20 is 80); YAML 1.2 "
    "readers see text, so the same file means different things to different tools.",
    "mode: 0755\n",
    "Write the number in plain decimal, or quote the value if it is text.",
)
register(
    "CH131",
    "yaml-non-string-key",
    W,
    "A plain mapping key that PyYAML reads as a boolean, number, null or date.",
    "The host's loader turns the key 'on' into true and '1' into 1, so the key it sees is not "
    "the one written; string-keyed settings then fail to load or never match.",
    "env:\n  on: enabled\n",
    "Quote the key ('on': enabled).",
)
register(
    "CH132",
    "yaml-value-unloadable",
    E,
    "A plain value PyYAML resolves to a type it then cannot build, such as a lone '=' or "
    "'0b_', or a merge key '<<' without a mapping.",
    "yaml.safe_load raises on these, so the agent host cannot load the file at all.",
    "separator: =\n",
    "Quote the value ('='), or give the merge key a mapping.",
)
