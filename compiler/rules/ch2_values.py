"""Rules CH2xx: structure and values, with CH25x: Leviath's loading defaults
and regions.
"""

from __future__ import annotations

from charter.compiler.rules.catalog import E, N, W, register

# --- CH2xx: structure and values ---------------------------------------------
register(
    "CH201",
    "unknown-key",
    E,
    "A key that the format does not define.",
    "A misspelled key is silently ignored by lax loaders, so the setting the author "
    "wrote never takes effect.",
    '[stages.plan]\navailable_tool = ["read_file"]\n',
    "Use the suggested spelling, or remove the key.",
)
register(
    "CH202",
    "wrong-type",
    E,
    "A value has the wrong type.",
    "A value of the wrong type cannot mean what its author intended.",
    'max_iterations = "ten"\n',
    "Write a value of the expected type.",
)
register(
    "CH203",
    "invalid-value",
    E,
    "A value is not one of the accepted choices, or is out of range.",
    "Falling back to a default on a typo would hand the author a behaviour they did not write.",
    "risk: hgih\n",
    "Use one of the accepted values listed in the message.",
)
register(
    "CH204",
    "missing-key",
    E,
    "A required key is absent.",
    "Without it the file cannot be given a meaning.",
    '[agent]\nversion = "1"   # name is missing\n',
    "Add the key.",
)
register(
    "CH205",
    "invalid-permission-value",
    E,
    "A permission is not exactly allow, ask or deny.",
    "A misspelled deny that quietly became ask would turn a refusal into a prompt.",
    '[tool_permissions]\nshell = "dney"\n',
    "Write allow, ask or deny.",
)
register(
    "CH206",
    "slot-only-field-in-tool-yaml",
    E,
    "tool.yaml sets a field that belongs to a slot, not to a tool.",
    "The host ignores or rejects these in tool.yaml; the author's intent would be lost.",
    "timeout_seconds: 30\n",
    "Move the field to the slot configuration in agent.yaml.",
)
register(
    "CH207",
    "duplicate-definition",
    E,
    "The same stage, tool or server is defined twice.",
    "Which definition wins would depend on file order.",
    "[stages.plan] in agent.leviath and stages/plan.toml.",
    "Keep one definition.",
)
register(
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
register(
    "CH232",
    "ignored-key",
    W,
    "A key the agent host's model accepts and then ignores, such as dependencies.requirements.",
    "The setting does nothing, though its author probably expected it to.",
    "dependencies:\n  mode: host_shared\n  requirements: [requests]\n",
    "Remove the key, or move the setting to where the host reads it.",
)
register(
    "CH234",
    "key-not-run",
    W,
    "A key that Charter accepts but its runtime does not carry out: it shapes what the model "
    "sees or does (context regions, tool routing, per-stage models, compaction), and constrains "
    "nothing.",
    "The run behaves differently from the same agent on its own host; the message says how.",
    '[stages.work.tool_routing]\ndefault_region = "notes"\n',
    "Accept the difference, or run the agent on its own host.",
)
register(
    "CH235",
    "key-for-host",
    N,
    "A key that configures the agent host's own process (its daemon limits, front-ends, "
    "telemetry, credential storage), not the agent's program.",
    "Charter runs the program without its host, so the key has no effect here.",
    "[webhook]\nmax_retries = 3\n",
    "Nothing to do: the key still configures the host when the agent runs there.",
)
# --- CH25x: Leviath's loading defaults and regions ----------------------------
register(
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
register(
    "CH251",
    "stage-missing-mode",
    W,
    "A stage does not say which mode it runs in.",
    "It runs as autonomous, which may not be what its author had in mind for a stage that talks "
    "to a person.",
    '[stages.plan]\navailable_tools = ["read_file"]\n',
    'Write the mode, for example mode = "autonomous".',
)
register(
    "CH252",
    "stage-missing-model",
    W,
    "A stage names no model.",
    "Leviath then runs it on whatever default provider the user configured, so the same "
    "blueprint behaves differently from one machine to the next.",
    '[stages.plan]\nmode = "autonomous"\n',
    'Add model = { models = [{ provider = "...", model = "..." }] } to the stage.',
)
register(
    "CH253",
    "stage-missing-max-iterations",
    W,
    "A stage that runs inference sets no max_iterations.",
    "It is bounded only by the user's [limits] default_max_iterations, which the author does not "
    "control.",
    '[stages.work]\nmode = "autonomous"\n',
    "Give the stage a max_iterations it should never reach.",
)
register(
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
register(
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
register(
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
register(
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
register(
    "CH258",
    "compact-summarizes-deliverable",
    W,
    'An edge with transform = "compact" would summarize a required region.',
    "Compacting summarizes every region that is not pinned, including the ones holding results; "
    "figures that survive a paraphrase are no longer figures.",
    '[stages.gather.transitions.report]\ntransform = "compact"\n',
    'Set summarizable = false on the region, or name what to compact with transform = "custom".',
)
