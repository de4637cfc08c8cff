"""Cold start-up time of ``charter validate``, with the interpreter's own floor.

Usage::

    python bench/validate_startup.py [PATH] [--runs N] [--top K] [--budget-ms MS] [--enforce]

Each run is a fresh process (so nothing is cached in the interpreter; the OS
file cache is warm after one unmeasured run of each command). The commands
are interleaved so a machine that slows down mid-benchmark affects them all
alike. Printed: the median and spread of each command, then the imports that
cost most according to ``python -X importtime``.

Reference points measured in the same run: ``python -c pass`` (the interpreter
alone), ``python -c "import pydantic"`` (the heaviest library the validate
path needs) and a program that defines and uses one pydantic model the way
Charter does (plugins off, frozen, strict, with a field validator): what any
pydantic-based linter pays before its own code runs. Then, in one process,
the first validate (loading included) against a second one of the same
project (the work alone).

The console script has two start-up shortcuts (a stand-in for pydantic's
plugin loader, and ``os._exit`` once a read-only verb's output is flushed).
Each is also measured removed, against a reference program without them
(plain pydantic, normal exit), and the ratio of validate to the one-model
program is printed for both pairs: issue 17 asks for at most 2.0x.
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
BUDGET_MS = 150.0


# Charter's own use of pydantic, reduced to one model: plugin discovery off
# (as the console script does), a frozen strict model with a validator, one
# validation, and the same fast exit.
_ONE_MODEL = """
import os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from charter.compiler.cli import _install_plugin_loader_stand_in
_install_plugin_loader_stand_in()
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
sys.stdout.flush()
os._exit(0)
"""

# The same model with neither of Charter's shortcuts: what a plain
# pydantic program pays (plugins still off, as Charter always turns them off).
_ONE_MODEL_PLAIN = _ONE_MODEL.replace(
    "from charter.compiler.cli import _install_plugin_loader_stand_in\n"
    "_install_plugin_loader_stand_in()\n",
    "",
).replace("os._exit(0)", "sys.exit(0)")

# The console script's entry() with each shortcut switchable:
# argv[1] the plugin-loader stand-in, argv[2] os._exit, then the verb.
_LAUNCH = """
import os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
if sys.argv[1] == "1":
    from charter.compiler.cli import _install_plugin_loader_stand_in
    _install_plugin_loader_stand_in()
from charter.compiler.cli import main
code = main(sys.argv[3:])
if sys.argv[2] == "1":
    sys.stdout.flush()
    os._exit(code)
sys.exit(code)
"""

_SPLIT = """
import contextlib, io, os, sys, time
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from charter.compiler.cli import _install_plugin_loader_stand_in
_install_plugin_loader_stand_in()
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", default=DEFAULT_PATH, help="project to validate")
    parser.add_argument("--runs", type=int, default=15, help="measured runs per command")
    parser.add_argument("--top", type=int, default=12, help="how many import costs to list")
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure")
    parser.add_argument("--budget-ms", type=float, default=BUDGET_MS, help="target median")
    parser.add_argument(
        "--enforce", action="store_true", help="exit 1 when the median is over the budget"
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
        "one pydantic model, used": ([python, "-c", _ONE_MODEL], frozenset({0})),
        # 1 means findings, which is still a complete validate run.
        f"charter validate {path}": (validate, frozenset({0, 1})),
        "one pydantic model, plain": ([python, "-c", _ONE_MODEL_PLAIN], frozenset({0})),
    }
    verb = ["validate", "--format", "concise", str(path)]
    for stand_in, fast_exit in (("0", "1"), ("1", "0"), ("0", "0")):
        label = "validate, " + ", ".join(
            [
                "stand-in" if stand_in == "1" else "no stand-in",
                "os._exit" if fast_exit == "1" else "normal exit",
            ]
        )
        launch = [python, "-c", _LAUNCH, stand_in, fast_exit, *verb]
        commands[label] = (launch, frozenset({0, 1}))
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
    median = statistics.median(samples[f"charter validate {path}"])
    floor = statistics.median(samples["python -c pass"])
    verdict = "within" if median <= args.budget_ms else "OVER"
    print(
        f"  validate median {median:.1f} ms ({median - floor:.1f} ms above the bare interpreter):"
        f" {verdict} the {args.budget_ms:.0f} ms budget"
    )

    for kind, table in (("wall", samples), ("cpu", cpu)):
        medians = {label: statistics.median(times) for label, times in table.items()}
        shipped = medians[f"charter validate {path}"] / medians["one pydantic model, used"]
        bare = medians["validate, no stand-in, normal exit"] / medians["one pydantic model, plain"]
        print(
            f"  ratio validate / one model ({kind}): {shipped:.2f}x as shipped (both with the"
            f" shortcuts), {bare:.2f}x without them (target: at most 2.0x)"
        )

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
    return 1 if args.enforce and median > args.budget_ms else 0


if __name__ == "__main__":
    sys.exit(main())
