"""Worst-case inputs for the shell guard: the time of each decision.

    python bench/shell_worst_case.py [--size N ...]

Each hostile command line of ``tests/shell/hostile.py`` is built at each
size (by default just under the guard's size cap and at 100 KB, which is
over it) and judged; the best of three runs is printed with the decision.
Every decision must be ask or deny (but for the few that are one plain
read-only command, ``BENIGN``, which may be allowed under the cap), and each
should take well under 100 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "shell"))

from hostile import BENIGN, MAKERS  # noqa: E402

from charter.runtime.shell import ShellPolicy, evaluate  # noqa: E402
from charter.runtime.shell.guard import MAX_COMMAND_CHARS  # noqa: E402

WS = "/ws/proj"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, action="append")
    args = ap.parse_args()
    sizes = args.size or [MAX_COMMAND_CHARS, 100_000]
    policy = ShellPolicy()
    evaluate("ls", cwd=WS, workspace=WS, policy=policy)  # build the parser first
    worst = 0.0
    allowed = 0
    print(f"size cap: {MAX_COMMAND_CHARS} characters")
    print(f"{'case':34s} {'chars':>7s} {'ms':>8s}  decision")
    for size in sizes:
        for name, make in MAKERS.items():
            command = make(size)[:size]
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                v = evaluate(command, cwd=WS, workspace=WS, policy=policy)
                best = min(best, time.perf_counter() - t0)
            worst = max(worst, best)
            allowed += v.decision == "allow" and name not in BENIGN
            print(f"{name:34s} {len(command):7d} {best * 1e3:8.2f}  {v.decision} {v.rule}")
    print(f"slowest: {worst * 1e3:.2f} ms; hostile lines allowed: {allowed}")
    return 1 if allowed else 0


if __name__ == "__main__":
    sys.exit(main())
