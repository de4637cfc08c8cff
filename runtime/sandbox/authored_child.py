"""Running one authored tool call in a contained child process.

In a run whose sandbox is in force, an authored tool's module does not run
in the runtime's process (where it could read every secret the runtime
holds and reach everything it can) but in a fresh interpreter inside the
stage's sandbox. The runtime has already located the module and checked its
digest; it writes a request file into the sandbox's private temporary
directory (the module's bytes, the call's arguments and the context's
fields) and starts this module on it. The child checks the digest again,
runs the entrypoint, converts the result with the same rules as the
in-process path and writes it as JSON to its standard output, which is
saved before the tool runs: whatever the tool prints goes to standard error.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["boot_argv", "main"]

_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from charter.runtime.sandbox.authored_child import main; sys.exit(main(sys.argv[2]))"
)


def boot_argv(request_path: str) -> list[str]:
    paths = [p for p in sys.path if p]
    return [sys.executable, "-I", "-c", _BOOT, json.dumps(paths), request_path]


def main(request_path: str) -> int:
    # The answer goes to the real stdout; the tool's own prints go to stderr.
    out = os.dup(1)
    os.dup2(2, 1)
    from charter.runtime.tools.authored import (
        CapabilityFacade,
        ToolContext,
        ToolOutput,
        TurnInfo,
        _error_text,
        _Outcome,
        _worker_in,
        convert_result,
    )

    req = json.loads(Path(request_path).read_text(encoding="utf-8"))
    data = base64.b64decode(req["module_b64"])
    path = Path(req["module_path"])
    answer: dict[str, Any]
    if hashlib.sha256(data).hexdigest() != req["digest"]:
        answer = {
            "status": "error",
            "content": "[error] the module changed before it ran",
            "rule": "authored-module-changed",
        }
    else:
        output = ToolOutput()
        ctx = ToolContext(
            turn=TurnInfo(**req["turn"]),
            slot_id=req["slot_id"],
            slot_path=req["slot_path"],
            capability=CapabilityFacade(tuple(req["capabilities"]), req["name"], req["slot_path"]),
            output=output,
            workspace=Path(req["workspace"]),
            cancelled=threading.Event(),
        )
        outcome = _Outcome()
        _worker_in(
            outcome, path, data, req["digest"], req["tool_id"], req["entrypoint"], ctx, req["args"]
        )
        if outcome.error is not None:
            rule, model_text, operator_text = _error_text(req["name"], outcome.error, path)
            answer = {
                "status": "error",
                "content": f"[error] {model_text}",
                "display": f"[error] {operator_text}",
                "rule": rule,
                "raised": True,
            }
        else:
            try:
                result = convert_result(outcome.value)
                answer = {
                    "status": result.status,
                    "content": result.content,
                    "display": result.display,
                    "rule": result.rule,
                    "data": result.data,
                }
            except Exception as exc:  # noqa: BLE001 - reported as the answer
                answer = {
                    "status": "error",
                    "rule": "authored-result-invalid",
                    "content": f"[error] {req['name']} returned a value that cannot be "
                    f"shown ({type(exc).__name__})",
                }
        answer["progress"] = list(output.messages)
        answer["dropped"] = output.dropped
    text = json.dumps(answer, ensure_ascii=False, default=str).encode("utf-8")
    view = memoryview(text)
    while view:
        n = os.write(out, view)
        view = view[n:]
    os.close(out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1]))
