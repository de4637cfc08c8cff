"""What the `charter serve` benchmarks share: a workspace and the compiled
`coder` plan, the server started on a free loopback port and stopped by its
pid, Claude Code PreToolUse events, and percentiles.

The scripts run as `python bench/<name>.py`, so this folder is on sys.path
and they import this module as `_serve`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["REPO", "Bench", "hook_events", "pct", "prepare", "start", "stop", "wait_port"]

REPO = Path(__file__).resolve().parent.parent


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank); 0.0 when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def hook_events(ws: Path, more: list[tuple[str, dict[str, Any]]]) -> list[bytes]:
    """Claude Code PreToolUse events in ``ws``: a read, a read-only Bash command
    and a write outside the workspace, then a bench's own ``(tool_name,
    tool_input)`` pairs."""
    base = {"session_id": "bench", "cwd": str(ws), "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_use_id": "toolu_bench"}  # fmt: skip
    calls = [
        ("Read", {"file_path": str(ws / "README.md")}),
        ("Bash", {"command": "git status --short", "description": "status"}),
        ("Write", {"file_path": "/etc/motd", "content": "x"}),
        *more,
    ]
    return [json.dumps({**base, "tool_name": t, "tool_input": i}).encode() for t, i in calls]


@dataclass(frozen=True)
class Bench:
    """A temporary folder with a workspace ``ws`` and the compiled ``plan``."""

    work: Path
    ws: Path
    plan: Path
    env: dict[str, str]
    charter: list[str]


def prepare(prefix: str, python: str = sys.executable) -> Bench:
    """Make the folder and compile the shipped `coder` blueprint with ``python``."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiling every module would dominate
    work = Path(tempfile.mkdtemp(prefix=prefix))
    ws = work / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("bench\n")
    plan = work / "plan.json"
    charter = [python, "-m", "charter.compiler"]
    subprocess.run([*charter, "compile", str(REPO / "blueprints" / "coder"), "--no-user-config",
                    "-o", str(plan)], check=True, capture_output=True, env=env)  # fmt: skip
    return Bench(work, ws, plan, env, charter)


def start(
    b: Bench, extra: list[str], *, stderr: int = subprocess.DEVNULL, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """`charter serve` for the coder's implement stage on 127.0.0.1 port 0."""
    return subprocess.Popen(
        [*b.charter, "serve", str(b.plan), "--agent", "coder", "--stage", "implement",
         "--listen", "127.0.0.1:0", "--port-file", str(b.work / "port"),
         "--log", str(b.work / "decisions.jsonl"), *extra],
        env=b.env, stderr=stderr, cwd=cwd,
    )  # fmt: skip


def wait_port(b: Bench, server: subprocess.Popen[bytes], tries: int) -> int | None:
    """The server's port once it has written it (``tries`` x 50 ms at most);
    None, after saying why on stderr, when the server exited first."""
    port_file = b.work / "port"
    for _ in range(tries):
        if port_file.exists() and port_file.read_text().strip():
            break
        if server.poll() is not None:
            if server.stderr is not None:
                print(server.stderr.read().decode(), file=sys.stderr)
            else:
                print("charter serve did not start", file=sys.stderr)
            return None
        time.sleep(0.05)
    return int(port_file.read_text())


def stop(b: Bench, server: subprocess.Popen[bytes], wait: float) -> None:
    """Stop the server by its pid (killed after ``wait`` seconds) and remove the folder."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(wait)
    except subprocess.TimeoutExpired:
        server.kill()
    shutil.rmtree(b.work, ignore_errors=True)
