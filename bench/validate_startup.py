"""Cold start-up time of ``charter validate``, against a one-model pydantic program.

Usage::

    python bench/validate_startup.py [PATH] [--runs N] [--top K] [--instructions] [--enforce]

Each run is a fresh process (so nothing is cached in the interpreter; the OS
file cache is warm after one unmeasured run of each command). The commands
are interleaved so a machine that slows down mid-benchmark affects them all
alike. Printed: the median and spread of each command, then the imports that
cost most according to ``python -X importtime``.

Reference points measured in the same run: ``python -c pass`` (the interpreter
alone), ``python -c "import pydantic"`` (the heaviest library the validate
path needs) and a program that defines and uses one pydantic model the way
Charter does (plugins off, frozen, strict, with a field validator): what any
pydantic-based linter pays before its own code runs, ending with a normal
exit. Issue 17 asks for the ratio of validate (the console script, as
shipped) to that program to be at most 2.0x; it is printed in wall time and
in CPU time (user + system of the child, the steadier figure when other
processes hold the CPUs). The console script ends validate with os._exit
once its output is flushed, so two more ratios are printed beside it: against
the one-model program ending the same way (the stricter reference), and
validate with a normal interpreter exit. Then, in one process, the first
validate (loading included) against a second one of the same project (the
work alone).

``--instructions`` also counts both programs' instructions under valgrind's
callgrind, which no other load on the machine changes, and prints that ratio.
``--enforce`` exits 1 when the wall-time ratio is over 2.0x.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

DEFAULT_PATH = "blueprints/coder"
TARGET_RATIO = 2.0


# Charter's own use of pydantic, reduced to one model: plugin discovery off
# (as the console script does), a frozen strict model with a validator, one
# validation, and a normal exit.
_ONE_MODEL = """
import os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from typing import Literal
from pydantic import BaseModel, ConfigDict, Field, field_validator
class M(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
    name: str = Field(min_length=1)
    mode: Literal["a", "b"] = "a"
    tags: tuple[str, ...] = ()
    @field_validator("name")
    @classmethod
    def _check(cls, v: str) -> str:
        return v
M.model_validate({"name": "x"})
sys.exit(0)
"""

# The same program ending as the console script ends validate (output
# flushed, then os._exit): the stricter reference.
_ONE_MODEL_FAST_EXIT = _ONE_MODEL.replace("sys.exit(0)", "sys.stdout.flush()\nos._exit(0)")

# The console script's verb run with a normal interpreter exit instead.
_NORMAL_EXIT = """
import os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from charter.compiler.cli import main
sys.exit(main(sys.argv[1:]))
"""

_SPLIT = """
import contextlib, io, os, sys, time
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
t0 = time.perf_counter()
from charter.compiler.cli import main
argv = ["validate", "--format", "concise", sys.argv[1]]
with contextlib.redirect_stdout(io.StringIO()):
    main(argv)
    t1 = time.perf_counter()
    main(argv)
    t2 = time.perf_counter()
print((t1 - t0) * 1000, (t2 - t1) * 1000)
"""


def _charter_command(python: str) -> list[str]:
    # The console script is what users run; fall back to the module when the
    # script is not next to this interpreter.
    script = Path(python).with_name("charter")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("charter")
    if found and Path(found).resolve().parent == Path(python).resolve().parent:
        return [found]
    return [python, "-m", "charter.compiler"]


def _check_ready(python: str, path: Path) -> str | None:
    if not path.exists():
        return f"{path}: no such file or directory (pass the project to validate)"
    probe = subprocess.run(
        [python, "-c", "from charter.compiler.cli import VERBS; print('validate' in VERBS)"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"cannot import charter with {python}:\n{probe.stderr.strip()}"
    if probe.stdout.strip() != "True":
        return "the 'validate' verb is not registered in charter.compiler.cli.VERBS yet"
    return None


def _time_once(cmd: Sequence[str], *, ok: frozenset[int]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run, in ms. On a shared
    machine the CPU time is the steadier of the two: waiting for a CPU
    another process holds adds to the wall time only."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if proc.returncode not in ok:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.strip()[-2000:]}"
        )
    return elapsed, cpu


def _import_costs(
    cmd: Sequence[str], top: int
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(top-level packages by cumulative time, modules by self time), in µs."""
    proc = subprocess.run([*cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    roots: list[tuple[int, str]] = []
    selfs: list[tuple[int, str]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        try:
            self_us, cumulative_us, name = line[len("import time:") :].split("|", 2)
            own, total = int(self_us), int(cumulative_us)
        except ValueError:
            continue  # the header line
        selfs.append((own, name.strip()))
        # importtime indents nested imports by two spaces per level after one
        # leading space; an unindented name was imported by the program itself.
        if not name.startswith("   "):
            roots.append((total, name.strip()))
    roots.sort(reverse=True)
    selfs.sort(reverse=True)
    return roots[:top], selfs[:top]


def _instructions(cmd: Sequence[str]) -> int | None:
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None


def _instruction_ratio(reference: Sequence[str], validate: Sequence[str]) -> str:
    """Both programs' instruction counts under callgrind: the same figure
    whatever else the machine is doing."""
    if shutil.which("valgrind") is None:
        return "instructions: valgrind is not installed; skipped"
    ref, val = _instructions(reference), _instructions(validate)
    if not ref or not val:
        return "instructions: callgrind printed no total; skipped"
    return (
        f"instructions (callgrind): validate {val / 1e6:,.0f} M, one model {ref / 1e6:,.0f} M:"
        f" ratio {val / ref:.2f}x"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", default=DEFAULT_PATH, help="project to validate")
    parser.add_argument("--runs", type=int, default=15, help="measured runs per command")
    parser.add_argument("--top", type=int, default=12, help="how many import costs to list")
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions with callgrind"
    )
    parser.add_argument(
        "--enforce", action="store_true", help=f"exit 1 when the ratio is over {TARGET_RATIO}x"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    # An installed Charter starts from compiled bytecode. With
    # PYTHONDONTWRITEBYTECODE set (as on some development machines) every
    # run would compile each module again, timing the compiler instead: the
    # unmeasured first run below writes the bytecode.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    python = args.python
    path = Path(args.path)
    problem = _check_ready(python, path)
    if problem is not None:
        print(f"validate_startup: {problem}", file=sys.stderr)
        return 2

    charter = _charter_command(python)
    validate = [*charter, "validate", "--format", "concise", str(path)]
    commands = {
        "python -c pass": ([python, "-c", "pass"], frozenset({0})),
        'python -c "import pydantic"': ([python, "-c", "import pydantic"], frozenset({0})),
        "one pydantic model": ([python, "-c", _ONE_MODEL], frozenset({0})),
        # 1 means findings, which is still a complete validate run.
        f"charter validate {path}": (validate, frozenset({0, 1})),
        "one pydantic model, os._exit": ([python, "-c", _ONE_MODEL_FAST_EXIT], frozenset({0})),
        "validate, normal exit": (
            [python, "-c", _NORMAL_EXIT, "validate", "--format", "concise", str(path)],
            frozenset({0, 1}),
        ),
    }
    samples: dict[str, list[float]] = {label: [] for label in commands}
    cpu: dict[str, list[float]] = {label: [] for label in commands}
    try:
        for cmd, ok in commands.values():
            _time_once(cmd, ok=ok)  # warm the file cache; not measured
        for _ in range(args.runs):
            for label, (cmd, ok) in commands.items():
                wall, used = _time_once(cmd, ok=ok)
                samples[label].append(wall)
                cpu[label].append(used)
    except RuntimeError as exc:
        print(f"validate_startup: {exc}", file=sys.stderr)
        return 2

    print(f"cold wall time over {args.runs} runs each ({' '.join(charter)}, {python})")
    width = max(len(label) for label in samples)
    for label, times in samples.items():
        print(
            f"  {label:<{width}}  median {statistics.median(times):7.1f} ms"
            f"   min {min(times):7.1f}   max {max(times):7.1f}"
            f"   cpu median {statistics.median(cpu[label]):7.1f}"
        )
    floor = statistics.median(samples["python -c pass"])
    ratio = 0.0
    for kind, table in (("wall", samples), ("cpu", cpu)):
        medians = {label: statistics.median(times) for label, times in table.items()}
        validate_ms = medians[f"charter validate {path}"]
        reference_ms = medians["one pydantic model"]
        if kind == "wall":
            ratio = validate_ms / reference_ms
        print(
            f"  ratio validate / one model ({kind}): {validate_ms / reference_ms:.2f}x"
            f" (target: at most {TARGET_RATIO}x); above the bare interpreter"
            f" {validate_ms - floor:.1f} ms against {reference_ms - floor:.1f} ms"
        )
        print(
            f"    against the one-model program ending with os._exit too:"
            f" {validate_ms / medians['one pydantic model, os._exit']:.2f}x;"
            f" validate with a normal exit:"
            f" {medians['validate, normal exit'] / reference_ms:.2f}x"
        )
    if args.instructions:
        counted = _instruction_ratio([python, "-c", _ONE_MODEL], validate)
        print(f"  {counted}")

    split = subprocess.run(
        [python, "-c", _SPLIT, str(path)], capture_output=True, text=True, check=False
    )
    if split.returncode == 0:
        first, second = (float(x) for x in split.stdout.split())
        print(
            f"  in one process: first validate {first:.1f} ms, the same again {second:.1f} ms"
            " (the difference is loading code and building models)"
        )

    profiled = [python, "-X", "importtime", "-m", "charter.compiler", "validate", str(path)]
    roots, selfs = _import_costs(profiled, args.top)
    print("\ntop imports by cumulative time (imported directly by the program), µs:")
    for total, name in roots:
        print(f"  {total:9d}  {name}")
    print("\ntop modules by own import time, µs:")
    for own, name in selfs:
        print(f"  {own:9d}  {name}")
    return 1 if args.enforce and ratio > TARGET_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
