"""Running one command as an owned process tree with bounded output.

The command starts in a fresh session (POSIX) or process group (Windows), so
everything it spawns can be stopped together. Its two output pipes are read
continuously by threads into a :class:`Capture` each, which keeps a bounded
head (bytes), a bounded tail (characters) or both, and counts the rest: a
command that prints gigabytes neither fills the runtime's memory nor blocks
on a full pipe (which would turn a truncated answer into a timeout).

On timeout or cancellation the whole group gets SIGTERM, then SIGKILL after a
short grace period. Processes still in the group when the command itself
exits are stopped the same way: a foreground command may not leave work
running behind it. A child that turns on job control (``set -m``) puts its
jobs in process groups of their own, but they stay in the command's session,
so where ``/proc`` shows sessions every live member of the session is
signalled too. (A process that deliberately starts a new session with
``setsid`` is beyond what a session can hold; only OS isolation such as
cgroups or a Job Object could.)

Signalling by number is only safe while the number still means our process.
Every spawn is recorded in a :class:`SpawnRecord` (PID, group, platform, a
unique spawn id and the OS's start marker for the PID), and:

* the leader is not reaped until its group has been dealt with: its exit is
  observed with ``waitid(WNOWAIT)``, so its zombie keeps the PID, and with it
  the group id, from being handed to another process;
* before every group signal the start marker is read again; if it differs
  (someone else reaped the leader and the PID was reused), no signal is sent
  and the result says why.

With ``sandbox`` the command starts inside that OS sandbox
(:mod:`charter.runtime.sandbox`): everything else here is the same (the
session is still signalled, and :func:`kill_running` still reaches it), a
sandbox that cannot be built is an error result, never an uncontained run,
and where the sandbox has a pid namespace the kernel also ends what left the
session with ``setsid`` once the command ends.

A caller that records the output itself (a background task writing its
durable log) passes ``on_output``: it gets every chunk as it is read, after
the capture has counted it. If it raises, or a pipe cannot be read, the
output can no longer be recorded completely, so the tree is stopped as on
cancellation; the pipes are still drained to their end (a child is never
left blocked on a full pipe), and the result names the failure.
"""

from __future__ import annotations

import codecs
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from charter.runtime.redact import FAILED_MARKER

if TYPE_CHECKING:
    from charter.runtime.sandbox.launcher import Sandbox

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "GRACE_S",
    "Capture",
    "OutputSink",
    "ProcResult",
    "SpawnRecord",
    "group_running",
    "kill_running",
    "run_command",
    "session_members",
    "start_marker",
]

DEFAULT_OUTPUT_CAP = 1_000_000
GRACE_S = 2.0
_CHUNK = 65536
_POLL_S = 0.02
_IS_WINDOWS = sys.platform == "win32"
# Peeking at a child's exit without reaping it (POSIX waitid with WNOWAIT).
_CAN_PEEK = not _IS_WINDOWS and hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
# Whether group membership can be read per process (and zombies told apart).
_HAS_PROC = Path("/proc/self/stat").exists()
_SPACE = re.compile(r"\s")


class _Process(Protocol):
    """What run_command needs of a started process: a ``Popen``, or a
    command the sandbox's launch helper started (also our child)."""

    pid: int
    returncode: int | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


# -- process identity -----------------------------------------------------------------------


def start_marker(pid: int) -> str | None:
    """When the OS started ``pid``, as an opaque string; None when unknown.

    On Linux this is field 22 (``starttime``, clock ticks after boot) of
    ``/proc/<pid>/stat``. A zombie keeps its stat file, so the marker stays
    readable until the process is reaped; a process that later gets the same
    PID has a different start time. Other platforms have no cheap equivalent,
    so they get None and rely on the leader not having been reaped.
    """
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # Field 2 is the command name in parentheses and may itself hold spaces
    # or ")", so fields are counted from the last ")": index 0 there is field 3.
    _, sep, rest = raw.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 20 or not fields[19].isdigit():
        return None
    return fields[19]


