"""A racing neighbour for the file tools: a process that keeps swapping a
workspace directory for a symlink to an outside folder and back, as a
contained background task could. Shared by the race test and
``bench/file_tool_race.py``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from charter.runtime.tools.registry import ToolRuntime, dispatch

# Perl, because it swaps with system calls and no process per step (a shell
# loop of mv and ln would swap a hundred times slower and rarely race).
SWAPPER = (
    '$| = 1; my ($out) = @ARGV; print "up\\n";'
    "while (1) { rename 'sub', 'sub.real'; symlink $out, 'sub'; "
    "unlink 'sub'; rename 'sub.real', 'sub'; }"
)


@dataclass
class Tally:
    calls: int = 0
    refused: int = 0
    escapes: list[str] = field(default_factory=list)


def layout(root: Path) -> tuple[Path, Path]:
    ws, out = root / "ws", root / "out"
    (ws / "sub").mkdir(parents=True)
    out.mkdir()
    (ws / "sub" / "f.txt").write_text("inside\n")
    (out / "f.txt").write_text("OUTSIDE\n")
    return ws, out


@contextlib.contextmanager
def swapper(ws: Path, out: Path, sandbox: Any | None) -> Iterator[None]:
    argv = ["/usr/bin/perl", "-e", SWAPPER, str(out)]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ws)}
    launched = None
    if sandbox is not None:
        launched = sandbox.popen(argv, cwd=ws, env=env)
        proc = launched.proc
    else:
        proc = subprocess.Popen(
            argv, cwd=ws, env=env, stdout=subprocess.PIPE, start_new_session=True
        )
    try:
        stdout = proc.stdout
        assert stdout is not None and stdout.readline() == b"up\n"
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if launched is not None:
            launched.close()
        with contextlib.suppress(OSError):
            if (ws / "sub").is_symlink():
                (ws / "sub").unlink()
        with contextlib.suppress(OSError):
            (ws / "sub.real").rename(ws / "sub")


def race(rt: ToolRuntime, out: Path, calls: int) -> dict[str, Tally]:
    """``calls`` of each file tool through the real dispatch; every result
    that shows or leaves anything outside counts as an escape."""
    tallies = {name: Tally() for name in ("read", "write", "edit", "list", "search")}

    def tally(name: str, run: Callable[[int], Any], escaped: Callable[[Any, int], bool]) -> None:
        t = tallies[name]
        for i in range(calls):
            res = run(i)
            t.calls += 1
            if not res.ok:
                t.refused += 1
            if escaped(res, i):
                t.escapes.append(f"{name} #{i}: {res.content[:80]}")

    tally(
        "read",
        lambda i: dispatch("read_file", {"path": "sub/f.txt"}, rt),
        lambda res, i: "OUTSIDE" in res.content,
    )
    tally(
        "edit",
        lambda i: dispatch(
            "edit_file", {"path": "sub/f.txt", "old_str": "side", "new_str": "side"}, rt
        ),
        lambda res, i: (out / "f.txt").read_text() != "OUTSIDE\n",
    )
    tally(
        "list",
        lambda i: dispatch("list_dir", {"path": "sub"}, rt),
        lambda res, i: any(p.name in res.content for p in out.iterdir() if p.name != "f.txt"),
    )
    tally(
        "search",
        lambda i: dispatch("search_files", {"query": "OUTSIDE", "path": "sub"}, rt),
        lambda res, i: "sub/f.txt:1: OUTSIDE" in res.content,
    )
    # Writes last: a write that finds the folder mid-swap creates it anew
    # (write_file makes missing parents), which ends the swapper's cycle.
    tally(
        "write",
        # one name, written again and again: a folder that grows by a file a
        # call would make every later listing and search slower and slower
        lambda i: dispatch("write_file", {"path": "sub/w.txt", "content": str(i)}, rt),
        lambda res, i: (out / "w.txt").exists(),
    )
    # A write that reached outside under another name would show here.
    for name in os.listdir(out):
        if name != "f.txt":
            tallies["write"].escapes.append(f"left outside: {name}")
    return tallies
