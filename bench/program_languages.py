"""A large run of the sed/awk differential of tests/shell/test_languages_real.py.

    .venv/bin/python bench/program_languages.py [--runs N] [--seed S]

Random sed scripts (1 to 3 -e scripts) and awk programs are built from the
same pieces the test uses; each one the guard allows is run for real (GNU
sed, the installed awk) in a scratch directory holding a credential file.
An allowed script that creates a file, runs a command or prints the
credential is a guard bug. Prints how many were generated, allowed and run,
and the number of violations (the goal is 0).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location(
        "languages_real", ROOT / "tests" / "shell" / "test_languages_real.py"
    )
    assert spec is not None and spec.loader is not None
    t = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t)
    if t.SED is None or t.AWK is None:
        print("GNU sed and awk are needed", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp())
    allowed = {"sed": 0, "awk": 0}
    made = {"sed": 0, "awk": 0}
    bugs: list[list[str]] = []
    start = time.perf_counter()
    for k in range(args.runs):
        env = None
        if k % 2 == 0:
            kind = "sed"
            scripts = [
                "".join(rng.choice(t._SED_PIECES) for _ in range(rng.randint(1, 8)))
                for _ in range(rng.randint(1, 3))
            ]
            words = ["sed", "-n", *[x for s in scripts for x in ("-e", s)], "f"]
            argv = [t.SED, *words[1:]]
        else:
            kind = "awk"
            program = " ".join(rng.choice(t._AWK_PIECES) for _ in range(rng.randint(1, 12)))
            words = ["awk", program, "f"]
            argv = [t.AWK, program, "f"]
            env = {"M": t.SECRET}
        made[kind] += 1
        if not t._allowed(tmp, words):
            continue
        allowed[kind] += 1
        created, out = t._run_in_scratch(tmp, argv, env)
        if created or t.SECRET in out:
            bugs.append(words)
    elapsed = time.perf_counter() - start
    for kind in ("sed", "awk"):
        print(f"{kind}: {made[kind]} generated, {allowed[kind]} allowed and run for real")
    print(f"violations: {len(bugs)} ({elapsed:.0f} s)")
    for words in bugs[:20]:
        print("  ", words)
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
