"""The process tree a command leads, and stopping it without signalling a
stranger.

The command starts in a fresh session (POSIX) or process group (Windows), so
everything it spawns can be stopped together: where ``/proc`` shows the tree,
every member is frozen (SIGSTOP), the leaves get SIGTERM and a short grace
period, then everything gets SIGKILL, so no shell in the tree runs another
step of its script once the stop began; elsewhere the whole group gets
SIGTERM, then SIGKILL after the grace period. A child that turns on job control
(``set -m``) puts its jobs in process groups of their own, but they stay in
the command's session, so where ``/proc`` shows sessions every live member
of the session is signalled too. (A process that deliberately starts a new
session with ``setsid`` is beyond what a session can hold; only OS isolation
such as cgroups or a Job Object could.)

Signalling by number is only safe while the number still means our process.
Every spawn is recorded in a :class:`SpawnRecord` (PID, group, platform, a
unique spawn id and the OS's start marker for the PID), and:

* the leader is not reaped until its group has been dealt with: its exit is
  observed with ``waitid(WNOWAIT)``, so its zombie keeps the PID, and with it
  the group id, from being handed to another process;
* before every group signal the start marker is read again; if it differs
  (someone else reaped the leader and the PID was reused), no signal is sent
  and the caller is told why.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from charter.runtime.records import field_values

__all__ = [
    "CAN_PEEK",
    "GRACE_S",
    "HAS_PROC",
    "IS_WINDOWS",
    "POLL_S",
    "Process",
    "SpawnRecord",
    "deaf_namespace_init",
    "group_running",
    "leader_exited",
    "members_running",
    "session_members",
    "signal_group",
    "spawn_record",
    "start_marker",
    "still_ours",
    "stop_tree",
]

GRACE_S = 2.0
POLL_S = 0.02
IS_WINDOWS = sys.platform == "win32"
# Peeking at a child's exit without reaping it (POSIX waitid with WNOWAIT).
CAN_PEEK = not IS_WINDOWS and hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
# Whether group membership can be read per process (and zombies told apart).
HAS_PROC = Path("/proc/self/stat").exists()


class Process(Protocol):
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
        return field_values(self)


def still_ours(spawn: SpawnRecord, proc: Process) -> bool:
    """Whether ``spawn.pid`` (and so the group it leads) is still the process
    we started. With a marker the OS is asked again; without one, only a
    leader we have not reaped ourselves is trusted (its zombie holds the PID)."""
    if spawn.start_marker is not None:
        return start_marker(spawn.pid) == spawn.start_marker
    return proc.returncode is None


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
    if not Path("/proc").is_dir():
        return True
    # After the command name: state, ppid, pgrp, ...
    return any(len(f) > 2 and f[2] == str(pgid) for _, f in _live_stats())


def session_members(sid: int) -> list[int]:
    """The live processes (zombies excluded) of session ``sid``, from /proc;
    empty where /proc is absent. The command leads its own session, so these
    are its descendants, whatever process group job control moved them to.
    The leader's unreaped zombie keeps ``sid`` from naming anyone else."""
    if not HAS_PROC:
        return []
    # After the command name: state, ppid, pgrp, session, ...
    return [pid for pid, f in _live_stats() if len(f) > 3 and f[3] == str(sid)]


def _live_stats() -> Iterator[tuple[int, list[str]]]:
    """Each live process of /proc (zombies and dead ones left out) with the
    fields of its stat line after the command name (state, ppid, pgrp,
    session, ...). A process that ends while it is read is passed over."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields and fields[0] not in ("Z", "X"):
            yield int(entry.name), fields


def leader_exited(proc: Process) -> bool:
    """Whether the command's own process has exited, without reaping it, so
    its PID stays reserved while its group may still be signalled."""
    if not CAN_PEEK:
        return proc.poll() is not None
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # reaped elsewhere (SIGCHLD ignored, another waiter): it is gone
    return info is not None


def members_running(spawn: SpawnRecord, proc: Process) -> bool:
    """Whether the group still has a live member. Without /proc a zombie
    leader cannot be told from a live member, so only the leader is known."""
    if HAS_PROC and spawn.pgid is not None:
        return group_running(spawn.pgid) or bool(session_members(spawn.pgid))
    return not leader_exited(proc)


def signal_group(spawn: SpawnRecord, proc: Process, sig: int) -> bool:
    """Send ``sig`` to the group unless its leader's identity no longer
    holds; False when the signal was withheld for that reason."""
    assert spawn.pgid is not None
    if not still_ours(spawn, proc):
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


def stale(spawn: SpawnRecord) -> str:
    return (
        f"process {spawn.pid} (spawn {spawn.spawn_id}) no longer has the start marker it was "
        "started with; its PID may belong to another process now, so no signal was sent"
    )


def deaf_namespace_init(pid: int, sig: int) -> bool:
    """Whether ``pid`` is pid 1 of a pid namespace below ours (a sandboxed
    command: :mod:`charter.runtime.sandbox`) with no handler for ``sig``.
    The kernel drops such a signal to a namespace's init, whoever sends it
    (only SIGKILL and SIGSTOP always arrive), so a plain ``sleep`` started
    there never acts on SIGTERM."""
    if not HAS_PROC:
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
    cannot receive it (see :func:`deaf_namespace_init`)."""
    if spawn.pgid is None or not deaf_namespace_init(spawn.pid, signal.SIGTERM):
        return False
    return all(pid == spawn.pid for pid in session_members(spawn.pgid))


