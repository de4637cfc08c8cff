"""An MCP server that puts its secrets into everything it reports, run as
``python leaky_server.py MODE --api-key VALUE --label VALUE``.

Its environment holds ``LEAK_TOKEN``; each failure message names that value
and both argument values, so the tests can check that none reaches what the
runtime returns or records.

list: the tool listing fails with a protocol error.
call: the listing works; the tool ``leak`` fails with an error result and
      ``leak_hard`` with a protocol error.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def main() -> None:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError

    mode = sys.argv[1]
    secrets = f"token={os.environ.get('LEAK_TOKEN', '-')} args={' '.join(sys.argv[2:])}"

    class Leaky(MCPServer):
        async def list_tools(self) -> Any:
            if mode == "list":
                raise MCPError(-32603, f"cannot list tools ({secrets})")
            return await super().list_tools()

    app = Leaky("leaky")

    @app.tool(description="Fails with an error result.")
    def leak() -> str:
        raise ToolError(f"leak failed ({secrets})")

    @app.tool(description="Fails with a protocol error.")
    def leak_hard() -> str:
        raise MCPError(-32603, f"leak_hard failed ({secrets})")

    sys.stderr.write(f"leaky server starting ({secrets})\n")
    sys.stderr.flush()
    app.run()


if __name__ == "__main__":
    main()
