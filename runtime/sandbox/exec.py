"""``python -m charter.runtime.sandbox.exec SPEC -- COMMAND...``: run one
long-lived command (an MCP stdio server) inside a sandbox, in place.

The MCP client starts its servers itself, with their standard streams as
the protocol; this wrapper is what it starts instead. It builds the sandbox
``SPEC`` describes (the profile, the workspace, the run's private directory
and what the host offers, as JSON), starts the command in it with the
wrapper's own standard streams, and exits as the command does. Stopping the
wrapper stops the command: the relay dies with the wrapper, and with it the
command's whole pid namespace.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "wrapper_argv"]

_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from charter.runtime.sandbox.exec import main; sys.exit(main(sys.argv[2:]))"
)


def wrapper_argv(spec: dict[str, Any], command: list[str]) -> list[str]:
    """The argv that runs ``command`` contained (an interpreter and this module)."""
    paths = [p for p in sys.path if p]
    return [sys.executable, "-I", "-c", _BOOT, json.dumps(paths), json.dumps(spec), "--", *command]


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: exec SPEC -- COMMAND...", file=sys.stderr)
        return 2
    from charter.runtime.plan import SandboxProfile
    from charter.runtime.sandbox.launcher import Sandbox, SandboxError, SandboxUnavailable
    from charter.runtime.sandbox.spec import HostFacts

    spec = json.loads(argv[0])
    command = argv[2:]
    host = HostFacts(**{**spec["host"], "reasons": tuple(spec["host"].get("reasons", ()))})
    home = os.environ.get("HOME")
    sandbox = Sandbox(
        SandboxProfile.model_validate(spec["profile"]),
        workspace=Path(spec["workspace"]),
        private_dir=Path(spec["private"]),
        env_home=Path(home) if home else None,
        host=host,
        home=Path(spec["home"]),
        launch="fork",
        allow_local_network=bool(spec.get("allow_local_network")),
        die_with_parent=True,
    )
    try:
        launched = sandbox.popen(
            command, cwd=os.getcwd(), env=dict(os.environ), stdin=None, stdout=None, stderr=None
        )
    except (SandboxError, SandboxUnavailable) as exc:
        print(f"charter sandbox: {exc}", file=sys.stderr)
        return 126
    proc = launched.proc

    def stop(sig: int, _frame: Any) -> None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            pass
        deadline = time.monotonic() + 2
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    code = proc.wait()
    launched.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
