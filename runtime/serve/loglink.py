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

import json
import socket
import sys
import threading
import time
from collections.abc import Callable

from charter.runtime.serve.log import DecisionLog, LinePreparer, Lines, _Line, _Recorder

__all__ = ["LogLink", "relay"]


class LogLink(_Recorder):
    """A worker's side: the :class:`DecisionLog` interface the Decider uses."""

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
        self._lock = threading.Lock()
        self._next = 0
        self._lost = False
        self._closing = False
        self._queue = Lines(4096)
        self.dropped = [0]
        self._sender = threading.Thread(target=self._send, name="charter-log-send", daemon=True)
        self._receiver = threading.Thread(target=self._receive, name="charter-log-ack", daemon=True)
        self._sender.start()
        self._receiver.start()

    def close(self) -> None:
        """Send what is queued, wait (a few seconds at most) for it to be on
        disk, then hang up."""
        self._queue.end()
        self._sender.join(timeout=10)
        deadline = time.monotonic() + 5
        while self._pending and time.monotonic() < deadline:
            time.sleep(0.01)
        self._closing = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._receiver.join(timeout=5)
        self._sock.close()

    def _send(self) -> None:
        out = self._sock.makefile("wb")
        while True:
            line = self._queue.get()
            if line is None:
                break
            try:
                if line.later is not None:
                    line.fields, line.args = line.later()
                    line.later = None
                with self._lock:
                    if self._lost:
                        raise OSError("the log owner is gone")
                    ident = self._next
                    self._next += 1
                    self._pending[ident] = line
                if self._preparer is not None and not line.prepared:
                    line.fields = self._preparer.prepare(line.fields, line.args)
                    line.args, line.prepared = None, True
                record = {"id": ident, "event": line.event, "fields": line.fields,
                          "args": line.args, "prepared": line.prepared}  # fmt: skip
                out.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
                if self._queue.empty():
                    out.flush()
            except Exception as exc:  # noqa: BLE001 - the line fails, its answer is a deny
                print(f"charter serve: a decision log line was not sent: {exc}", file=sys.stderr)
                line.finish(False)
        try:
            out.flush()
        except OSError:
            pass

    def _receive(self) -> None:
        inp = self._sock.makefile("rb")
        try:
            for raw in inp:
                try:
                    ack = json.loads(raw)
                    ident, ok = int(ack["id"]), bool(ack["ok"])
                except (ValueError, KeyError, TypeError):
                    continue
                with self._lock:
                    line = self._pending.pop(ident, None)
                if line is not None:
                    line.finish(ok)
        except OSError:
            pass
        with self._lock:
            self._lost = True
            waiting, self._pending = list(self._pending.values()), {}
        for line in waiting:
            line.finish(False)  # never confirmed on disk: denied
        if self._on_lost is not None and not self._closing:
            self._on_lost()


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
