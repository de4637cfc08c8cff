"""Running one command as an owned process tree with bounded output.

The command starts in a fresh session (POSIX) or process group (Windows), so
everything it spawns can be stopped together. Its two output pipes are read
continuously by threads: at most ``output_cap`` bytes of each are kept and
the rest is counted and dropped, so a command that prints gigabytes neither
fills the runtime's memory nor blocks on a full pipe (which would turn a
truncated answer into a timeout).

On timeout or cancellation the whole group gets SIGTERM, then SIGKILL after a
short grace period. Processes still in the group when the command itself
exits are stopped the same way: a foreground command may not leave work
running behind it. (A process that deliberately leaves the group with
``setsid`` is beyond what a process group can hold; only OS isolation such as
cgroups or a Job Object could.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from charter.runtime.redact import FAILED_MARKER

__all__ = ["DEFAULT_OUTPUT_CAP", "GRACE_S", "ProcResult", "group_running", "run_command"]

DEFAULT_OUTPUT_CAP = 1_000_000
GRACE_S = 2.0
_CHUNK = 65536
_POLL_S = 0.02
_IS_WINDOWS = sys.platform == "win32"


@dataclass(frozen=True, slots=True)
class ProcResult:
    exit_code: int | None  # None when the command could not start
    stdout: str  # kept text, redacted, with a closing [truncated] line when cut
    stderr: str
    stdout_bytes: int  # how much the command really wrote
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    cancelled: bool
    duration_s: float
    pgid: int | None = None
    error: str | None = None  # why the command could not start

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not (self.timed_out or self.cancelled or self.error)


class _Drain:
    """Read one pipe to its end, keeping at most ``cap`` bytes."""

    def __init__(self, stream: object, cap: int) -> None:
        self._fd = stream.fileno()  # type: ignore[attr-defined]
        self._stream = stream
        self._cap = cap
        self.kept = bytearray()
        self.total = 0
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = os.read(self._fd, _CHUNK)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self._cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except OSError as exc:
            self.error = str(exc)
        finally:
            try:
                self._stream.close()  # type: ignore[attr-defined]
            except OSError:
                pass


def group_running(pgid: int) -> bool:
    """Whether any process of the group still runs. Zombies do not count: they
    run nothing, and whether they are reaped soon depends on the init process
    of the machine, not on us."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists but is not ours to signal: treat as alive
    proc_root = Path("/proc")
    if not proc_root.is_dir():
        return True
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_tree(proc: subprocess.Popen[bytes], pgid: int | None) -> None:
    """TERM the whole tree, give it a short grace period, then KILL it."""
    if _IS_WINDOWS:  # pragma: no cover - exercised on Windows only
        subprocess.run(
            ["taskkill", "/F", "/T", "/PID", str(proc.pid)],
            capture_output=True,
            check=False,
        )
        proc.wait()
        return
    assert pgid is not None
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader so a zombie does not look alive
        if not group_running(pgid):
            break
        time.sleep(_POLL_S)
    else:
        _signal_group(pgid, signal.SIGKILL)
    proc.wait()
    # SIGKILL is delivered asynchronously; wait (briefly) until the group is empty
    # so the caller never returns while a member still runs.
    end = time.monotonic() + GRACE_S
    while group_running(pgid) and time.monotonic() < end:
        _signal_group(pgid, signal.SIGKILL)
        time.sleep(_POLL_S)


def _text(drain: _Drain, name: str, cap: int, redact: Callable[[str], str] | None) -> str:
    text = drain.kept.decode("utf-8", errors="replace")
    truncated = drain.total > cap
    if redact is not None:
        try:
            text = redact(text)
        except Exception:  # noqa: BLE001 - unredacted text must never come back
            return FAILED_MARKER
    if truncated:
        if text and not text.endswith("\n"):
            text += "\n"
        text += (
            f"[truncated] {name}: kept the first {cap} bytes; the command wrote {drain.total} bytes"
        )
    if drain.error:
        text += f"\n[{name} read error: {drain.error}]"
    return text


def run_command(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    cancel: threading.Event | None = None,
    redact: Callable[[str], str] | None = None,
) -> ProcResult:
    """Run ``argv`` to completion, timeout or cancellation; never raises for
    the command's own failures (they are in the result)."""
    start = time.monotonic()
    kwargs: dict[str, object] = {}
    if _IS_WINDOWS:  # pragma: no cover
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv comes from the shell tool, after the gates
            list(argv),
            cwd=str(cwd),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **kwargs,  # type: ignore[call-overload]
        )
    except (OSError, ValueError) as exc:
        return ProcResult(
            exit_code=None,
            stdout="",
            stderr="",
            stdout_bytes=0,
            stderr_bytes=0,
            stdout_truncated=False,
            stderr_truncated=False,
            timed_out=False,
            cancelled=False,
            duration_s=time.monotonic() - start,
            error=f"could not start {argv[0] if argv else '(nothing)'}: {exc}",
        )
    pgid = None if _IS_WINDOWS else proc.pid  # a new session's id is its leader's pid
    out = _Drain(proc.stdout, output_cap)
    err = _Drain(proc.stderr, output_cap)
    deadline = start + timeout_s
    timed_out = cancelled = False
    try:
        while True:
            try:
                proc.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
    finally:
        # Also on normal exit: whatever the command left running in its group
        # (a backgrounded child holding the pipes open) is stopped with it.
        if timed_out or cancelled or _IS_WINDOWS or group_running(pgid or proc.pid):
            _stop_tree(proc, pgid)
    for drain in (out, err):
        drain.thread.join(timeout=GRACE_S)
    exit_code = proc.returncode
    return ProcResult(
        exit_code=exit_code,
        stdout=_text(out, "stdout", output_cap, redact),
        stderr=_text(err, "stderr", output_cap, redact),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        stdout_truncated=out.total > output_cap,
        stderr_truncated=err.total > output_cap,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=time.monotonic() - start,
        pgid=pgid,
    )
