"""The shipped tool catalog, and its one reader.

:mod:`.builtin` reads ``data/builtin_tools.json``: every tool Charter
implements, with its schema, default permission, path arguments and guard.
Only the compiler reads it; what a decision needs is copied into the plan
(``charter.compiler.resolve.emit_runtime``), so the runtime never consults
the catalog and upgrading Charter never changes a compiled plan's decisions.
No other module opens the data file (``tests/architecture`` checks it).
"""
