"""Resolution: what an agent's files mean, decided once.

===========================  ===============================================
module                       concern
===========================  ===============================================
:mod:`.context`              per-agent state and ``tools.metadata`` lookups
:mod:`.tools`                the tool table (names and clashes), with
                             :mod:`.tooltable` (every model-visible name
                             and where it comes from)
:mod:`.entries`              one plan entry per tool (built-in, authored,
                             MCP, script), with :mod:`.describe` (the
                             description, rendered once), :mod:`.authored`
                             (an authored tool's entrypoint, read from its
                             source) and :mod:`.emit_runtime` (the catalog's
                             facts a decision needs, pinned in the plan)
:mod:`.schemas`              users' argument schemas, compiled by
                             :mod:`.schemacheck`
:mod:`.grants`               capability grants
:mod:`.scopes`               permission inputs with provenance, clamps;
                             :mod:`.permissions` resolves one tool's
:mod:`.stages`               stages, their tools' decisions, edges, fan_out
:mod:`.mcp_servers`          MCP server plans and pins (:mod:`.mcp_lock`,
                             an agent's lock as the compiler reads it)
:mod:`.leviath`              script tools, [[mcp_servers]], script
                             permissions (:mod:`.script_plan`,
                             :mod:`.leviath_mcp`)
:mod:`.sandbox`              where each stage's commands run
:mod:`.shell_policy`         ``[safe_commands]`` as the shell guard's data
:mod:`.hooks`                a stage's Rhai hooks and output validator
:mod:`.soul`                 a core's SOUL.md
:mod:`.agent`                all of the above in order: :class:`ResolvedAgent`
===========================  ===============================================

A new front-end key is read by its front-end (``charter.compiler.frontends``)
and resolved in the module of its concern here; a check that computes a fact
reports it here, as it computes it; checks that only report go in
``charter.compiler.lint`` (see ARCHITECTURE.md, "Where a lint check goes"),
and what the plan carries is written by :mod:`charter.compiler.emit`.
"""
