"""Small helpers more than one compiler layer uses.

A module belongs here only when modules of two different subpackages need it
and it depends on nothing of the compiler but :mod:`charter.compiler.diagnostics`
and :mod:`charter.compiler.errors`: :mod:`.literal_secrets` (credentials written
into configuration, found by ``resolve/leviath_mcp`` and ``lint/sources``).
"""