@dataclass(frozen=True, slots=True)
class SpawnRecord:
    """What the runtime knows about a process it started: enough to refuse to
    signal a PID that has since been given to someone else."""

    spawn_id: str  # unique per spawn, never reused (a PID is)
    pid: int
    pgid: int | None  # None on Windows
    platform: str  # sys.platform at spawn time
    start_marker: str | None  # see start_marker(); None when the OS offers none

    def as_dict(self) -> dict[str, object]:
        return {
            "spawn_id": self.spawn_id,
            "pid": self.pid,
            "pgid": self.pgid,
            "platform": self.platform,
            "start_marker": self.start_marker,
        }


def _still_ours(spawn: SpawnRecord, proc: _Process) -> bool:
    """Whether ``spawn.pid`` (and so the group it leads) is still the process
    we started. With a marker the OS is asked again; without one, only a
    leader we have not reaped ourselves is trusted (its zombie holds the PID)."""
    if spawn.start_marker is not None:
        return start_marker(spawn.pid) == spawn.start_marker
    return proc.returncode is None


# -- bounded capture ------------------------------------------------------------------------


class Capture:
    """A bounded record of one output stream.

    Keeps at most ``head_bytes`` bytes of the stream's start and at most
    ``tail_chars`` characters of its end (after the head, so the two never
    overlap), and counts every byte and character. Nothing else is held: the
    stream is decoded incrementally, a chunk at a time, and text that falls
    out of the tail window is dropped at once. At least one limit is
    required, since a capture without one would hold everything.
    """

    def __init__(self, *, head_bytes: int | None = None, tail_chars: int | None = None) -> None:
        if head_bytes is None and tail_chars is None:
            raise ValueError("a capture needs a head or a tail limit")
        if (head_bytes is not None and head_bytes < 0) or (
            tail_chars is not None and tail_chars < 0
        ):
            raise ValueError("capture limits cannot be negative")
        self.head_bytes = head_bytes
        self.tail_chars = tail_chars
        self.head = bytearray()
        self.tail = ""
        self.total_bytes = 0
        self.total_chars = 0
        self.after_head_chars = 0  # characters that came after the head
        # Whether the tail starts a word (nothing dropped, or whitespace was
        # the last character dropped before it).
        self.tail_at_boundary = True
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            self.total_bytes += len(chunk)
            rest = chunk
            if self.head_bytes is not None:
                room = self.head_bytes - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    # Decoded only to count: the head is kept as bytes.
                    self.total_chars += len(self._decoder.decode(chunk[:room]))
                    rest = chunk[room:]
            if rest:
                self._after_head(self._decoder.decode(rest))

    def finish(self) -> None:
        """The stream ended: count what the decoder still held back."""
        with self._lock:
            self._after_head(self._decoder.decode(b"", final=True))

    def _after_head(self, text: str) -> None:
        self.total_chars += len(text)
        self.after_head_chars += len(text)
        cap = self.tail_chars
        if cap is None or not text:
            return
        joined = self.tail + text
        if len(joined) > cap:
            cut = len(joined) - cap
            self.tail_at_boundary = joined[cut - 1].isspace()
            joined = joined[cut:] if cap else ""
        self.tail = joined

    @property
    def truncated(self) -> bool:
        """Whether any of the stream is missing from what is kept."""
        with self._lock:
            if self.tail_chars is None:
                return self.head_bytes is not None and self.total_bytes > self.head_bytes
            return self.after_head_chars > len(self.tail)

    def render(
        self, name: str, redact: Callable[[str], str] | None = None, error: str | None = None
    ) -> str:
        """The kept text for a reader, with a line saying what was dropped.

        Head and tail are redacted separately, because the cut between them
        could split a secret. Where the tail was cut inside a word, that
        partial first word is dropped as well (up to the first whitespace):
        a secret split by the cut would leave its end there, which exact-value
        redaction cannot recognise. (A tail that is all one word is dropped
        whole; the truncation line still gives the totals.)
        """
        with self._lock:
            head = self.head.decode("utf-8", errors="replace")
            tail = self.tail
            at_boundary = self.tail_at_boundary
            omitted = self.after_head_chars - len(self.tail)
            total_b, total_c = self.total_bytes, self.total_chars
        parts: list[str] = []
        if self.tail_chars is None:
            # Head only: everything after the head is counted, not kept.
            text = _redacted(head, redact)
            if text == FAILED_MARKER:
                return FAILED_MARKER
            if self.head_bytes is not None and total_b > self.head_bytes:
                if text and not text.endswith("\n"):
                    text += "\n"
                text += (
                    f"[truncated] {name}: kept the first {self.head_bytes} bytes; "
                    f"the command wrote {total_b} bytes"
                )
            parts.append(text)
        else:
            if omitted > 0 and not at_boundary:
                space = _SPACE.search(tail)
                tail = "" if space is None else tail[space.end() :]
            shown_tail = _redacted(tail, redact)
            if self.head_bytes is not None and head:
                shown_head = _redacted(head, redact)
                if FAILED_MARKER in (shown_head, shown_tail):
                    return FAILED_MARKER
                parts.append(shown_head)
                if omitted > 0:
                    if not shown_head.endswith("\n"):
                        parts.append("\n")
                    parts.append(
                        f"[truncated] {name}: the command wrote {total_c} characters "
                        f"({total_b} bytes); kept the first {self.head_bytes} bytes and "
                        f"the last {len(tail)} characters\n"
                    )
            else:
                if shown_tail == FAILED_MARKER:
                    return FAILED_MARKER
                if omitted > 0:
                    parts.append(
                        f"[truncated] {name}: the command wrote {total_c} characters "
                        f"({total_b} bytes); kept the last {len(tail)} characters\n"
                    )
            parts.append(shown_tail)
        text = "".join(parts)
        if error:
            text += f"\n[{name} read error: {error}]"
        return text


