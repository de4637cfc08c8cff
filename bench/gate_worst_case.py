"""Hostile sizes through every gate: the time of each decision.

    python bench/gate_worst_case.py [--sizes 1048576 4194304]

Compiles the coder blueprint with data-flow tracking on (the user config's
``taint_tracking = true``), opens a session, and decides shell and file-tool
calls whose arguments are megabytes long, through
``charter.runtime.gates.decide``, which runs every gate (visibility, schema,
capability, permission, confinement, shell guard, URL policy, data flow).
Shapes: one long word, many short words, deep ``$(`` nesting, a long
here-document and a long path. As the reference, the same run decides
``ls -la`` (a plain call), and the ratio of each to it is printed. The target
is under 100 ms for every decision at 1 MB and 4 MB.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from charter.compiler import compile_project, load_project
from charter.runtime import ToolCall, decide, open_session, prepare

ROOT = Path(__file__).resolve().parent.parent

SHAPES = {
    "one word": lambda n: "echo " + "a" * n,
    "many words": lambda n: "echo " + "a " * (n // 2),
    "deep $( nesting": lambda n: "echo " + "$(" * (n // 4) + "rm -rf /" + ")" * (n // 4),
    "long here-doc": lambda n: "cat <<EOF\n" + "a\n" * (n // 2) + "$(rm -rf /)\nEOF",
    "many pipes": lambda n: "ls" + " | cat" * (n // 6),
}


def _best(fn, runs: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1 << 20, 4 << 20])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text("taint_tracking = true\n")
        result = compile_project(load_project(ROOT / "blueprints" / "coder", config=config))
        assert result.plan is not None, [str(d) for d in result.diagnostics]
        ws = Path(tmp) / "ws"
        ws.mkdir()
        session = open_session(prepare(result.plan), "coder", workspace=ws, stage="implement")
        assert session.taint is not None, "taint tracking is not on"
        ref = _best(lambda: decide(session, ToolCall("shell", {"command": "ls -la"})))
        print(f"reference: shell 'ls -la' decided in {1000 * ref:.3f} ms")
        worst = 0.0
        for size in args.sizes:
            print(f"size {size:,} characters:")
            calls = {
                **{
                    f"shell, {name}": ToolCall("shell", {"command": make(size)})
                    for name, make in SHAPES.items()
                },
                "read_file, long path": ToolCall("read_file", {"path": "a/" * (size // 2)}),
                "write_file, long content": ToolCall(
                    "write_file", {"path": "x.txt", "content": "a" * size}
                ),
            }
            for name, call in calls.items():
                outcome = decide(session, call)
                took = _best(lambda c=call: decide(session, c))  # type: ignore[misc]
                worst = max(worst, took)
                print(
                    f"  {name:28} {1000 * took:8.2f} ms ({took / ref:7.1f}x)  "
                    f"{outcome.decision} [{outcome.rule}]"
                )
        print(f"slowest: {1000 * worst:.2f} ms (target: under 100 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
