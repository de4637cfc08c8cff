"""MCP servers at run time: connection policy, discovery with pinning, calls.

Modules:

* :mod:`~charter.runtime.mcp.lock`: the lock file (plain JSON) and the
  comparison of a server's listing with its pins;
* :mod:`~charter.runtime.mcp.filters`: ``tools.include`` / ``tools.exclude``;
* :mod:`~charter.runtime.mcp.launch`: identity, preview, ``${VAR}``
  expansion, the child's environment and ``cwd``;
* :mod:`~charter.runtime.mcp.stderr`: a server's stderr through a bounded
  window into a private log;
* :mod:`~charter.runtime.mcp.client`: authorizing, connecting, discovering
  and calling, with the ``mcp`` SDK.

Nothing is imported here: the compiler reads locks through
:mod:`~charter.runtime.mcp.lock` and must not pull in the SDK or an HTTP stack.
"""

from __future__ import annotations

__all__: list[str] = []