def stop_tree(proc: Process, spawn: SpawnRecord) -> str | None:
    """TERM the whole tree, give it a short grace period, then KILL it.
    Returns why it stopped short, or None. The leader is left for the caller
    to reap, after the group is empty."""
    if IS_WINDOWS:  # pragma: no cover - exercised on Windows only
        if not still_ours(spawn, proc):
            return stale(spawn)
        subprocess.run(
            ["taskkill", "/F", "/T", "/PID", str(proc.pid)],
            capture_output=True,
            check=False,
        )
        return None
    if HAS_PROC:
        return _freeze_then_stop(proc, spawn)
    if not signal_group(spawn, proc, signal.SIGTERM):
        return stale(spawn)
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        if not members_running(spawn, proc):
            break
        if _only_a_deaf_init_left(spawn):
            # The TERM was dropped by the kernel: waiting out the grace
            # period would only delay the KILL that ends the command.
            if not signal_group(spawn, proc, signal.SIGKILL):
                return stale(spawn)
            break
        time.sleep(POLL_S)
    else:
        if not signal_group(spawn, proc, signal.SIGKILL):
            return stale(spawn)
    if not HAS_PROC:
        # Members other than the leader cannot be seen here: make sure of them.
        if not signal_group(spawn, proc, signal.SIGKILL):
            return stale(spawn)
        return None
    # SIGKILL is delivered asynchronously; wait (briefly) until the group is empty
    # so the caller never returns while a member still runs.
    assert spawn.pgid is not None
    end = time.monotonic() + GRACE_S
    while members_running(spawn, proc) and time.monotonic() < end:
        if not signal_group(spawn, proc, signal.SIGKILL):
            return stale(spawn)
        time.sleep(POLL_S)
    return None


def _members(sid: int) -> dict[int, int]:
    """Live members of the command's group and session, each with its parent."""
    # After the command name: state, ppid, pgrp, session, ...
    return {
        pid: int(f[1])
        for pid, f in _live_stats()
        if len(f) > 3 and (f[2] == str(sid) or f[3] == str(sid))
    }


def _freeze_then_stop(proc: Process, spawn: SpawnRecord) -> str | None:
    """Stop the tree so that no member runs another step of its script.

    A plain TERM to the group races: the leaf (``sleep``) dies first, and the
    shell above it, which ignores or traps TERM or is a pid namespace's init
    (which the kernel shields from it), goes on to the script's next command
    before the KILL arrives. So: every member is frozen first (SIGSTOP always
    arrives); then only the leaves, which start nothing, get TERM and are let
    go to act on it, for the grace period; then everything is killed. A
    parent never runs again between the stop and the kill."""
    assert spawn.pgid is not None
    if not signal_group(spawn, proc, signal.SIGSTOP):
        return stale(spawn)
    members = _members(spawn.pgid)
    parents = set(members.values())
    leaves = [pid for pid in members if pid not in parents]
    for pid in leaves:
        try:
            if deaf_namespace_init(pid, signal.SIGTERM):
                os.kill(pid, signal.SIGKILL)  # TERM would be dropped
            else:
                os.kill(pid, signal.SIGTERM)
                os.kill(pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        alive = _members(spawn.pgid)
        if not any(pid in alive for pid in leaves):
            break
        time.sleep(POLL_S)
    # SIGKILL ends stopped processes too; it is delivered asynchronously, so
    # wait (briefly) until the group is empty: the caller never returns while
    # a member still runs.
    end = time.monotonic() + GRACE_S
    while True:
        if not signal_group(spawn, proc, signal.SIGKILL):
            return stale(spawn)
        if not members_running(spawn, proc) or time.monotonic() >= end:
            return None
        time.sleep(POLL_S)


def spawn_record(proc: Process) -> SpawnRecord:
    # Read before anything could reap the child, so the marker is its own.
    marker = start_marker(proc.pid)
    pgid: int | None = None
    if not IS_WINDOWS:
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
