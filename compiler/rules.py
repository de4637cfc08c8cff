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
    "A stage keeps a blocking tool in unattended runs (required_tools).",
    "Even under --yolo the run will stop there and wait for a person.",
    '[stages.plan]\nrequired_tools = ["ask_user_text"]\n',
    "Nothing to fix if intended; make sure someone will be there.",
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

# --- CH7xx: tools and MCP ------------------------------------------------------
_r(
    "CH701",
    "schema-does-not-compile",
    W,
    "A tool's argument schema is not a valid JSON Schema.",
    "Argument validation is switched off for the tool, so malformed calls reach it.",
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
