"""Rules CH6xx: the stage graph, with CH65x: Leviath's lints of a blueprint's stages."""

from __future__ import annotations

from charter.compiler.rules.catalog import E, W, register

# --- CH6xx: stage graph --------------------------------------------------------
register(
    "CH601",
    "entry-stage-unknown",
    E,
    "[agent] entry_stage names a stage that does not exist.",
    "The run could not start.",
    '[agent]\nentry_stage = "discovr"\n',
    "Name an existing stage.",
)
register(
    "CH602",
    "edge-to-unknown-stage",
    E,
    "An edge leads to a stage that does not exist.",
    "Taking the edge would end the run in an error.",
    '[[stages.plan.edges]]\nto = "implemnt"\n',
    "Name an existing stage.",
)
register(
    "CH603",
    "unreachable-stage",
    W,
    "No path of edges leads from the entry stage to this stage.",
    "The stage never runs; its tools and permissions are dead configuration.",
    "A stage 'cleanup' that no edge points to.",
    "Add an edge to it, or remove it.",
)
register(
    "CH604",
    "output-missing-submit-tool",
    E,
    "A stage requires an output but does not offer submit_output.",
    "The run can never finish with an answer.",
    '[stages.summary]\nrequire_output = true\navailable_tools = ["read_file"]\n',
    'Use mode = "output" (which grants submit_output) or offer submit_output.',
)
register(
    "CH605",
    "output-unreachable",
    E,
    "The agent has an output stage, but no path from the entry stage reaches it.",
    "The run can never deliver its answer.",
    "An output stage 'summary' with no edge leading to it.",
    "Add an edge that leads to the output stage.",
)
register(
    "CH606",
    "cycle-without-limit",
    W,
    "A cycle of stages has no max_revisits or edge gate limit on any stage in it.",
    "A model that keeps choosing the loop runs until the iteration budget is exhausted.",
    "implement -> review -> implement with no max_revisits.",
    "Set max_revisits on a stage of the cycle.",
)
register(
    "CH607",
    "dead-end-stage",
    W,
    "A stage of a multi-stage agent has no outgoing edge and is not an output stage.",
    "A run that reaches it can neither move on nor deliver an answer.",
    '[stages.review]\navailable_tools = ["read_file"]   # and no edges\n',
    "Add an edge out of the stage, or make it an output stage.",
)
register(
    "CH650",
    "fanout-no-escape",
    W,
    'A fan_out stage with on_worker_failure = "fail_all" has no error or dead_end edge.',
    "One failed worker then ends the run with nowhere to go.",
    '[stages.split]\nmode = "fan_out"\non_worker_failure = "fail_all"\n',
    'Add an edge with condition = "error" to a recovery stage, or keep the default "continue".',
)
register(
    "CH651",
    "routing-without-region-read",
    W,
    "A stage routes tool results into a context region and offers read_file, but not context_read.",
    "The model is told the result is in the region, and the only read tool in reach reads "
    "files: it aims read_file at the region's name.",
    '[stages.s.tool_routing]\ndefault_region = "notes"\n',
    "Offer context_read in the stage.",
)
register(
    "CH652",
    "output-shape-not-required",
    W,
    "A stage declares an output shape but is not required to produce an output.",
    "The shape is advice in a tool description; the run may finish without an answer of that "
    "shape, or any answer at all.",
    '[stages.s.output]\nformat = "json"\n',
    'Set require_output = true (or mode = "output"), or move the shape to the stage that submits.',
)
register(
    "CH653",
    "output-stage-can-modify",
    W,
    "An output stage offers a tool that changes the workspace.",
    "Work done while reporting lands after the review that was meant to check it.",
    '[stages.summary]\nmode = "output"\navailable_tools = ["write_file"]\n',
    "Drop the tool from the output stage.",
)
register(
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
register(
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
register(
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
register(
    "CH657",
    "edge-written-as-value",
    W,
    'An edge is written as a plain value other than true ([stages.x.transitions] y = "false").',
    "Leviath takes any plain value as an edge that is always taken; a value such as false reads "
    "as if it meant no edge, or some condition, and does not.",
    '[stages.a.transitions]\nb = "false"\n',
    "Write the edge as a table with its condition, or remove the line.",
)
register(
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
register(
    "CH659",
    "self-loop-without-limit",
    E,
    "A stage has an edge to itself and no max_revisits.",
    "The model can choose the loop for ever; Leviath refuses to load such a blueprint.",
    '[stages.work.transitions.work]\nhint = "again"\n',
    "Set max_revisits on the stage.",
)
register(
    "CH660",
    "no-terminal-path",
    E,
    "No path from the entry stage reaches a stage that ends the run.",
    "The agent could never finish; Leviath refuses to load such a blueprint.",
    "[stages.a.transitions.b]\n[stages.b.transitions.a]   # and no stage ends\n",
    "Give some reachable stage an empty [stages.<name>.transitions] table, make it an output "
    "stage, or let it complete (allow_complete).",
)
register(
    "CH661",
    "script-not-executed",
    E,
    "A stage names a Rhai script this runtime does not run yet: a custom region's script.",
    "Such scripts can refuse or rewrite tool calls and reject outputs. A run that skipped them "
    "would be looser than the blueprint its author reviewed, so no plan is written rather than "
    "a weaker one.",
    '[context.regions.notes]\nkind = "custom"\nscript = "regions/notes.rhai"\n',
    "Run the agent with Leviath itself while it needs the script, or express the rule in Charter's "
    "own terms (tool_permissions, [safe_commands], an output schema) and remove the key.",
)
register(
    "CH662",
    "stage-script-invalid",
    E,
    "A stage hook or output validator names a script that is missing, unreadable, not valid Rhai, "
    "or does not define its function with exactly one parameter (fn on_tool_call(ctx), "
    "fn validate(content)).",
    "A hook or validator that never runs looks exactly like one that ran and allowed everything, "
    "so, as Leviath does before the agent starts, no plan is written.",
    '[stages.work.hooks]\non_tool_call = "hooks/guard.rhai"   # file defines fn guard(ctx)\n',
    "Fix the path or the script so it defines fn <hook>(ctx).",
)
