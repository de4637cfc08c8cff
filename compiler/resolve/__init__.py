"""Resolution: what an agent's files mean, decided once.

===========================  ===============================================
module                       concern
===========================  ===============================================
:mod:`.context`              per-agent state and ``tools.metadata`` lookups
:mod:`.tools`                the tool table (names and clashes)
:mod:`.entries`              one plan entry per tool (built-in, authored,
                             MCP, script)
:mod:`.schemas`              users' argument schemas
:mod:`.grants`               capability grants
:mod:`.scopes`               permission inputs with provenance, clamps
:mod:`.stages`               stages, their tools' decisions, edges, fan_out
:mod:`.mcp_servers`          MCP server plans and pins
:mod:`.leviath`              script tools, [[mcp_servers]], script permissions
:mod:`.agent`                all of the above in order: :class:`ResolvedAgent`
===========================  ===============================================

A new front-end key is read by its front-end (``charter.compiler.frontends``)
and resolved in the module of its concern here; checks that only report go
in :mod:`charter.compiler.lint.sources`, and what the plan carries is
written by :mod:`charter.compiler.emit`.
"""
