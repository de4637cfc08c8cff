"""Same-run comparison of the shell guard's speed under two checkouts.

    python bench/shell_guard_compare.py OTHER_PYTHON [--fixtures DIR] [--rounds N] [--pairs P]

``OTHER_PYTHON`` is the interpreter of another checkout's venv (its editable
install decides which guard it imports; for the issue 13 baseline,
``/work/baseline/.venv/bin/python``). This interpreter runs this checkout.
Both judge the same commands: ``bench_corpus.txt`` plus the command column of
every golden ``*.tsv`` in ``--fixtures`` (default: this checkout's; give the
other checkout's to compare on exactly its corpus).

Each run is a fresh process that judges every command once to warm up, then
N shuffled rounds, timing every decision. The two run back to back, the
order alternating from pair to pair, P pairs: on a shared machine the load
changes from minute to minute, so only a ratio measured within one pair
means anything. Printed per run: the median of all decisions and the median
over commands of each command's best round (which filters out other
processes); then the ratio this/other of both figures per pair, and their
medians over the pairs. A ratio of 1.10 is this checkout 10% slower.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run by each interpreter; prints "<all-samples median> <best-of-rounds median>" in us.
_CHILD = r"""
import ast, random, statistics, sys, time
from pathlib import Path
fix = Path(sys.argv[1])
rounds = int(sys.argv[2])
cmds = []
for line in (fix / "bench_corpus.txt").read_text("utf-8").splitlines():
    if line and not line.startswith("#"):
        cmds.append(ast.literal_eval(line[3:]) if line.startswith("py:") else line)
for p in sorted(fix.glob("*.tsv")):
    for line in p.read_text("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        c = line.split("\t")[0]
        cmds.append(ast.literal_eval(c[3:]) if c.startswith("py:") else c)
from charter.runtime.shell import ShellPolicy, evaluate
pol = ShellPolicy()
ws = "/ws/proj"
for c in cmds:
    evaluate(c, cwd=ws, workspace=ws, policy=pol)
rng = random.Random(0)
idx = list(range(len(cmds)))
samples = []
best = [float("inf")] * len(cmds)
clock = time.perf_counter
for _ in range(rounds):
    rng.shuffle(idx)
    for i in idx:
        t = clock()
        evaluate(cmds[i], cwd=ws, workspace=ws, policy=pol)
        d = clock() - t
        samples.append(d)
        if d < best[i]:
            best[i] = d
print(len(cmds), statistics.median(samples) * 1e6, statistics.median(best) * 1e6)
"""


def _run(python: str, fixtures: Path, rounds: int) -> tuple[int, float, float]:
    res = subprocess.run(
        [python, "-c", _CHILD, str(fixtures), str(rounds)],
        capture_output=True,
        text=True,
        check=True,
    )
    n, med, best = res.stdout.split()
    return int(n), float(med), float(best)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("other", help="the other checkout's Python interpreter")
    ap.add_argument("--fixtures", type=Path, default=ROOT / "tests" / "fixtures" / "shell")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()

    med_ratios: list[float] = []
    best_ratios: list[float] = []
    for pair in range(args.pairs):
        order = [("this", sys.executable), ("other", args.other)]
        if pair % 2 == 0:
            order.reverse()
        got: dict[str, tuple[int, float, float]] = {}
        for label, python in order:
            got[label] = _run(python, args.fixtures, args.rounds)
            n, med, best = got[label]
            print(
                f"pair {pair + 1} {label:5}: {n} commands, median {med:6.1f} us, "
                f"best-of-{args.rounds}-rounds median {best:6.1f} us",
                flush=True,
            )
        med_ratios.append(got["this"][1] / got["other"][1])
        best_ratios.append(got["this"][2] / got["other"][2])
        print(
            f"pair {pair + 1} ratio this/other: median {med_ratios[-1]:.3f}, "
            f"best-of-rounds median {best_ratios[-1]:.3f}"
        )
    print(
        f"over {args.pairs} pairs, ratio this/other: all-samples median "
        f"{statistics.median(med_ratios):.3f} (range {min(med_ratios):.3f}-{max(med_ratios):.3f}), "
        f"best-of-rounds median {statistics.median(best_ratios):.3f} "
        f"(range {min(best_ratios):.3f}-{max(best_ratios):.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