def _redacted(text: str, redact: Callable[[str], str] | None) -> str:
    if redact is None or not text:
        return text
    try:
        return redact(text)
    except Exception:  # noqa: BLE001 - unredacted text must never come back
        return FAILED_MARKER


OutputSink = Callable[[str, bytes], None]
"""Called with the stream's name (``stdout``/``stderr``) and each chunk read."""


class _Drain:
    """Read one pipe to its end into a :class:`Capture` (and ``sink``, if any)."""

    def __init__(
        self,
        stream: object,
        capture: Capture,
        *,
        name: str = "",
        sink: OutputSink | None = None,
        failed: threading.Event | None = None,
    ) -> None:
        self._fd = stream.fileno()  # type: ignore[attr-defined]
        self._stream = stream
        self.capture = capture
        self.name = name
        self.error: str | None = None
        # The sink's first failure; it is not called again after one.
        self.sink_error: str | None = None
        self._sink = sink
        self._failed = failed  # set on a read or sink failure, for run_command
        self.thread = threading.Thread(
            target=self._run, name=f"proc-drain-{name or 'pipe'}", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = os.read(self._fd, _CHUNK)
                if not chunk:
                    break
                self.capture.feed(chunk)
                if self._sink is not None and self.sink_error is None:
                    try:
                        self._sink(self.name, chunk)
                    except Exception as exc:  # noqa: BLE001 - reported in the result
                        # Keep reading: the child must not block on a full pipe
                        # while its tree is being stopped.
                        self.sink_error = f"{type(exc).__name__}: {exc}"
                        if self._failed is not None:
                            self._failed.set()
        except OSError as exc:
            self.error = str(exc)
            if self._failed is not None:
                self._failed.set()
        finally:
            self.capture.finish()
            try:
                self._stream.close()  # type: ignore[attr-defined]
            except OSError:
                pass


# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcResult:
    exit_code: int | None  # None when the command could not start (or was not reaped)
    stdout: str  # kept text, redacted, with a [truncated] line when cut
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
    stdout_chars: int = 0  # characters written (undecodable bytes count as one each)
    stderr_chars: int = 0
    spawn: SpawnRecord | None = None
    # Why the process tree was not signalled (its PID no longer named our
    # process); None when it was stopped or needed no stopping.
    stop_error: str | None = None
    # The first failure of run_command's on_output sink (None without one).
    output_error: str | None = None
    # A pipe that could not be read, or was still open when the result was
    # made (its writer could not be stopped); None when both were read to EOF.
    drain_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not (
            self.timed_out
            or self.cancelled
            or self.error
            or self.stop_error
            or self.output_error  # only with on_output: its record is incomplete
        )


# -- the process tree -----------------------------------------------------------------------


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


def session_members(sid: int) -> list[int]:
    """The live processes (zombies excluded) of session ``sid``, from /proc;
    empty where /proc is absent. The command leads its own session, so these
    are its descendants, whatever process group job control moved them to.
    The leader's unreaped zombie keeps ``sid`` from naming anyone else."""
    proc_root = Path("/proc")
    if not _HAS_PROC:
        return []
    found: list[int] = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, session, ...
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _leader_exited(proc: _Process) -> bool:
    """Whether the command's own process has exited, without reaping it, so
    its PID stays reserved while its group may still be signalled."""
    if not _CAN_PEEK:
        return proc.poll() is not None
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # reaped elsewhere (SIGCHLD ignored, another waiter): it is gone
    return info is not None


def _members_running(spawn: SpawnRecord, proc: _Process) -> bool:
    """Whether the group still has a live member. Without /proc a zombie
    leader cannot be told from a live member, so only the leader is known."""
    if _HAS_PROC and spawn.pgid is not None:
        return group_running(spawn.pgid) or bool(session_members(spawn.pgid))
    return not _leader_exited(proc)


def _signal_group(spawn: SpawnRecord, proc: _Process, sig: int) -> bool:
    """Send ``sig`` to the group unless its leader's identity no longer
    holds; False when the signal was withheld for that reason."""
    assert spawn.pgid is not None
    if not _still_ours(spawn, proc):
        return False
    try:
        os.killpg(spawn.pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    # The session's other groups (jobs of a shell with job control on): the
    # command started its own session, whose id is the leader's PID.
    for pid in session_members(spawn.pgid):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return True


def _stale(spawn: SpawnRecord) -> str:
    return (
        f"process {spawn.pid} (spawn {spawn.spawn_id}) no longer has the start marker it was "
        "started with; its PID may belong to another process now, so no signal was sent"
    )


def _deaf_namespace_init(pid: int, sig: int) -> bool:
    """Whether ``pid`` is pid 1 of a pid namespace below ours (a sandboxed
    command: :mod:`charter.runtime.sandbox`) with no handler for ``sig``.
    The kernel drops such a signal to a namespace's init, whoever sends it
    (only SIGKILL and SIGSTOP always arrive), so a plain ``sleep`` started
    there never acts on SIGTERM."""
    if not _HAS_PROC:
        return False
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    nspid: list[str] = []
    caught: int | None = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "NSpid":
            nspid = value.split()
        elif key == "SigCgt":
            try:
                caught = int(value.strip(), 16)
            except ValueError:
                return False
    if len(nspid) < 2 or nspid[-1] != "1" or caught is None:
        return False
    return not caught & (1 << (sig - 1))


def _only_a_deaf_init_left(spawn: SpawnRecord) -> bool:
    """After SIGTERM: whether the only member still running is a leader that
    cannot receive it (see :func:`_deaf_namespace_init`)."""
    if spawn.pgid is None or not _deaf_namespace_init(spawn.pid, signal.SIGTERM):
        return False
    return all(pid == spawn.pid for pid in session_members(spawn.pgid))


def _stop_tree(proc: _Process, spawn: SpawnRecord) -> str | None:
    """TERM the whole tree, give it a short grace period, then KILL it.
    Returns why it stopped short, or None. The leader is left for the caller
    to reap, after the group is empty."""
    if _IS_WINDOWS:  # pragma: no cover - exercised on Windows only
        if not _still_ours(spawn, proc):
            return _stale(spawn)
        subprocess.run(
            ["taskkill", "/F", "/T", "/PID", str(proc.pid)],
            capture_output=True,
            check=False,
        )
        return None
    if not _signal_group(spawn, proc, signal.SIGTERM):
        return _stale(spawn)
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        if not _members_running(spawn, proc):
            break
        if _only_a_deaf_init_left(spawn):
            # The TERM was dropped by the kernel: waiting out the grace
            # period would only delay the KILL that ends the command.
            if not _signal_group(spawn, proc, signal.SIGKILL):
                return _stale(spawn)
            break
        time.sleep(_POLL_S)
    else:
        if not _signal_group(spawn, proc, signal.SIGKILL):
            return _stale(spawn)
    if not _HAS_PROC:
        # Members other than the leader cannot be seen here: make sure of them.
        if not _signal_group(spawn, proc, signal.SIGKILL):
            return _stale(spawn)
        return None
    # SIGKILL is delivered asynchronously; wait (briefly) until the group is empty
    # so the caller never returns while a member still runs.
    assert spawn.pgid is not None
    end = time.monotonic() + GRACE_S
    while _members_running(spawn, proc) and time.monotonic() < end:
        if not _signal_group(spawn, proc, signal.SIGKILL):
            return _stale(spawn)
        time.sleep(_POLL_S)
    return None


# Every tree run_command is still waiting for, so that a process about to
# exit without waiting (an interrupted run that abandoned a stuck tool thread)
# can stop them all first: see kill_running.
_LIVE: dict[str, tuple[_Process, SpawnRecord]] = {}
_LIVE_LOCK = threading.Lock()


def kill_running() -> int:
    """SIGKILL, at once, every process tree a run_command call of this
    process is still waiting for (its group and its session). For a caller
    that is about to exit without waiting for those calls to finish their
    own TERM-then-KILL; they notice and return as usual. Returns how many
    trees were signalled."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    count = 0
    for proc, spawn in live:
        if _IS_WINDOWS:  # pragma: no cover - exercised on Windows only
            if _still_ours(spawn, proc):
                proc.kill()
                count += 1
        elif spawn.pgid is not None and _signal_group(spawn, proc, signal.SIGKILL):
            count += 1
    return count


def _spawn_record(proc: _Process) -> SpawnRecord:
    # Read before anything could reap the child, so the marker is its own.
    marker = start_marker(proc.pid)
    pgid: int | None = None
    if not _IS_WINDOWS:
        try:
            pgid = os.getpgid(proc.pid)
        except OSError:
            pgid = proc.pid  # a new session's id is its leader's pid
    return SpawnRecord(
        spawn_id=uuid.uuid4().hex,
        pid=proc.pid,
        pgid=pgid,
        platform=sys.platform,
        start_marker=marker,
    )


class _SandboxFailed(Exception):
    pass


def _contained(
    sandbox: Sandbox, argv: Sequence[str], *, cwd: str | Path, env: Mapping[str, str]
) -> tuple[_Process, Callable[[], None]]:
    from charter.runtime.sandbox.launcher import SandboxError, SandboxUnavailable

    try:
        launched = sandbox.popen(list(argv), cwd=cwd, env=env)
    except SandboxError as exc:
        if exc.stage == "exec":  # contained, but the program itself would not start
            raise _SandboxFailed(f"could not start {argv[0]}: {exc.message}") from exc
        raise _SandboxFailed(f"the sandbox could not be built ({exc})") from exc
    except SandboxUnavailable as exc:
        raise _SandboxFailed(f"the sandbox is not available: {exc}") from exc
    proc: Any = launched.proc
    return proc, launched.close


def _not_started(start: float, error: str) -> ProcResult:
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
        error=error,
    )


def run_command(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_cap: int | None = DEFAULT_OUTPUT_CAP,
    tail_chars: int | None = None,
    cancel: threading.Event | None = None,
    redact: Callable[[str], str] | None = None,
    on_output: OutputSink | None = None,
    sandbox: Sandbox | None = None,
) -> ProcResult:
    """Run ``argv`` to completion, timeout or cancellation; never raises for
    the command's own failures (they are in the result).

    ``output_cap`` bounds the head kept of each stream (bytes), ``tail_chars``
    the tail (characters); give either or both, never neither.

    ``on_output`` receives every chunk of both streams, from the two drain
    threads (so it must be thread-safe). If it raises, or a pipe read fails,
    the tree is stopped like on cancellation while both pipes keep being
    drained; ``output_error`` / ``drain_error`` say what happened. The
    function returns only after the tree is stopped and, unless a member
    could not be signalled, both pipes reached their end.
    """
    if output_cap is None and tail_chars is None:
        raise ValueError("run_command needs output_cap, tail_chars or both")
    start = time.monotonic()
    kwargs: dict[str, object] = {}
    if _IS_WINDOWS:  # pragma: no cover
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    release: Callable[[], None] | None = None
    proc: _Process
    try:
        if sandbox is not None:
            proc, release = _contained(sandbox, argv, cwd=cwd, env=env)
        else:
            proc = subprocess.Popen(  # noqa: S603 - argv comes from the shell tool, after the gates
                list(argv),
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                **kwargs,  # type: ignore[call-overload]
            )
    except _SandboxFailed as exc:
        return _not_started(start, str(exc))
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
    spawn = _spawn_record(proc)
    with _LIVE_LOCK:
        _LIVE[spawn.spawn_id] = (proc, spawn)
    try:
        return _supervise(
            proc,
            spawn,
            start=start,
            timeout_s=timeout_s,
            output_cap=output_cap,
            tail_chars=tail_chars,
            cancel=cancel,
            redact=redact,
            on_output=on_output,
        )
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(spawn.spawn_id, None)
        if release is not None:
            release()  # the sandbox's own resources (pids cgroup, proxy), once it has ended


def _supervise(
    proc: _Process,
    spawn: SpawnRecord,
    *,
    start: float,
    timeout_s: float,
    output_cap: int | None,
    tail_chars: int | None,
    cancel: threading.Event | None,
    redact: Callable[[str], str] | None,
    on_output: OutputSink | None,
) -> ProcResult:
    # Only a caller recording the output needs a failed pipe to stop the tree.
    failed = threading.Event() if on_output is not None else None
    out = _Drain(
        proc.stdout,
        Capture(head_bytes=output_cap, tail_chars=tail_chars),
        name="stdout",
        sink=on_output,
        failed=failed,
    )
    err = _Drain(
        proc.stderr,
        Capture(head_bytes=output_cap, tail_chars=tail_chars),
        name="stderr",
        sink=on_output,
        failed=failed,
    )
    deadline = start + timeout_s
    timed_out = cancelled = aborted = False
    stop_error: str | None = None
    pause = 0.0005
    try:
        while not _leader_exited(proc):
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            if failed is not None and failed.is_set():
                aborted = True  # the output cannot be recorded whole any more
                break
            time.sleep(pause)
            pause = min(pause * 2, _POLL_S)  # quick commands answer quickly
    finally:
        if timed_out or cancelled or aborted:
            stop_error = _stop_tree(proc, spawn)
        elif _CAN_PEEK and (not _HAS_PROC or _members_running(spawn, proc)):
            # Also on normal exit: whatever the command left running in its
            # group (a backgrounded child holding the pipes open) is stopped
            # with it. Only while the leader is unreaped, which keeps the group
            # id ours; without /proc the leftovers cannot be seen, so the group
            # is stopped unconditionally (an empty group ignores the signals).
            stop_error = _stop_tree(proc, spawn)
        if stop_error is None:
            try:
                proc.wait(timeout=GRACE_S)  # reap the leader only now
            except subprocess.TimeoutExpired:
                pass
    # Pipes held by a process we could not signal may never close.
    for drain in (out, err):
        drain.thread.join(timeout=GRACE_S if stop_error is None else _POLL_S)
    drain_problems = [
        f"{d.name}: {d.error}" if d.error is not None else f"{d.name}: still open"
        for d in (out, err)
        if d.error is not None or d.thread.is_alive()
    ]
    return ProcResult(
        exit_code=proc.returncode,
        stdout=out.capture.render("stdout", redact, out.error),
        stderr=err.capture.render("stderr", redact, err.error),
        stdout_bytes=out.capture.total_bytes,
        stderr_bytes=err.capture.total_bytes,
        stdout_truncated=out.capture.truncated,
        stderr_truncated=err.capture.truncated,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=time.monotonic() - start,
        pgid=spawn.pgid,
        stdout_chars=out.capture.total_chars,
        stderr_chars=err.capture.total_chars,
        spawn=spawn,
        stop_error=stop_error,
        output_error=out.sink_error or err.sink_error,
        drain_error="; ".join(drain_problems) or None,
    )
