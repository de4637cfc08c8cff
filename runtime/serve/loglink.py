"""The decision log across processes: workers send lines, the one log owner writes them.

With ``charter serve --workers N`` (N > 1) the decisions are made in N worker
processes, and the decision log stays one file with one writer: the parent
process, which owns :class:`~charter.runtime.serve.log.DecisionLog` (its
lock, its chain, its rotation, its group commit). A worker's
:class:`LogLink` stands in for the log: each line is redacted in the worker
(:class:`~.log.LinePreparer`) and goes to the parent over a Unix socket as
one JSON line ``{"id", "event", "fields", "args", "prepared"}``; the parent
queues it in the log and, once the group commit that holds it has reached
the disk, answers ``{"id", "ok"}`` (the answers of one commit in one
write). The worker sends its answer only then, so a decision is on disk
before its answer, whichever process is killed: a worker killed loses
answers nobody received; the parent killed leaves every waiting line
unacknowledged, and those answers become denies.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from charter.runtime.serve.log import DecisionLog, LinePreparer, LineWork, _Line

# A line whose preparation reads more than this (the event's bytes) is
# prepared off the event loop (see LogLink._offload).
_HEAVY_BYTES = 64 * 1024
# Lines sent and not yet acknowledged, at most: past it the owner is far
# behind, and a new line is answered as not logged (its answer a deny).
_MAX_PENDING = 4096

__all__ = ["LogLink", "relay"]


class LogLink:
    """A worker's side: the :class:`DecisionLog` interface the Decider uses.

    The link lives on the worker's event loop: a line recorded there is
    redacted, sent (the lines of one turn of the loop in one write) and its
    acknowledgement read without leaving the loop's thread. Threads of their
    own for sending and reading would each have to win the worker's GIL from
    the thread deciding, once per line (measured under load with such
    threads: about 6 ms of a 9 ms median wait for the disk was spent in the
    worker, not in the log's owner). A line recorded from another
    thread (a plan reload noted by a deciding thread) is handed to the loop;
    one recorded before the loop runs is sent once it does (:meth:`attach`),
    one recorded after it stopped by :meth:`close`.
    """

    def __init__(
        self,
        sock: socket.socket,
        *,
        on_lost: Callable[[], None] | None = None,
        preparer: LinePreparer | None = None,
    ) -> None:
        """``preparer``: redact each line here (in this worker) into what the
        log holds, so that the owner only chains and writes it."""
        self._sock = sock
        self._preparer = preparer
        self._on_lost = on_lost
        self._pending: dict[int, _Line] = {}
        self._next = 0
        self._lost = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._lock = threading.Lock()  # guards _waiting (other threads add to it)
        self._waiting: list[_Line] = []  # recorded while no loop runs the link
        self._out = bytearray()
        self._flush_soon = False
        self._writing = False  # waiting for the socket to take more
        self._tail = b""  # an acknowledgement not yet whole
        # prepares a large line (see _HEAVY_BYTES), started when one comes
        self._helper: ThreadPoolExecutor | None = None
        self.dropped = [0]

    # -- the LineLog interface ------------------------------------------------------------

    def record(
        self, event: str, fields: dict[str, Any], *, args: Any = None, prepared: bool = False
    ) -> _Line:
        return self._submit(_Line(event, fields, args, prepared=prepared), block=True)

    def record_later(
        self, event: str, work: LineWork, *, block: bool = True, size: int = 0
    ) -> _Line:
        return self._submit(_Line(event, {}, None, work, size=size), block=block)

    def close(self) -> None:
        """(After the loop has stopped.) Send every line not sent yet, wait a
        few seconds at most for them to be on disk, then hang up."""
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            for remove in (loop.remove_reader, loop.remove_writer):
                try:
                    remove(self._sock.fileno())
                except (OSError, ValueError, RuntimeError):
                    pass
        if self._helper is not None:
            self._helper.shutdown(wait=True)  # (its lines land in _waiting)
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for line in waiting:
            _tried(self._encode, line)
        try:
            self._sock.setblocking(True)
            self._sock.settimeout(5.0)
            if self._out and not self._lost:
                self._sock.sendall(self._out)
            self._out.clear()
            deadline = time.monotonic() + 5
            while self._pending and not self._lost and time.monotonic() < deadline:
                self._take(self._sock.recv(65536))
        except OSError:
            pass
        self._finish_all(False)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    # -- handing lines to the loop ----------------------------------------------------------

    def _submit(self, line: _Line, *, block: bool) -> _Line:
        loop = self._loop
        if loop is None:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not None and not self._lost:
                self.attach(running)
                loop = running
        if loop is None:
            with self._lock:
                self._waiting.append(line)
            return line
        if threading.get_ident() == self._loop_thread:
            self._send(line, block)
            return line
        try:
            loop.call_soon_threadsafe(self._send, line, block)
        except RuntimeError:  # the loop has stopped: close() sends it
            with self._lock:
                self._waiting.append(line)
        return line

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """(On ``loop``'s thread, once it runs.) Run the link on ``loop``: from
        now on the owner hanging up is seen at once, even by a worker that
        has logged nothing yet (which then stops, see ``on_lost``)."""
        if self._loop is not None:
            return
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._sock.setblocking(False)
        loop.add_reader(self._sock.fileno(), self._readable)
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for line in waiting:
            self._send(line, True)

    # -- on the loop --------------------------------------------------------------------------

    def _send(self, line: _Line, block: bool) -> None:
        if self._lost:
            line.finish(False)  # nobody can put it on disk: its answer is a deny
            return
        if len(self._pending) >= _MAX_PENDING:
            # the owner is far behind: this line's answer becomes a deny
            # rather than the worker holding ever more (it never blocks
            # the loop)
            if not block:
                self.dropped[0] += 1
            line.finish(False)
            return
        if line.size > _HEAVY_BYTES and (line.later is not None or not line.prepared):
            self._offload(line)
            return
        if _tried(self._encode, line):
            self._send_soon()

    def _send_soon(self) -> None:
        if not self._flush_soon and not self._writing and self._loop is not None:
            self._flush_soon = True
            self._loop.call_soon(self._flush)

    def _offload(self, line: _Line) -> None:
        """Prepare a large line in the link's helper thread, then send it
        from the loop: reading and redacting a multi-megabyte event on the
        loop held up every other connection of this worker (measured: an
        honest client's p99 went from 14 ms to 744 ms while 7 MB events
        came in)."""
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="charter-log-prepare")
        loop = self._loop

        def work() -> None:
            if not _tried(self._prepare, line):
                return
            try:
                if loop is None:
                    raise RuntimeError("no loop")
                loop.call_soon_threadsafe(self._prepared, line)
            except RuntimeError:  # the loop has stopped: close() sends it
                with self._lock:
                    self._waiting.append(line)

        self._helper.submit(work)

    def _prepared(self, line: _Line) -> None:
        if self._lost:
            line.finish(False)
            return
        self._encode(line)
        self._send_soon()

    def _prepare(self, line: _Line) -> None:
        """Work out the line's fields and redact them (in place)."""
        if line.later is not None:
            line.fields, line.args = line.later()
            line.later = None
        if self._preparer is not None and not line.prepared:
            line.fields = self._preparer.prepare(line.fields, line.args)
            line.args, line.prepared = None, True

    def _encode(self, line: _Line) -> None:
        self._prepare(line)
        ident = self._next
        self._next += 1
        record = {"id": ident, "event": line.event, "fields": line.fields,
                  "args": line.args, "prepared": line.prepared}  # fmt: skip
        self._out += json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
        self._pending[ident] = line

    def _flush(self) -> None:
        """Send what the socket takes now; wait for it to take the rest."""
        self._flush_soon = False
        loop = self._loop
        if not self._out or loop is None:
            return
        try:
            sent = self._sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._gone()
            return
        del self._out[:sent]
        if self._out and not self._writing:
            self._writing = True
            loop.add_writer(self._sock.fileno(), self._writable)

    def _writable(self) -> None:
        self._writing = False
        if self._loop is not None:
            self._loop.remove_writer(self._sock.fileno())
        self._flush()

    def _readable(self) -> None:
        try:
            data = self._sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._gone()
            return
        self._take(data)

    def _take(self, data: bytes) -> None:
        """Finish each line whose acknowledgement is in ``data``."""
        if not data:
            self._lost = True
            return
        *whole, self._tail = (self._tail + data).split(b"\n")
        for raw in whole:
            try:
                ack = json.loads(raw)
                ident, ok = int(ack["id"]), bool(ack["ok"])
            except (ValueError, KeyError, TypeError):
                continue
            line = self._pending.pop(ident, None)
            if line is not None:
                line.finish(ok)

    def _gone(self) -> None:
        """The owner hung up (it was killed, or stopped first)."""
        if self._lost:
            return
        self._lost = True
        loop = self._loop
        if loop is not None:
            loop.remove_reader(self._sock.fileno())
            if self._writing:
                loop.remove_writer(self._sock.fileno())
                self._writing = False
        self._finish_all(False)  # never confirmed on disk: denied
        if self._on_lost is not None:
            self._on_lost()

    def _finish_all(self, ok: bool) -> None:
        waiting, self._pending = list(self._pending.values()), {}
        for line in waiting:
            line.finish(ok)


def _tried(step: Callable[[_Line], None], line: _Line) -> bool:
    """Whether ``step(line)`` worked; a line it fails on is finished as not
    logged (its answer a deny) and said on stderr."""
    try:
        step(line)
    except Exception as exc:  # noqa: BLE001 - the line fails, its answer is a deny
        print(f"charter serve: a decision log line was not sent: {exc}", file=sys.stderr)
        line.finish(False)
        return False
    return True


def relay(log: DecisionLog, sock: socket.socket, worker: int) -> threading.Thread:
    """The owner's side for one worker: queue each line it sends in ``log``
    and acknowledge it once durable. Returns the (started) reading thread."""
    write_lock = threading.Lock()
    out = sock.makefile("wb", buffering=0)
    acks: list[bytes] = []

    def flush() -> None:
        """Send the acknowledgements gathered so far, in one write."""
        with write_lock:
            data = b"".join(acks)
            acks.clear()
            if not data:
                return
            try:
                out.write(data)
            except OSError:
                pass  # the worker is gone; nobody waits for these answers

    def ack(ident: int, ok: bool) -> None:
        # the lines of one group commit are acknowledged together, once it
        # is on disk (one write, not one per line); a line that failed is
        # told at once, whenever it fails
        with write_lock:
            acks.append(b'{"id": %d, "ok": %s}\n' % (ident, b"true" if ok else b"false"))
        if not ok:
            flush()

    log.after_commit(flush)

    def run() -> None:
        inp = sock.makefile("rb")
        try:
            for raw in inp:
                try:
                    record = json.loads(raw)
                    ident = int(record["id"])
                    event = str(record["event"])
                    fields = dict(record["fields"])
                except (ValueError, KeyError, TypeError):
                    print(f"charter serve: worker {worker} sent an unreadable log line",
                          file=sys.stderr)  # fmt: skip
                    continue
                fields.setdefault("worker", worker)
                line = log.record(event, fields, args=record.get("args"),
                                  prepared=record.get("prepared") is True)  # fmt: skip
                line.add_done_callback(lambda ok, ident=ident: ack(ident, ok))  # type: ignore[misc]
        except OSError:
            pass
        # the worker hung up once its lines were on disk
        sock.close()

    thread = threading.Thread(target=run, name=f"charter-log-relay-{worker}", daemon=True)
    thread.start()
    return thread
