"""What the sandbox adds to one shell call, measured against the same
command without it, in the same run.

Each round runs the command through the shell tool's own path
(``charter.runtime.proc.run_command``) once contained, in the default
profile ``charter run`` uses, and once uncontained, alternating so both see
the same machine load. Prints the medians and the 90th percentiles of both
and of the difference, for the launch helper (the default) and for forking
the runtime itself (``--fork``, the fallback when the helper is not
available), plus the load average, which on a shared machine moves these
numbers more than anything here does. The goal is under 20 ms median added.

    python bench/sandbox_cost.py [--rounds N] [--command CMD] [--fork]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from charter.runtime.plan import SandboxLimits, SandboxProfile
from charter.runtime.proc import run_command
from charter.runtime.sandbox import defaults
from charter.runtime.sandbox.launcher import Sandbox
from charter.runtime.sandbox.probe import host_facts


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"median {1000 * statistics.median(values):6.2f} ms   p90 {1000 * p90:6.2f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--command", default="echo hello")
    ap.add_argument("--fork", action="store_true", help="fork the runtime instead of the helper")
    args = ap.parse_args()
    facts = host_facts()
    if not facts.namespaces:
        print("this host cannot build the namespace sandbox: " + "; ".join(facts.reasons))
        return 1
    root = Path(tempfile.mkdtemp(prefix="charter-bench-"))
    ws = root / "ws"
    (ws / ".git").mkdir(parents=True)
    home = ws / ".charter" / "runs" / "bench" / "home"
    home.mkdir(parents=True)
    profile = SandboxProfile(
        hidden=defaults.HIDDEN, read_only=defaults.READ_ONLY, limits=SandboxLimits()
    )
    sb = Sandbox(
        profile,
        workspace=ws,
        private_dir=root / "private",
        env_home=home,
        launch="fork" if args.fork else None,
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    argv = ["/bin/bash", "-c", args.command]

    def once(contained: bool) -> float:
        t = time.perf_counter()
        r = run_command(argv, cwd=ws, env=env, timeout_s=30, sandbox=sb if contained else None)
        elapsed = time.perf_counter() - t
        if r.exit_code != 0:
            raise SystemExit(f"the command failed ({'contained' if contained else 'plain'}): {r}")
        return elapsed

    for _ in range(3):  # warm up: the helper starts, caches fill
        once(True)
        once(False)
    contained: list[float] = []
    plain: list[float] = []
    for i in range(args.rounds):
        first = i % 2 == 0
        a = once(first)
        b = once(not first)
        (contained if first else plain).append(a)
        (plain if first else contained).append(b)
    added = [c - p for c, p in zip(contained, plain, strict=True)]
    sb.close()
    load = os.getloadavg()
    mode = "fork" if args.fork or not sb.use_helper else "launch helper"
    print(f"command: {args.command!r}, {args.rounds} rounds, start: {mode}")
    print(
        f"host: Landlock ABI {facts.landlock_abi}, namespaces, pid_max per namespace "
        f"{'yes' if facts.pid_max else 'no'}; {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"uncontained  {_ms(plain)}")
    print(f"contained    {_ms(contained)}")
    print(f"added        {_ms(added)}")
    verdict = "meets" if statistics.median(added) < 0.020 else "misses"
    print(f"{verdict} the goal of under 20 ms median added per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
