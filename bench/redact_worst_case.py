"""Worst cases for the result redactor: milliseconds to redact 1 MB of hostile text.

    .venv/bin/python bench/redact_worst_case.py [--size BYTES] [--timeout S] [--tree DIR]

Each case is a text an allowed command could print (one unbroken word, a
megabyte of ``a=``, of ``%``, of ``Bearer ``, URL-ish text, ...). For each
the script times the three ways a run redacts output:

- ``views``: :func:`redacted_views` on a tool result, which first learns the
  credentials the output shows (URLs, headers) and then redacts every view;
- ``stream``: a background task's :class:`StreamRedactor`, fed in 4 KB pieces;
- ``cut``: :meth:`Redactor.redact_cut`, the capture of a capped output.

Every case runs in its own process with a time limit (``--timeout``, 20 s by
default), so a backtracking pattern shows up as ``>20000`` instead of hanging
the benchmark. ``--tree DIR`` imports Charter from another checkout (for
example ``/work/main``) to compare before and after in the same run; the
target is under 100 ms per case for 1 MB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIECE = 4096


def _cases(size: int) -> dict[str, Callable[[], str]]:
    def rep(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return {
        "unbroken word": lambda: rep("a"),
        "a=": lambda: rep("a="),
        "%": lambda: rep("%"),
        "%41": lambda: rep("%41"),
        "Bearer ": lambda: rep("Bearer "),
        "authorization: bearer": lambda: rep("authorization: bearer "),
        "scheme chars (a+.-)": lambda: rep("a+.-"),
        "x://": lambda: rep("x://"),
        "one URL, long path": lambda: "https://" + rep("a/")[: size - 8],
        "one URL, long query": lambda: "https://h/?" + rep("token=a&")[: size - 11],
        "URL userinfo ::::@": lambda: "https://" + rep(":")[: size - 9] + "@",
        "--opt ": lambda: rep("--token "),
        "key=value pairs": lambda: rep("api_key=v "),
        "x-api-token: ": lambda: rep("x-api-token: "),
        "JSON keys": lambda: rep('{"secret": "s3cr3tvalue", '),
        "random printable": lambda: _random_printable(size),
    }


def _random_printable(size: int) -> str:
    import random

    rng = random.Random(0)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 =:/?&%@.-_\n\"'"
    return "".join(rng.choice(alphabet) for _ in range(size))


def _one(case: str, size: int) -> None:
    """Run one case in this process and print three timings in ms."""
    from charter.runtime.redact import Redactor, redacted_views
    from charter.runtime.results import ToolResult
    from charter.runtime.tools.tasks import StreamRedactor

    text = _cases(size)[case]()
    r = Redactor()
    # a run always knows some secrets (the provider key, a binding)
    r.add("sk-live-0123456789abcdef", "OPENAI_API_KEY", "env")
    r.add("ghp_aaaaaaaaaaaaaaaaaaaaaaaa", "GITHUB_TOKEN", "env")
    t0 = time.perf_counter()
    redacted_views(ToolResult("ok", text), r)
    t1 = time.perf_counter()
    s = StreamRedactor(r)
    for i in range(0, len(text), PIECE):
        s.feed(text[i : i + PIECE])
    s.feed("", final=True)
    t2 = time.perf_counter()
    r.redact_cut(text, "operator")
    t3 = time.perf_counter()
    print(f"{(t1 - t0) * 1e3:.1f} {(t2 - t1) * 1e3:.1f} {(t3 - t2) * 1e3:.1f}")


def _shim(tree: Path) -> str:
    """A directory whose ``charter`` entry is ``tree``, to put first on the path."""
    d = tempfile.mkdtemp(prefix="redact-bench-")
    os.symlink(tree.resolve(), os.path.join(d, "charter"))
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--tree", type=Path, help="import Charter from this checkout")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case is not None:
        _one(args.case, args.size)
        return 0
    env = dict(os.environ)
    if args.tree is not None:
        env["PYTHONPATH"] = _shim(args.tree) + os.pathsep + env.get("PYTHONPATH", "")
    where = args.tree or ROOT
    print(f"redacting {args.size:,} characters; Charter from {where}; ms (views / stream / cut)")
    worst = 0.0
    for case in _cases(args.size):
        cmd = [sys.executable, __file__, "--case", case, "--size", str(args.size)]
        try:
            res = subprocess.run(
                cmd, capture_output=True, text=True, timeout=args.timeout, env=env, check=True
            )
            figures = [float(x) for x in res.stdout.split()]
            shown = " / ".join(f"{x:8.1f}" for x in figures)
            worst = max(worst, *figures)
        except subprocess.TimeoutExpired:
            shown = f"> {args.timeout * 1e3:.0f} (stopped)"
            worst = float("inf")
        except subprocess.CalledProcessError as exc:
            shown = "failed: " + (exc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {case:<24} {shown}")
    print(f"worst: {worst:.1f} ms" if worst != float("inf") else "worst: did not finish")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
