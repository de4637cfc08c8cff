"""``charter serve --workers N``: N worker processes on one listening socket.

Decisions are CPU-bound Python, so one process decides on one core at a
time. The parent binds the listening socket, loads (or compiles) the plan
and warms the decision path once, then forks N workers: each inherits the
socket (the kernel hands each new connection to one worker that is waiting
in ``accept``, so an idle worker takes the next connection) and the prepared
plan (shared copy-on-write, never loaded N times). Each worker reloads the
plan by digest on its own, as one server does (a plan file is checked on
every request; a project is watched), so every worker answers with the plan
the file holds now.

One socket shared by all workers rather than one ``SO_REUSEPORT`` socket
each: a port-0 listener needs no second bind, no connection is ever queued
on a socket nobody accepts from, and the kernel wakes a free worker instead
of hashing a connection onto a busy one.

The decision log stays one file with one writer, the parent
(:mod:`.loglink`): a worker's answer waits until the parent has the line on
disk. The fork happens before any thread starts in the parent (the log's
writer thread is started after it); a worker that exits is logged
(``worker_exited``) and the others go on serving; the parent stops them all
on SIGTERM or SIGINT and ends the log with ``serve_stopped``.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from charter.runtime.serve.balance import Balance
from charter.runtime.serve.log import DecisionLog
from charter.runtime.serve.loglink import LogLink, relay

__all__ = ["Workers", "default_count", "prefork"]


# Beyond this many workers the default stops: a hook's client sends one call
# at a time, so more would hold memory (each worker's copy of the plan drifts
# from the shared one as Python touches it) for load no team of clients makes.
MAX_DEFAULT = 8


def default_count() -> int:
    """One worker per core this process may run on, at most MAX_DEFAULT."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT))


@dataclass
class Workers:
    """The parent's view of its workers."""

    log: DecisionLog
    balance: Balance | None = None  # the shared counts of open connections
    pids: dict[int, int] = field(default_factory=dict)  # pid -> worker number
    relays: list[threading.Thread] = field(default_factory=list)
    stopping: bool = False

    def stop(self) -> None:
        """Ask every worker to stop (from a signal handler too)."""
        self.stopping = True
        for pid in list(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def wait(self) -> int:
        """Until every worker has exited: 0 when they were asked to stop,
        1 when they all ended on their own."""
        while self.pids:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            number = self.pids.pop(pid, None)
            if number is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            if self.balance is not None:
                self.balance.gone(number)  # no connection is left to it any more
            if not self.stopping:
                self.log.record("worker_exited", {"worker": number, "pid": pid, "code": code})
                print(f"charter serve: worker {number} (pid {pid}) exited ({code}); "
                      f"{len(self.pids)} still serving", file=sys.stderr, flush=True)  # fmt: skip
        for thread in self.relays:
            thread.join(timeout=5)
        return 0 if self.stopping else 1


def prefork(
    count: int,
    log: DecisionLog,
    listener: socket.socket,
    child: Callable[[int, LogLink], int],
    *,
    balance: Balance | None = None,
) -> Workers:
    """Fork ``count`` workers, each running ``child(number, link)`` and
    exiting with its code; then start the log (its writer and one relay per
    worker) in this process, which no longer listens. Call before any thread
    is started here."""
    workers = Workers(log, balance)
    ends: list[socket.socket] = []
    for number in range(count):
        mine, theirs = socket.socketpair()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 70
            try:
                mine.close()
                for end in ends:
                    end.close()
                log.forget()
                for sig in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                code = child(number, LogLink(theirs, on_lost=_stop_self, preparer=log.preparer))
            except BaseException as exc:  # noqa: BLE001 - a worker never returns into the parent's code
                print(f"charter serve: worker {number} failed ({type(exc).__name__}: {exc})",
                      file=sys.stderr)  # fmt: skip
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        theirs.close()
        ends.append(mine)
        workers.pids[pid] = number
    listener.close()  # the workers hold it
    log.start()
    for number, end in enumerate(ends):
        workers.relays.append(relay(log, end, number))
    return workers


def _stop_self() -> None:
    """The log's owner is gone: this worker can no longer answer anything but
    deny, so it stops (its parent was killed, or stopped first)."""
    os.kill(os.getpid(), signal.SIGTERM)
