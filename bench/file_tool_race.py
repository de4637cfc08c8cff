"""The file tools against a racing swapper, counted: escapes must be 0.

A process (contained in the default sandbox where this host can build it)
keeps swapping a workspace folder for a symlink to an outside folder and
back, while read_file, write_file, edit_file, list_dir and search_files run
N times each through the real dispatch. Prints, per opening mode (openat2
and the component walk), the calls, how many were refused because the path
changed under them, and the escapes (anything outside read, written, listed
or found). As the reference, the same reads are also made the way the file
tools used to open a path (by name, ``O_NOFOLLOW`` on the last component
only), which shows the race window is real on this machine. Then the cost
of one read_file call in each mode against that by-name open, no swapper.

    python bench/file_tool_race.py [--calls N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _support.race import layout, race, swapper  # noqa: E402

from charter.runtime.plan import SandboxLimits, SandboxProfile  # noqa: E402
from charter.runtime.policy.env import build_env  # noqa: E402
from charter.runtime.policy.workspace import confine  # noqa: E402
from charter.runtime.sandbox import defaults  # noqa: E402
from charter.runtime.sandbox.launcher import Sandbox  # noqa: E402
from charter.runtime.sandbox.probe import host_facts  # noqa: E402
from charter.runtime.tools import beneath  # noqa: E402
from charter.runtime.tools.registry import ToolRuntime, dispatch  # noqa: E402


def _runtime(ws: Path, home: Path) -> ToolRuntime:
    home.mkdir(exist_ok=True)
    return ToolRuntime(workspace=ws, env=build_env(os.environ, home=home), shell="/bin/sh")


def _sandbox(ws: Path, private: Path) -> Sandbox | None:
    host = host_facts()
    if not (host.namespaces and host.landlock_abi >= 1):
        return None
    prof = SandboxProfile(
        hidden=defaults.HIDDEN, read_only=defaults.READ_ONLY, limits=SandboxLimits()
    )
    return Sandbox(prof, workspace=ws, private_dir=private)


def _by_name(ws: Path, calls: int) -> int:
    """The old way: confine, then open the resolved path by name."""
    hits = 0
    for _ in range(calls):
        d = confine(ws, "sub/f.txt", op="read")
        if d.resolved is None:
            continue
        try:
            fd = os.open(d.resolved, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            hits += b"OUTSIDE" in f.read()
    return hits


def _cost(rt: ToolRuntime, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        dispatch("read_file", {"path": "sub/f.txt"}, rt)
        times.append(time.perf_counter() - t)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10_000)
    args = ap.parse_args()
    modes = ["openat2", "walk"] if beneath._openat2() is not None else ["walk"]
    total_escapes = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(os.path.realpath(tmp))
        for mode in modes:
            beneath._OPENAT2 = None if mode == "openat2" else False
            ws, out = layout(root / mode)
            sb = _sandbox(ws, root / f"{mode}-private")
            rt = _runtime(ws, root / f"{mode}-home")
            try:
                with swapper(ws, out, sb):
                    old_hits = _by_name(ws, args.calls)
                    tallies = race(rt, out, args.calls)
            finally:
                if sb is not None:
                    sb.close()
            where = "contained swapper" if sb is not None else "uncontained swapper"
            print(f"{mode} ({where}):")
            for name, t in tallies.items():
                total_escapes += len(t.escapes)
                print(
                    f"  {name:7} {t.calls:6} calls  {t.refused:6} refused  {len(t.escapes)} escapes"
                )
            print(
                f"  reference: opening by name read the outside file {old_hits}/{args.calls} times"
            )
        beneath._OPENAT2 = None
        ws, _out = layout(root / "cost")
        rt = _runtime(ws, root / "cost-home")
        rounds = min(args.calls, 2000)
        ref = []
        for _ in range(rounds):
            t = time.perf_counter()
            d = confine(ws, "sub/f.txt", op="read")
            assert d.resolved is not None
            with open(d.resolved, "rb") as f:
                f.read()
            ref.append(time.perf_counter() - t)
        print(f"cost of one read_file ({rounds} calls, no swapper):")
        ref_ms = 1000 * statistics.median(ref)
        print(f"  reference (confine + open by name): {ref_ms:.3f} ms")
        for mode in modes:
            beneath._OPENAT2 = None if mode == "openat2" else False
            ms = 1000 * statistics.median(_cost(rt, rounds))
            print(f"  read_file, {mode:7}: {ms:.3f} ms ({ms / ref_ms:.2f}x the reference)")
    print(f"escapes: {total_escapes}")
    return 1 if total_escapes else 0


if __name__ == "__main__":
    raise SystemExit(main())
