"""Rules CH4xx: permissions, capabilities and secrets, with CH45x (what a
blueprint asks for beyond its tools) and CH47x (the sandbox profile,
compiler/resolve/sandbox.py).
"""

from __future__ import annotations

from charter.compiler.rules.catalog import E, N, W, register

# --- CH4xx: permissions, capabilities and secrets ----------------------------
register(
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
register(
    "CH402",
    "unknown-capability",
    W,
    "A capability name that no tool and no Charter gate uses, or that is malformed.",
    "A grant that matches nothing grants nothing; it is often a typo of a real capability.",
    "capabilities:\n  defaults:\n    fs.raed: {}\n",
    "Use a capability a tool requires (fs.read, fs.write, terminal.exec, network.fetch, "
    "mcp.connect:<server>, mcp.call:<server>, tool.call:<tool>, secret.bind:<NAME>, ...).",
)
register(
    "CH403",
    "wildcard-secret-grant",
    E,
    "A secret.bind grant uses a wildcard.",
    "secret.bind:* would let any command receive any credential in the environment.",
    "capabilities:\n  defaults:\n    secret.bind:*: {}\n",
    "Grant each secret by its exact name: secret.bind:GH_TOKEN.",
)
register(
    "CH404",
    "secret-binding-target-forbidden",
    E,
    "A secret binding targets an execution-control variable (PATH, HOME, LD_PRELOAD, "
    "PYTHONPATH, NODE_OPTIONS, ...).",
    "Binding a value there changes what runs, not what the command can read.",
    'secret_bindings = [{source = "env:TOKEN", target = "LD_PRELOAD"}]\n',
    "Choose an ordinary variable name as the target.",
)
register(
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
register(
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
register(
    "CH407",
    "implicit-shell-policy",
    W,
    "A stage offers the shell and no scope sets its permission.",
    "The shell then asks on every call that the guard does not recognise as read-only; an "
    "unattended run waits for an answer that never comes.",
    '[stages.build]\navailable_tools = ["shell"]\n',
    'Set it explicitly: [stages.build.tool_permissions] shell = "ask" (or allow/deny).',
)
register(
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
register(
    "CH409",
    "interaction-without-timeout",
    W,
    "A stage keeps a blocking tool for unattended runs, and interaction_timeout_secs is 0.",
    "A prompt nobody answers then holds the run forever.",
    "[limits]\ninteraction_timeout_secs = 0\n",
    "Set [limits] interaction_timeout_secs to a positive number of seconds.",
)
register(
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
register(
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
register(
    "CH412",
    "stage-loosens-agent-permission",
    N,
    "A stage sets a looser permission for a tool than the blueprint's agent-wide map.",
    "The stage entry replaces the agent entry (narrowest scope wins), which reviewers can miss.",
    '[tool_permissions]\nshell = "ask"\n[stages.build.tool_permissions]\nshell = "allow"\n',
    "Nothing to fix if intended.",
)
register(
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
register(
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
register(
    "CH415",
    "user-permission-overridden",
    W,
    "Your config sets a tool's permission looser than the policy does, so your setting changes "
    "nothing for this agent: the policy's stricter value (or the agent core's approval) wins.",
    "A user's config may be tightened by a policy but never loosen it; the tool keeps asking (or "
    "stays refused) although your config says otherwise, and nothing else tells you.",
    '# your config.toml\n[agent_tool_permissions.assistant]\nsearch_files = "allow"\n'
    '# the policy\'s agent.leviath\n[stages.work.tool_permissions]\nsearch_files = "ask"\n',
    "Remove the tool's entry from the policy (your config then decides), or set the policy's "
    "entry to the value you want; or drop the setting from your config if the policy is right.",
)
# --- CH45x: what a blueprint asks for beyond its tools -------------------------
register(
    "CH450",
    "broad-read-path",
    W,
    "A [read_paths] entry covers the whole home directory or any path on the machine.",
    "A grant of it would let the agent read every credential and private file of the user.",
    '[read_paths]\nallow = ["~"]\n',
    "Name the directory the agent actually needs.",
)
register(
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
register(
    "CH452",
    "read-paths-not-granted",
    W,
    "The user's config does not grant some of a blueprint's [read_paths] entries.",
    "Reads matching them will be refused, usually at the worst moment of a run.",
    '[read_paths]\nallow = ["~/datasets"]   # config grants nothing\n',
    "Grant them under [agent_read_paths.<agent>] allow in config.toml, or accept the refusals.",
)
register(
    "CH453",
    "read-paths-grant-invalid",
    W,
    "A read_paths grant in the user's config does not compile.",
    "Leviath refuses to start an agent with a broken grant list, so the mistake is cheapest "
    "to fix now.",
    '[agent_read_paths.a]\nallow = ["glob:["]\n',
    "Fix or remove the entry in config.toml.",
)
register(
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
register(
    "CH455",
    "tool-seed",
    N,
    "A region is seeded by tool calls made when the agent starts.",
    "The calls run before the first inference; each answers to the tool permissions as a call "
    "during the run would, and one that would ask is refused because nobody can be asked yet.",
    '[context.regions]\nenv = { kind = "pinned", seed = { tools = ["current_time"] } }\n',
    "Nothing to fix if intended; make sure the tools are allowed, not asked about.",
)
register(
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
register(
    "CH457",
    "script-permission-clamped",
    W,
    "A blueprint's [tool_script_permissions] tries to loosen what the user's config sets.",
    "A blueprint may only tighten what script tools may do; the looser value is ignored and "
    "the user's applies.",
    '[tool_script_permissions]\nshell = "allow"   # config says deny\n',
    "Accept the user's value, or ask them to loosen it in config.toml.",
)
# --- CH47x: the sandbox profile (compiler/resolve/sandbox.py) ----------------------------
register(
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
register(
    "CH471",
    "sandbox-engine-ignored",
    W,
    "A blueprint's [sandbox] names a container engine.",
    "The engine binary runs on the host, before any prompt, so a blueprint naming it could "
    "run any program; only the user's config chooses it.",
    '[sandbox]\nkind = "container"\nengine = "/tmp/payload"\n',
    "Remove engine from the blueprint; set it in your config.toml if you need one.",
)
register(
    "CH472",
    "sandbox-unmet",
    E,
    "A [sandbox] profile that no host can meet (a container without an image, a container "
    "with the proxy network).",
    "A run would refuse to start every time, or quietly run with a different sandbox.",
    '[sandbox]\nkind = "container"   # no image\n',
    'Give the container an image, or use kind = "namespace".',
)
register(
    "CH473",
    "sandbox-mount-refused",
    E,
    "A [sandbox] mount names the host's control surface (/, /etc, /proc, /sys, /dev, /run, a "
    "socket), a relative path or '..'.",
    "Mounting /var/run/docker.sock or / into the sandbox would make the containment decorative.",
    '[sandbox]\nmounts = ["/var/run/docker.sock"]\n',
    "Mount only the data or toolchain directories the commands need, by absolute path.",
)
register(
    "CH474",
    "sandbox-hosts-without-network",
    W,
    "[sandbox] allow_hosts is set, but the sandbox has no network.",
    "The hosts are never reachable, so the list promises access that does not exist.",
    '[sandbox]\nnetwork = false\nallow_hosts = ["pypi.org"]\n',
    'Set network = "proxy" (in your config.toml) or drop allow_hosts.',
)
