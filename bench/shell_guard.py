"""Benchmark of the shell guard: microseconds per decision, and the one-time
cost of building the parser.

    /work/venv/bin/python bench/shell_guard.py [--rounds N]

The corpus is ``tests/fixtures/shell/bench_corpus.txt`` (typical agent
commands) plus every command of the golden data files, so it mixes allowed,
asked and denied commands, pipelines, substitutions and parse errors. Each
round judges every command once, in a shuffled order; the figures are the
median and 99th percentile over all single decisions. The split shows where
the time goes: lexing, building the tree (the flat path, or the LALR table
walk for nested text), and the classification (which includes the extra
readings of non-ASCII text).
"""

from __future__ import annotations

import argparse
import ast
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "shell"
WS = "/ws/proj"


def corpus() -> list[str]:
    out: list[str] = []
    for line in (FIXTURES / "bench_corpus.txt").read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            out.append(ast.literal_eval(line[3:]) if line.startswith("py:") else line)
    for path in sorted(FIXTURES.glob("*.tsv")):
        for line in path.read_text("utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            cmd = line.split("\t")[0]
            out.append(ast.literal_eval(cmd[3:]) if cmd.startswith("py:") else cmd)
    return out


def build_cost_in_fresh_process() -> tuple[float, float]:
    """(import ms, build ms) measured in a new interpreter."""
    code = (
        "import time; t=time.perf_counter();"
        "import charter.runtime.shell.syntax as s; t1=time.perf_counter();"
        "s.build_parser(); t2=time.perf_counter();"
        "print((t1-t)*1e3, (t2-t1)*1e3)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    a, b = res.stdout.split()
    return float(a), float(b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()

    from charter.runtime.shell import ShellPolicy, evaluate
    from charter.runtime.shell.syntax import _Ctx, _tree, build_parser, tokenize

    import_ms, build_ms = build_cost_in_fresh_process()
    commands = corpus()
    policy = ShellPolicy()
    build_parser()
    for c in commands:  # warm up
        evaluate(c, cwd=WS, workspace=WS, policy=policy)

    rng = random.Random(0)
    samples: list[float] = []
    best = [float("inf")] * len(commands)
    counter = time.perf_counter
    indexes = list(range(len(commands)))
    for _ in range(args.rounds):
        rng.shuffle(indexes)
        for i in indexes:
            c = commands[i]
            t0 = counter()
            evaluate(c, cwd=WS, workspace=WS, policy=policy)
            dt = (counter() - t0) * 1e6
            samples.append(dt)
            best[i] = min(best[i], dt)
    samples.sort()
    median = statistics.median(samples)
    p99 = samples[int(len(samples) * 0.99)]
    best.sort()
    best_median = statistics.median(best)
    best_p99 = best[int(len(best) * 0.99)]

    # where the time goes (medians per command over the corpus)
    lex: list[float] = []
    drive: list[float] = []
    for c in commands:
        t0 = counter()
        try:
            lexed = tokenize(c)
        except Exception:
            continue
        t1 = counter()
        try:
            _tree(lexed.tokens, lexed.text, _Ctx(lexed.heredocs, lexed.values))
        except Exception:
            continue
        t2 = counter()
        lex.append((t1 - t0) * 1e6)
        drive.append((t2 - t1) * 1e6)
    decisions: dict[str, int] = {}
    for c in commands:
        d = evaluate(c, cwd=WS, workspace=WS, policy=policy).decision
        decisions[d] = decisions.get(d, 0) + 1

    mix = ", ".join(f"{k} {v}" for k, v in sorted(decisions.items()))
    print(
        f"corpus: {len(commands)} commands ({mix}), {args.rounds} rounds, {len(samples)} decisions"
    )
    print(
        f"per decision, all samples: median {median:.1f} us, p99 {p99:.1f} us, "
        f"max {samples[-1]:.1f} us"
    )
    # Best-of-rounds per command filters out other processes' interference
    # on a shared machine (as timeit does).
    print(
        f"per decision, best of {args.rounds} rounds per command: median {best_median:.1f} us,"
        f" p99 {best_p99:.1f} us"
    )
    print(
        f"  of which (medians) lexing {statistics.median(lex):.1f} us, "
        f"tree building {statistics.median(drive):.1f} us, "
        f"classification the rest"
    )
    print(
        f"one-time cost in a fresh process: import {import_ms:.1f} ms, "
        f"parser build {build_ms:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
