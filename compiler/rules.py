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
    """A lint rule: stable code, kebab-case name, default severity and its four-part doc."""

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

_r(
    "CH130",
    "yaml-ambiguous-number",
    W,
    "A YAML 1.1 number form such as 0777, 0b101, 1:20 or 1_000.",
    "PyYAML (and so the agent host) reads these as numbers (0777 is 511, 1:20 is 80); YAML 1.2 "
    "readers see text, so the same file means different things to different tools.",
    "mode: 0755\n",
    "Write the number in plain decimal, or quote the value if it is text.",
)
_r(
    "CH131",
    "yaml-non-string-key",
    W,
    "A plain mapping key that PyYAML reads as a boolean, number, null or date.",
    "The host's loader turns the key 'on' into true and '1' into 1, so the key it sees is not "
    "the one written; string-keyed settings then fail to load or never match.",
    "env:\n  on: enabled\n",
    "Quote the key ('on': enabled).",
)
_r(
    "CH132",
    "yaml-value-unloadable",
    E,
    "A plain value PyYAML resolves to a type it then cannot build, such as a lone '=' or "
    "'0b_', or a merge key '<<' without a mapping.",
    "yaml.safe_load raises on these, so the agent host cannot load the file at all.",
    "separator: =\n",
    "Quote the value ('='), or give the merge key a mapping.",
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

_r(
    "CH230",
    "normalized-value",
    W,
    "A value the agent host normalises before using it: a risk or approval word in another "
    "case or with spaces (Deny, ' high'), a number or boolean where the host expects text "
    "(MCP args, env, headers), a null where the host takes its default, or a list of "
    "capability names where grants are a mapping.",
    "The host runs such a file, so Charter reads it the same way; but what runs is not what "
    "the file says, and another tool reading the file may disagree.",
    "approval:\n  tools: {terminal: Deny}\n",
    "Write the value the way the host uses it, as the message shows.",
)
_r(
    "CH232",
    "ignored-key",
    W,
    "A key the agent host's model accepts and then ignores, such as "
    "dependencies.requirements.",
    "The setting does nothing, though its author probably expected it to.",
    "dependencies:\n  mode: host_shared\n  requirements: [requests]\n",
    "Remove the key, or move the setting to where the host reads it.",
)

# --- CH25x: Leviath's loading defaults and regions ----------------------------
_r(
    "CH250",
    "region-seed-not-understood",
    W,
    "A region's seed table holds keys Leviath does not recognise.",
    "Leviath drops a seed none of whose keys it knows, and the region starts empty: a one-word "
    "typo (caller_input for caller) reads like a working blueprint until the agent answers a "
    "question it was never given.",
    '[context.regions]\nbrief = { kind = "pinned", seed = { caller_input = "brief" } }\n',
    "Use one of glob, files, literal, rhai, command, tool, tools or caller (or a plain string, "
    "the caller input key).",
)
_r(
    "CH251",
    "stage-missing-mode",
    W,
    "A stage does not say which mode it runs in.",
    "It runs as autonomous, which may not be what its author had in mind for a stage that talks "
    "to a person.",
    '[stages.plan]\navailable_tools = ["read_file"]\n',
    'Write the mode, for example mode = "autonomous".',
)
_r(
    "CH252",
    "stage-missing-model",
    W,
    "A stage names no model.",
    "Leviath then runs it on whatever default provider the user configured, so the same "
    "blueprint behaves differently from one machine to the next.",
    '[stages.plan]\nmode = "autonomous"\n',
    'Add model = { models = [{ provider = "...", model = "..." }] } to the stage.',
)
_r(
    "CH253",
    "stage-missing-max-iterations",
    W,
    "A stage that runs inference sets no max_iterations.",
    "It is bounded only by the user's [limits] default_max_iterations, which the author does not "
    "control.",
    '[stages.work]\nmode = "autonomous"\n',
    "Give the stage a max_iterations it should never reach.",
)
_r(
    "CH254",
    "unknown-model",
    W,
    "A stage names a model that a provider with a closed catalog (anthropic, openai, google) "
    "does not list.",
    "Model names are passed to the provider verbatim and never checked before the first call, "
    "so a typo fails the run, or falls through to the next fallback, only then.",
    'model = { models = [{ provider = "anthropic", model = "claude-sonet-5" }] }\n',
    "Check the model's name; open catalogs (ollama, openrouter, script providers) are not checked.",
)
_r(
    "CH255",
    "no-reachable-provider",
    W,
    "None of the providers a stage lists is configured on this machine.",
    "The stage then falls back to the user's default model, if there is one, instead of any "
    "model its author chose.",
    'model = { models = [{ provider = "google", model = "gemini-3.5-flash" }] }   # no key\n',
    "Configure one of the listed providers in config.toml (or its API key variable), or add a "
    "provider you have.",
)
_r(
    "CH256",
    "unbounded-percentage-budget",
    W,
    "A region that evicts at its bound has only a percentage budget, which resolves to a very "
    "large ceiling on the widest model the blueprint names.",
    'Eviction only runs at the bound; on a million-token window "38%" may never be reached, '
    "so the region hoards and every request grows.",
    '[context.regions]\nraw = { kind = "temporary", budget = "38%" }\n',
    "Add max_tokens to the region: the percentage still applies on small windows and the cap "
    "keeps eviction working on large ones.",
)
_r(
    "CH257",
    "required-region-unenforceable",
    W,
    "A region is required, but no stage that sees it offers context_write or context_append.",
    "The gate that holds a stage until the region is filled skips stages that cannot write "
    "context, so the flag protects nothing.",
    '[context.regions]\nsources = { kind = "pinned", required = true }\n',
    "Offer context_write or context_append on the stage that owes the region, or drop "
    "required = true.",
)
_r(
    "CH258",
    "compact-summarizes-deliverable",
    W,
    'An edge with transform = "compact" would summarize a required region.',
    "Compacting summarizes every region that is not pinned, including the ones holding results; "
    "figures that survive a paraphrase are no longer figures.",
    '[stages.gather.transitions.report]\ntransform = "compact"\n',
    'Set summarizable = false on the region, or name what to compact with transform = "custom".',
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

_r(
    "CH302",
    "unknown-tool",
    E,
    "A stage or permission names a tool that is not a built-in, an alias, an authored tool or "
    "a tool of a declared MCP server.",
    "A typo in available_tools silently removes a tool the agent needs; a typo in a permission "
    "map silently drops a restriction.",
    '[stages.implement]\navailable_tools = ["edit_fiel"]\n',
    "Use the suggested name, declare the tool, or remove the entry.",
)
_r(
    "CH303",
    "tool-name-collision",
    E,
    "Two sources (built-in, authored, MCP) offer a tool under the same model-visible name.",
    "The model could not tell them apart, and silently preferring one hides the other's "
    "behaviour and permissions.",
    "agent/tools/read_file/tool.yaml next to the built-in read_file.",
    "Rename the authored tool's folder, or exclude the MCP tool with tools.exclude.",
)
_r(
    "CH304",
    "required-tool-not-available",
    E,
    "A stage lists a tool in required_tools that is not in its available_tools.",
    "required_tools keeps tools through unattended runs; a tool that is never offered cannot "
    "be kept, so the author's intent is unclear.",
    '[stages.plan]\navailable_tools = ["read_file"]\nrequired_tools = ["ask_user_text"]\n',
    "Add the tool to available_tools, or remove it from required_tools.",
)
_r(
    "CH305",
    "orphan-stage-permission",
    E,
    "A stage sets a permission for a tool the stage never offers.",
    "The permission has no effect; usually the tool was meant to be offered, or the entry is "
    "left over from an edit.",
    '[stages.review]\navailable_tools = ["read_file"]\n[stages.review.tool_permissions]\n'
    'shell = "allow"\n',
    "Offer the tool in available_tools, or remove the permission.",
)
_r(
    "CH306",
    "duplicate-permission-spelling",
    W,
    "One permission map names the same tool twice under different spellings (bash and shell).",
    "Only one value can apply; Charter takes the stricter, which may not be what was meant.",
    '[tool_permissions]\nshell = "ask"\nbash = "allow"\n',
    "Keep one entry per tool.",
)

_r(
    "CH350",
    "unknown-region",
    E,
    "A gate or a stage's tool routing names a context region that no layout declares, or one "
    "the stage's own layout leaves out.",
    "A gate on a region that does not exist never holds anything back, and results routed where "
    "the stage cannot see them are lost to it; Leviath refuses to load such a blueprint.",
    '[stages.s.tool_routing]\ndefault_region = "scrach"\n',
    "Name a region declared under [context.regions] (or the stage's own context.regions).",
)

# --- CH4xx: permissions, capabilities and secrets ----------------------------
_r(
    "CH401",
    "capability-not-granted",
    E,
    "A tool's dispatch capability is not granted by the core's capability defaults or a "
    "path-scoped slot grant.",
    "Every call of the tool would be refused at the capability gate; for an authored tool this "
    "usually means the grant was forgotten or misspelled.",
    "tool.yaml: capability: tool.call:project_note   # but agent.yaml grants nothing\n",
    "Grant the capability under capabilities.defaults or capabilities.slots.<tool path>. Its "
    "own capabilities list can never satisfy the gate.",
)
_r(
    "CH402",
    "unknown-capability",
    W,
    "A capability name that no tool and no Charter gate uses, or that is malformed.",
    "A grant that matches nothing grants nothing; it is often a typo of a real capability.",
    "capabilities:\n  defaults:\n    fs.raed: {}\n",
    "Use a capability a tool requires (fs.read, fs.write, terminal.exec, network.fetch, "
    "mcp.connect:<server>, mcp.call:<server>, tool.call:<tool>, secret.bind:<NAME>, ...).",
)
_r(
    "CH403",
    "wildcard-secret-grant",
    E,
    "A secret.bind grant uses a wildcard.",
    "secret.bind:* would let any command receive any credential in the environment.",
    "capabilities:\n  defaults:\n    secret.bind:*: {}\n",
    "Grant each secret by its exact name: secret.bind:GH_TOKEN.",
)
_r(
    "CH404",
    "secret-binding-target-forbidden",
    E,
    "A secret binding targets an execution-control variable (PATH, HOME, LD_PRELOAD, "
    "PYTHONPATH, NODE_OPTIONS, ...).",
    "Binding a value there changes what runs, not what the command can read.",
    'secret_bindings = [{source = "env:TOKEN", target = "LD_PRELOAD"}]\n',
    "Choose an ordinary variable name as the target.",
)
_r(
    "CH405",
    "blueprint-permission-clamped",
    W,
    "A blueprint asked for a looser permission than the user's config or the built-in default "
    "allows, and Charter clamped it.",
    "The agent will prompt (or refuse) where its author expected it to run freely; an "
    "unattended run may stall.",
    '[tool_permissions]\nshell = "allow"   # the user did not configure shell\n',
    "Accept the clamp, or trust the agent explicitly in your config: "
    "[agent_tool_permissions.<agent>] or [security] allow_blueprint_permissions.",
)
_r(
    "CH406",
    "metadata-override-loosens",
    E,
    "tools.metadata tries to make a built-in tool looser (lower risk, laxer approval) or to "
    "rename its capability.",
    "Core metadata may only tighten the host's built-in policy; renaming a capability would "
    "let a core satisfy a gate with a grant meant for something else.",
    "tools:\n  metadata:\n    terminal: {approval_policy: auto}\n",
    "Remove the override, or make it stricter.",
)

_r(
    "CH407",
    "implicit-shell-policy",
    W,
    "A stage offers the shell and no scope sets its permission.",
    "The shell then asks on every call that the guard does not recognise as read-only; an "
    "unattended run waits for an answer that never comes.",
    '[stages.build]\navailable_tools = ["shell"]\n',
    'Set it explicitly: [stages.build.tool_permissions] shell = "ask" (or allow/deny).',
)
_r(
    "CH408",
    "blocking-tool-in-autonomous-stage",
    W,
    "An autonomous stage offers a tool that waits for a person (ask_user_*, "
    "present_for_review, edit_document).",
    "Unattended runs remove these tools, so the stage behaves differently with and without "
    "a person watching; attended runs stop and wait.",
    '[stages.work]\nmode = "autonomous"\navailable_tools = ["ask_user_text"]\n',
    "List the tool in required_tools to keep it deliberately, or set "
    "allow_blocking_tools = true for a stage that only runs attended.",
)
_r(
    "CH409",
    "interaction-without-timeout",
    W,
    "A stage keeps a blocking tool for unattended runs, and interaction_timeout_secs is 0.",
    "A prompt nobody answers then holds the run forever.",
    "[limits]\ninteraction_timeout_secs = 0\n",
    "Set [limits] interaction_timeout_secs to a positive number of seconds.",
)
_r(
    "CH410",
    "holds-under-yolo",
    N,
    "A stage keeps a blocking tool in unattended runs (required_tools), or has an interaction "
    'point with unattended = "ask".',
    "Even under --yolo the run will stop there and wait for a person.",
    '[stages.plan]\nrequired_tools = ["ask_user_text"]\n',
    "Nothing to fix if intended; make sure someone will be there, and bound the wait with "
    "[limits] interaction_timeout_secs.",
)

# --- CH45x: what a blueprint asks for beyond its tools -------------------------
_r(
    "CH450",
    "broad-read-path",
    W,
    "A [read_paths] entry covers the whole home directory or any path on the machine.",
    "A grant of it would let the agent read every credential and private file of the user.",
    '[read_paths]\nallow = ["~"]\n',
    "Name the directory the agent actually needs.",
)
_r(
    "CH451",
    "read-paths-declared",
    N,
    "A blueprint declares [read_paths]: reads outside its working directory.",
    "Declaring is not granting: the entries apply only where the user grants them, so the "
    "author may expect reads that will be refused.",
    '[read_paths]\nallow = ["~/datasets"]\n',
    "Nothing to fix; the user grants entries with [agent_read_paths.<agent>] allow or "
    "[security] allow_blueprint_read_paths.",
)
_r(
    "CH452",
    "read-paths-not-granted",
    W,
    "The user's config does not grant some of a blueprint's [read_paths] entries.",
    "Reads matching them will be refused, usually at the worst moment of a run.",
    '[read_paths]\nallow = ["~/datasets"]   # config grants nothing\n',
    "Grant them under [agent_read_paths.<agent>] allow in config.toml, or accept the refusals.",
)
_r(
    "CH453",
    "read-paths-grant-invalid",
    W,
    "A read_paths grant in the user's config does not compile.",
    "Leviath refuses to start an agent with a broken grant list, so the mistake is cheapest "
    "to fix now.",
    '[agent_read_paths.a]\nallow = ["glob:["]\n',
    "Fix or remove the entry in config.toml.",
)
_r(
    "CH454",
    "command-seed",
    N,
    "A region is seeded by a shell command that runs when the agent starts.",
    "The command runs before the first inference and before any approval prompt; whoever "
    "installs a blueprint they did not write should see it first.",
    '[context.regions]\nfiles = { kind = "pinned", seed = { command = "git ls-files" } }\n',
    "Nothing to fix if intended. The note says whether the default safe list covers the "
    "command; [security] allow_seed_commands = false turns command seeds off.",
)
_r(
    "CH455",
    "tool-seed",
    N,
    "A region is seeded by tool calls made when the agent starts.",
    "The calls run before the first inference; each answers to the tool permissions as a call "
    "during the run would, and one that would ask is refused because nobody can be asked yet.",
    '[context.regions]\nenv = { kind = "pinned", seed = { tools = ["current_time"] } }\n',
    "Nothing to fix if intended; make sure the tools are allowed, not asked about.",
)
_r(
    "CH456",
    "blueprint-mcp-server-inert",
    W,
    "A blueprint declares its own [[mcp_servers]], which Charter does not start or contact until "
    "the user's config trusts them.",
    "A stdio server is a program on the user's machine and an HTTP server a place data goes; a "
    "downloaded blueprint must not start either by declaring it. Its tools are refused.",
    '[[mcp_servers]]\nname = "db"\ncommand = "npx"\nargs = ["some-mcp-server"]\n',
    "Review the server, then set [agent_mcp_servers.<agent>] allow_blueprint = true (or "
    "[security] allow_blueprint_mcp_servers = true) in config.toml.",
)
_r(
    "CH457",
    "script-permission-clamped",
    W,
    "A blueprint's [tool_script_permissions] tries to loosen what the user's config sets.",
    "A blueprint may only tighten what script tools may do; the looser value is ignored and "
    "the user's applies.",
    '[tool_script_permissions]\nshell = "allow"   # config says deny\n',
    "Accept the user's value, or ask them to loosen it in config.toml.",
)

# --- CH5xx: shell policy (compiler/shell_policy.py) --------------------------
_r(
    "CH501",
    "unparseable-safe-command",
    E,
    "A [safe_commands] shell entry is not one plain command of literal words.",
    "Charter matches entries word by word against parsed commands; an entry with quotes that "
    "do not round-trip, operators, expansions or globs would match something other than what "
    "it shows.",
    '[safe_commands]\nshell = ["cargo check; curl x"]\n',
    'Write one program and its leading literal arguments, for example "cargo check".',
)
_r(
    "CH502",
    "safe-command-pre-approves-write",
    E,
    "A [safe_commands] shell entry would pre-approve a redirect or a file write.",
    "Redirects answer to the write_file permission and workspace confinement; a safe-command "
    "entry must never turn a write into an unprompted action.",
    '[safe_commands]\nshell = ["sort -o sorted.txt"]\n',
    "Remove the redirect or writing option; let writes be approved as writes.",
)
_r(
    "CH503",
    "safe-command-grants-wrapper",
    E,
    "A [safe_commands] shell entry names a wrapper, shell or interpreter.",
    "env, sudo, xargs, bash -c, python and friends run whatever follows them, so such an "
    "entry would pre-approve every command.",
    '[safe_commands]\nshell = ["xargs"]\n',
    'Name the program that does the work instead (for example "cargo check").',
)
_r(
    "CH504",
    "safe-command-example-mismatch",
    E,
    "A [safe_commands] entry's match or not_match example is judged differently than it says.",
    "The examples are the entry's own tests: an entry that does not cover its match examples, "
    "or covers a not_match example, does not mean what its author thinks.",
    '[[safe_commands.shell]]\ncommand = "cargo check"\nmatch = ["cargo build"]\n',
    "Fix the entry or the example; the message shows how the guard judged the example.",
)
_r(
    "CH505",
    "safe-command-cannot-be-lifted",
    W,
    "A [safe_commands] entry covers a command the guard refuses or always asks about anyway.",
    "Entries lift only a program's own 'ask'; destructive payloads stay denied and options "
    "that execute or write stay asked, so the entry does less than it seems to.",
    '[safe_commands]\nshell = ["rm -rf /"]\n',
    "Remove the entry, or narrow it to the read-only use it is meant for.",
)

_r(
    "CH411",
    "blueprint-safe-commands-inert",
    N,
    "A blueprint declares [safe_commands], which take no effect until the user's config "
    "trusts them.",
    "Declaring is not granting: a downloaded agent cannot pre-approve its own commands. The "
    "author may expect them to apply.",
    '[safe_commands]\nshell = ["make test"]\n',
    "Nothing to fix; the user opts in with [agent_safe_commands.<agent>] allow_blueprint = true.",
)
_r(
    "CH412",
    "stage-loosens-agent-permission",
    N,
    "A stage sets a looser permission for a tool than the blueprint's agent-wide map.",
    "The stage entry replaces the agent entry (narrowest scope wins), which reviewers can miss.",
    '[tool_permissions]\nshell = "ask"\n[stages.build.tool_permissions]\nshell = "allow"\n',
    "Nothing to fix if intended.",
)
_r(
    "CH413",
    "hardcoded-secret",
    E,
    "An MCP manifest writes a credential into env, headers, url or args instead of a ${VAR} "
    "reference.",
    "The manifest is committed with the agent, so the credential is in the repository and its "
    "history for anyone who can read them; a reference is expanded only after connecting is "
    "approved, from the environment of the person running the agent.",
    "env:\n  GITHUB_TOKEN: ghp_0123456789abcdefghijklmnopqrstuvwxyz\n",
    "Write the value as a reference (GITHUB_TOKEN: ${GITHUB_TOKEN}), set it in the environment, "
    "and revoke the credential that was committed: removing it from the file does not remove it "
    "from history.",
)
_r(
    "CH414",
    "untracked-data-flow",
    N,
    "An agent takes in MCP results or secret bindings and offers a tool that sends data out "
    "(web, shell), with data-flow tracking off.",
    "Untrusted content, something worth stealing and a way out are the three parts of an "
    "exfiltration by prompt injection. A person asked about each outbound call stands in the "
    "way, but --yolo and --allow lift those asks; data-flow tracking is the check they do not "
    "waive.",
    "# agent.yaml with an MCP server and the coding toolset (terminal), run with --yolo\n"
    "slots:\n  mcp: agent/mcp\ntools:\n  toolsets: [coding]\n",
    "Turn on data-flow tracking (taint_tracking = true in config.toml, or [security] "
    "taint_tracking = true in the blueprint) and allow the destinations the agent needs.",
)

# --- CH47x: the sandbox profile (compiler/sandbox.py) ----------------------------
_r(
    "CH470",
    "sandbox-loosen-ignored",
    W,
    "A blueprint's [sandbox] asks for more than the user's config allows (kind none, network, "
    "a mount, more hosts, higher limits, on_unavailable warn, more auto_allow groups).",
    "A downloaded blueprint must not widen what its commands can reach; the value is clamped "
    "to the user's, so the agent runs with less than its author expected.",
    "[sandbox]\nnetwork = true   # the user's config gives no network\n",
    "Drop the key, or grant it in your own config.toml [sandbox] if you trust the agent.",
)
_r(
    "CH471",
    "sandbox-engine-ignored",
    W,
    "A blueprint's [sandbox] names a container engine.",
    "The engine binary runs on the host, before any prompt, so a blueprint naming it could "
    "run any program; only the user's config chooses it.",
    '[sandbox]\nkind = "container"\nengine = "/tmp/payload"\n',
    "Remove engine from the blueprint; set it in your config.toml if you need one.",
)
_r(
    "CH472",
    "sandbox-unmet",
    E,
    "A [sandbox] profile that no host can meet (a container without an image, a container "
    "with the proxy network).",
    "A run would refuse to start every time, or quietly run with a different sandbox.",
    '[sandbox]\nkind = "container"   # no image\n',
    'Give the container an image, or use kind = "namespace".',
)
_r(
    "CH473",
    "sandbox-mount-refused",
    E,
    "A [sandbox] mount names the host's control surface (/, /etc, /proc, /sys, /dev, /run, a "
    "socket), a relative path or '..'.",
    "Mounting /var/run/docker.sock or / into the sandbox would make the containment decorative.",
    '[sandbox]\nmounts = ["/var/run/docker.sock"]\n',
    "Mount only the data or toolchain directories the commands need, by absolute path.",
)
_r(
    "CH474",
    "sandbox-hosts-without-network",
    W,
    "[sandbox] allow_hosts is set, but the sandbox has no network.",
    "The hosts are never reachable, so the list promises access that does not exist.",
    '[sandbox]\nnetwork = false\nallow_hosts = ["pypi.org"]\n',
    'Set network = "proxy" (in your config.toml) or drop allow_hosts.',
)

# --- CH6xx: stage graph --------------------------------------------------------
_r(
    "CH601",
    "entry-stage-unknown",
    E,
    "[agent] entry_stage names a stage that does not exist.",
    "The run could not start.",
    '[agent]\nentry_stage = "discovr"\n',
    "Name an existing stage.",
)
_r(
    "CH602",
    "edge-to-unknown-stage",
    E,
    "An edge leads to a stage that does not exist.",
    "Taking the edge would end the run in an error.",
    '[[stages.plan.edges]]\nto = "implemnt"\n',
    "Name an existing stage.",
)
_r(
    "CH603",
    "unreachable-stage",
    W,
    "No path of edges leads from the entry stage to this stage.",
    "The stage never runs; its tools and permissions are dead configuration.",
    "A stage 'cleanup' that no edge points to.",
    "Add an edge to it, or remove it.",
)
_r(
    "CH604",
    "output-missing-submit-tool",
    E,
    "A stage requires an output but does not offer submit_output.",
    "The run can never finish with an answer.",
    '[stages.summary]\nrequire_output = true\navailable_tools = ["read_file"]\n',
    'Use mode = "output" (which grants submit_output) or offer submit_output.',
)
_r(
    "CH605",
    "output-unreachable",
    E,
    "The agent has an output stage, but no path from the entry stage reaches it.",
    "The run can never deliver its answer.",
    "An output stage 'summary' with no edge leading to it.",
    "Add an edge that leads to the output stage.",
)
_r(
    "CH606",
    "cycle-without-limit",
    W,
    "A cycle of stages has no max_revisits or edge gate limit on any stage in it.",
    "A model that keeps choosing the loop runs until the iteration budget is exhausted.",
    "implement -> review -> implement with no max_revisits.",
    "Set max_revisits on a stage of the cycle.",
)

_r(
    "CH607",
    "dead-end-stage",
    W,
    "A stage of a multi-stage agent has no outgoing edge and is not an output stage.",
    "A run that reaches it can neither move on nor deliver an answer.",
    '[stages.review]\navailable_tools = ["read_file"]   # and no edges\n',
    "Add an edge out of the stage, or make it an output stage.",
)

_r(
    "CH650",
    "fanout-no-escape",
    W,
    'A fan_out stage with on_worker_failure = "fail_all" has no error or dead_end edge.',
    "One failed worker then ends the run with nowhere to go.",
    '[stages.split]\nmode = "fan_out"\non_worker_failure = "fail_all"\n',
    'Add an edge with condition = "error" to a recovery stage, or keep the default "continue".',
)
_r(
    "CH651",
    "routing-without-region-read",
    W,
    "A stage routes tool results into a context region and offers read_file, but not context_read.",
    "The model is told the result is in the region, and the only read tool in reach reads "
    "files: it aims read_file at the region's name.",
    '[stages.s.tool_routing]\ndefault_region = "notes"\n',
    "Offer context_read in the stage.",
)
_r(
    "CH652",
    "output-shape-not-required",
    W,
    "A stage declares an output shape but is not required to produce an output.",
    "The shape is advice in a tool description; the run may finish without an answer of that "
    "shape, or any answer at all.",
    '[stages.s.output]\nformat = "json"\n',
    'Set require_output = true (or mode = "output"), or move the shape to the stage that submits.',
)
_r(
    "CH653",
    "output-stage-can-modify",
    W,
    "An output stage offers a tool that changes the workspace.",
    "Work done while reporting lands after the review that was meant to check it.",
    '[stages.summary]\nmode = "output"\navailable_tools = ["write_file"]\n',
    "Drop the tool from the output stage.",
)
_r(
    "CH654",
    "allow-complete-skips-output",
    W,
    "A stage that is not the output stage may end the run (allow_complete) while the agent has "
    "an output stage.",
    "The model can finish there and never reach the stage that delivers the answer; the run "
    "then looks like a success with nothing produced.",
    "[stages.review]\nallow_complete = true\n",
    "Drop allow_complete and route to the output stage.",
)
_r(
    "CH655",
    "dead-end-possible",
    W,
    "Every ordinary edge out of a stage leads to a stage with max_revisits, and no dead_end or "
    "error edge leads anywhere without one.",
    "Once the revisit budgets are spent the stage has nowhere to go and the run stops as "
    "dead-ended.",
    "[stages.review.transitions.implement]   # implement has max_revisits, nothing else\n",
    'Add a condition = "dead_end" edge to a stage without max_revisits, usually the output stage.',
)
_r(
    "CH656",
    "fan-out-invalid",
    E,
    "A fan_out stage does not name exactly one worker source, or names a worker or merge stage "
    "that does not exist or does not allow being a worker.",
    "Leviath refuses to load such a blueprint: the stage could not start its workers or hand "
    "their results on.",
    '[stages.split]\nmode = "fan_out"\nworker_stage = "gather"   # gather lacks allow_as_worker\n',
    "Set exactly one of worker_agent, worker_stage or worker_query; a worker_stage needs "
    "allow_as_worker = true, and merge_stage must name a stage.",
)
_r(
    "CH657",
    "edge-written-as-value",
    W,
    'An edge is written as a plain value other than true ([stages.x.transitions] y = "false").',
    "Leviath takes any plain value as an edge that is always taken; a value such as false reads "
    "as if it meant no edge, or some condition, and does not.",
    '[stages.a.transitions]\nb = "false"\n',
    "Write the edge as a table with its condition, or remove the line.",
)

_r(
    "CH658",
    "gate-cannot-pass",
    E,
    "An edge gate requires modifications, but its stage offers no tool that modifies files and "
    "the gate counts no other tool.",
    "The gate can never pass; every attempt to leave the stage burns its budget until the edge "
    "is forced. Leviath refuses to load such a blueprint.",
    "[stages.plan.transitions.build]\ngate = { require_modifications = true }\n",
    "Offer write_file or edit_file in the stage, list the tools that count in the gate's tools, "
    "or drop require_modifications.",
)
_r(
    "CH659",
    "self-loop-without-limit",
    E,
    "A stage has an edge to itself and no max_revisits.",
    "The model can choose the loop for ever; Leviath refuses to load such a blueprint.",
    '[stages.work.transitions.work]\nhint = "again"\n',
    "Set max_revisits on the stage.",
)
_r(
    "CH660",
    "no-terminal-path",
    E,
    "No path from the entry stage reaches a stage that ends the run.",
    "The agent could never finish; Leviath refuses to load such a blueprint.",
    "[stages.a.transitions.b]\n[stages.b.transitions.a]   # and no stage ends\n",
    "Give some reachable stage an empty [stages.<name>.transitions] table, make it an output "
    "stage, or let it complete (allow_complete).",
)

# --- CH7xx: tools and MCP ------------------------------------------------------
_r(
    "CH701",
    "schema-does-not-compile",
    E,
    "A tool's argument schema is not a valid JSON Schema.",
    "Arguments that cannot be checked are never trusted: the runtime refuses every call to the "
    "tool, so an agent that relies on it cannot work.",
    "input_schema: {type: objet}\n",
    "Fix the schema.",
)
_r(
    "CH702",
    "external-ref-in-schema",
    W,
    "A tool's argument schema uses a $ref to another document.",
    "Charter never fetches schemas from the network or disk, so validation is switched off for "
    "the tool.",
    "input_schema: {$ref: 'https://example.com/args.json'}\n",
    "Inline the referenced schema, or use local '#/$defs/...' references.",
)
_r(
    "CH703",
    "mcp-cwd-outside-workspace",
    E,
    "An MCP server's cwd resolves outside the agent's directory.",
    "A server started elsewhere can read and write files the agent was never given.",
    "cwd: ../../\n",
    "Use a directory inside the agent's workspace.",
)
_r(
    "CH704",
    "tool-disabled",
    N,
    "tools.metadata disables a tool (enabled: false); it is not offered.",
    "A stage that names a disabled tool will not get it.",
    "tools:\n  metadata:\n    web_extract: {enabled: false}\n",
    "Nothing to fix if intended.",
)
_r(
    "CH705",
    "authored-entrypoint-invalid",
    E,
    "An authored tool's entrypoint module or function is missing, or its signature is wrong.",
    "Every call of the tool would fail after approval.",
    "entrypoint: module:exec   # module.py defines execute\n",
    "Point entrypoint at a function taking (ctx, args).",
)
_r(
    "CH706",
    "mcp-filter-matches-nothing",
    W,
    "A tools.include or tools.exclude pattern of an MCP manifest matches none of the server's "
    "pinned tools.",
    "A pattern that matches nothing is usually a typo or a tool the server dropped; an include "
    "that selects nothing leaves the server without tools, an exclude that misses lets a tool "
    "through.",
    "tools: {include: [serch*]}   # the server has search_docs\n",
    "Correct the pattern against the tools listed in charter.lock.json, or remove it.",
)
_r(
    "CH707",
    "mcp-lock-stale",
    W,
    "An MCP server has no usable entry in the agent's charter.lock.json: the manifest changed "
    "after locking, or the server was never locked.",
    "Its tools cannot be checked at compile time; at run time they are discovered unpinned and "
    "every call is asked about.",
    "command: docs-mcp-v2   # edited after charter mcp lock\n",
    "Review the server, then run 'charter mcp lock PROJECT --server NAME'.",
)
_r(
    "CH708",
    "mcp-lock-invalid",
    E,
    "The agent's charter.lock.json cannot be read or is malformed (including digests that do "
    "not match the recorded text).",
    "The pins decide what the model is told about MCP tools; a lock that was edited by hand or "
    "damaged cannot be trusted.",
    '{"version": 1, "servers": {"docs": {"tools": "all"}}}\n',
    "Delete the file and run 'charter mcp lock' again.",
)

_r(
    "CH750",
    "script-tool-undeclared",
    W,
    "A tools/*.rhai file does not declare itself as a tool (no '// @tool <name>', or an "
    "unreadable '// @param' line or <name>.toml override).",
    "Leviath skips such a script, so a stage that names it offers nothing.",
    "// fetches a page\nlet r = http_get(params.url);\n",
    'Start the file with "// @tool <name>" and one "// @param <name> <type> '
    '<required|optional> "<description>"" line per argument.',
)
_r(
    "CH751",
    "script-tool-replaces-builtin",
    N,
    "A script tool has the name of one of Charter's built-in tools.",
    "The agent's own script is the tool its stages offer, with the script's schema and "
    "permissions; Charter's built-in of that name is not used for this agent.",
    "tools/web_search.rhai   // @tool web_search\n",
    "Nothing to fix if intended; rename the script to use Charter's built-in instead.",
)
_r(
    "CH752",
    "mcp-server-not-declared",
    W,
    "A stage names an MCP server (a connector, or a <server>__<tool> name) that neither the "
    "agent nor the user's config declares.",
    "The stage gets nothing from it: a typo looks like a server with nothing to offer, and a "
    "server installed only on the author's machine is missing on yours.",
    '[stages.s]\navailable_connectors = ["githb"]\n',
    "Name a server declared in [[mcp_servers]] (blueprint or config.toml), or in the core's "
    "MCP manifests.",
)

# --- CH80x: policy self-tests --------------------------------------------------
_r(
    "CH801",
    "policy-expectation-failed",
    E,
    "A policy self-test in charter.toml ([[expect]]) gets a different decision from the "
    "compiled policy.",
    "The expectations are the team's statement of what the agent may do; a change that breaks "
    "one changed what the agent may do.",
    '[[expect]]\ntool = "shell"\ncommand = "git push"\ndecision = "deny"   # but it is ask\n',
    "Fix the policy, or update the expectation if the change was intended. The message shows "
    "the gate, rule and provenance of the actual decision.",
)
_r(
    "CH802",
    "policy-expectation-invalid",
    E,
    "A policy self-test names an agent or stage that does not exist.",
    "An expectation that cannot be evaluated proves nothing.",
    '[[expect]]\nagent = "codr"\ntool = "read_file"\ndecision = "allow"\n',
    "Name an existing agent and stage.",
)
_r(
    "CH803",
    "policy-expectations-skipped",
    N,
    "Policy self-tests were not run because the project has errors.",
    "Expectations run against the compiled plan, which errors prevent.",
    "Any project with an error and a [[expect]] table.",
    "Fix the errors; the expectations then run.",
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
