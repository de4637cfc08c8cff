"""The bash differential oracle at scale: generated command lines through real bash.

    python bench/shell_oracle.py [--count N] [--seed S] [--batch B] [--jobs J]

Draws N command lines (default 100,000) from the shell grammar in
``tests/shell/strategies.py`` (the grammar the test suite feeds through
hypothesis, here driven by a seeded random generator, which is much
faster), judges each with ``charter.runtime.shell.judge``,
runs the ones the guard does not deny in real bash inside throwaway
namespaces (``tests/shell/bash_oracle.py``; B commands per namespace, J
namespaces at a time), and prints the number of mismatches, the mismatch
rate and the wall time, then the shortest mismatching commands (each one is
a guard bug: fix it and keep the command as a golden case). Exits 1 when
there is a mismatch, 2 when the host cannot run the oracle.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "shell"))

import bash_oracle  # noqa: E402
from strategies import random_shell_text  # noqa: E402

from charter.runtime.shell import Judgement, ShellPolicy, judge  # noqa: E402

WS = "/ws/proj"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--batch", type=int, default=2_000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--show", type=int, default=20)
    args = ap.parse_args()
    why = bash_oracle.unavailable_reason()
    if why is not None:
        print(f"the bash oracle cannot run here: {why}")
        return 2
    t0 = time.perf_counter()
    commands = random_shell_text(args.count, args.seed)
    t_gen = time.perf_counter() - t0
    policy = ShellPolicy()
    judged: list[tuple[str, Judgement]] = []
    denied = 0
    for c in commands:
        j = judge(c, cwd=WS, workspace=WS, policy=policy)
        if j.verdict.decision == "deny":
            denied += 1
        else:
            judged.append((c, j))
    t_judge = time.perf_counter() - t0 - t_gen
    batches = [judged[k : k + args.batch] for k in range(0, len(judged), args.batch)]

    def run(batch: list[tuple[str, Judgement]]) -> list[tuple[str, Judgement, list[str], bool]]:
        results = bash_oracle.run_in_bash([c for c, _ in batch], timeout_s=3600)
        return [
            (c, j, bash_oracle.mismatches(j, e), e.timeout)
            for (c, j), e in zip(batch, results, strict=True)
        ]

    bad: list[tuple[str, Judgement, list[str]]] = []
    timeouts = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for done, rows in enumerate(pool.map(run, batches), 1):
            bad.extend((c, j, why) for c, j, why, _ in rows if why)
            timeouts += sum(1 for row in rows if row[3])
            print(f"  batch {done}/{len(batches)}: {len(bad)} mismatching so far", flush=True)
    wall = time.perf_counter() - t0
    allowed = sum(1 for _, j in judged if j.verdict.decision == "allow")
    opaque = sum(1 for _, j in judged if j.opaque)
    print(f"generated: {len(commands)} commands in {t_gen:.1f} s (seed {args.seed})")
    print(
        f"judged: {t_judge:.1f} s; denied (not run): {denied}; allowed: {allowed}; "
        f"asked: {len(judged) - allowed} (of which not fully read: {opaque})"
    )
    print(f"run in bash: {len(judged)}; timeouts: {timeouts}")
    print(f"mismatches: {len(bad)}; rate: {len(bad) / max(1, len(judged)):.6f}")
    print(f"wall time: {wall:.1f} s")
    for c, j, why_list in sorted(bad, key=lambda r: len(r[0]))[: args.show]:
        print(f"  {c!r} [{j.verdict.decision} {j.verdict.rule}]: {why_list[0]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
