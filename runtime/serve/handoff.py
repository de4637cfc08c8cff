"""Crossing between the event loop and the threads that decide and log, in batches.

Measured under load (128 keep-alive clients, two workers on two cores), a
worker spent about 80 us of its CPU per request on the decision and about
290 us around it, much of that in crossing threads once per request: a pool
submission and a future chained back to the loop, a timer for the decision's
time limit, a wake-up of the loop for the result, another future, timer and
wake-up for the log's acknowledgement. Here each crossing is shared by every
request that makes it at the same time:

* :class:`Mailbox`: results posted from other threads reach the loop with
  one wake-up for all that were posted while the loop was busy.
* :class:`Expiry`: one timer for every wait that has the same length (the
  decision time limit, the log wait), since such waits end in the order
  they began.
* :class:`DecisionQueue`: decisions asked for on the loop are run, in
  arrival order, by pool threads that drain one queue (and wait a moment
  for more before they end); a thread is started only when none is
  draining, or when every one that is has been inside one decision for
  longer than ``stall`` (a decision that hangs holds its own thread, never
  the requests behind it).
* :class:`DurableWaits`: a decision's wait for its log line to reach the disk.

Nothing here decides or answers: a request still gets exactly the answer
(the decision, the deny at the time limit, the deny when the log fails) that
:class:`~charter.runtime.serve.decisions.Job` and
:class:`~charter.runtime.serve.decisions.Decider` give it.
"""

from __future__ import annotations

import asyncio
import collections
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from charter.runtime.serve.decisions import Answer, Job
    from charter.runtime.serve.log import _Line

__all__ = ["DecisionQueue", "DurableWaits", "Expiry", "Mailbox"]

T = TypeVar("T")

# How late an expiry may fire: past this, waits that end close together are
# expired by one timer rather than one each.
_EXPIRY_SLACK_S = 0.01
# Settled waits an Expiry keeps before it may drop them all at once.
_COMPACT_AT = 64
# How long a draining thread waits for more work before it ends.
_LINGER_S = 0.25


class Mailbox:
    """Calls posted from any thread, run on the loop in the order posted."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        """(Made on the loop's thread.)"""
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._lock = threading.Lock()
        self._items: list[tuple[Callable[[Any], None], Any]] = []

    def post(self, fn: Callable[[T], None], value: T) -> None:
        """Run ``fn(value)`` on the loop soon; wakes the loop only when
        nothing posted before is still waiting for it (and never when the
        poster is the loop itself)."""
        with self._lock:
            self._items.append((fn, value))
            if len(self._items) > 1:
                return  # the wake-up already asked for delivers this one too
        try:
            if threading.get_ident() == self._loop_thread:
                self._loop.call_soon(self._deliver)
            else:
                self._loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:
            pass  # the loop is closed: the server has stopped, nobody waits

    def _deliver(self) -> None:
        with self._lock:
            items, self._items = self._items, []
        for fn, value in items:
            fn(value)


class _Wait(Generic[T]):
    """One wait in an :class:`Expiry`: its end, and its item until settled."""

    __slots__ = ("end", "item")

    def __init__(self, end: float, item: T) -> None:
        self.end = end
        self.item: T | None = item


class Expiry(Generic[T]):
    """Waits of one length, each ended by ``on_expire`` unless settled first.

    Every wait lasts ``seconds`` from when it is added, so they end in the
    order they were added: one timer, for the oldest, serves them all. A
    wait is settled by whoever finishes it first, through :meth:`settle`,
    which lets go of its item at once: a settled decision (its request,
    answer and future) must not live on until its time limit would have
    ended. Kept for the limit, the settled decisions of a busy worker (five
    seconds of them, about 300,000 objects) made each full collection
    stop the worker for 20 to 75 ms. Settled waits leave the queue when
    they reach its head or, once they are most of it, all at once.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, seconds: float, on_expire: Callable[[T], None]
    ) -> None:
        self._loop = loop
        self.seconds = seconds
        self._on_expire = on_expire
        self._waits: collections.deque[_Wait[T]] = collections.deque()
        self._settled = 0  # waits in the queue whose item is gone
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        """Waits still open."""
        return len(self._waits) - self._settled

    def add(self, item: T) -> _Wait[T]:
        wait = _Wait(self._loop.time() + self.seconds, item)
        self._waits.append(wait)
        if self._timer is None:
            self._arm()
        return wait

    def settle(self, wait: _Wait[T]) -> None:
        """``wait`` ended before its time: forget its item."""
        if wait.item is None:
            return
        wait.item = None
        self._settled += 1
        if self._settled > _COMPACT_AT and self._settled * 2 > len(self._waits):
            self._waits = collections.deque(w for w in self._waits if w.item is not None)
            self._settled = 0

    def _arm(self) -> None:
        if not self._waits:
            self._timer = None
            return
        when = max(self._waits[0].end, self._loop.time() + _EXPIRY_SLACK_S)
        self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        now = self._loop.time()
        waits = self._waits
        while waits and waits[0].end <= now:
            wait = waits.popleft()
            item = wait.item
            if item is None:
                self._settled -= 1
                continue
            wait.item = None
            self._on_expire(item)
        self._arm()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waits.clear()
        self._settled = 0


class _Ticket:
    """One decision in the queue."""

    __slots__ = ("future", "job", "state", "wait")

    QUEUED, RUNNING, OVER = 0, 1, 2

    def __init__(self, job: Job, future: asyncio.Future[Answer]) -> None:
        self.job = job
        self.future = future
        self.state = _Ticket.QUEUED
        self.wait: _Wait[_Ticket] | None = None


class DecisionQueue:
    """Decisions run in pool threads, answered on the loop (see the module's docstring)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        spawn: Callable[[Callable[[], None]], bool],
        *,
        limit: float,
        threads: int,
        stall: float = 0.02,
    ) -> None:
        """``spawn(fn)`` runs ``fn`` in a pool thread (False: the pool is shut
        down); ``limit`` is how long a decision may take before it is denied."""
        self._loop = loop
        self._spawn = spawn
        self._threads = max(1, threads)
        self._stall = stall
        # queue.SimpleQueue: put and get in C (a Condition's notify, in
        # Python, cost more than the rest of handing a decision over)
        self._jobs: queue.SimpleQueue[_Ticket] = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards _idle and _draining
        self._idle = 0  # draining threads waiting for a decision
        # for each draining thread, when its current decision began (None:
        # between decisions)
        self._draining: dict[int, float | None] = {}
        self._next_drainer = 0
        self._watch: asyncio.TimerHandle | None = None
        self._closed = False
        self._mail = Mailbox(loop)
        self._expiry: Expiry[_Ticket] = Expiry(loop, limit, self._expired)

    def put(self, job: Job) -> asyncio.Future[Answer]:
        """Queue ``job``; the future holds its answer (at the latest, the
        deny at the time limit)."""
        ticket = _Ticket(job, self._loop.create_future())
        ticket.wait = self._expiry.add(ticket)
        if self._closed:
            self._settle_stopping(ticket)
            return ticket.future
        self._jobs.put(ticket)
        # (a thread that stops waiting looks at the queue once more after it
        # has stopped counting as idle, so this one or it takes the ticket)
        if not self._idle:
            with self._lock:
                start = self._needs_drainer()
            if start:
                self._start_drainer()
                return ticket.future
        # the thread that takes it may be inside a decision that hangs: look
        # again in a moment
        if self._watch is None:
            self._watch = self._loop.call_later(self._stall, self._check_stalled)
        return ticket.future

    def close(self) -> None:
        """Answer everything still queued as the server stopping."""
        self._closed = True
        while True:
            try:
                ticket = self._jobs.get_nowait()
            except queue.Empty:
                break
            self._settle_stopping(ticket)
        self._expiry.cancel()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    # -- on the loop ------------------------------------------------------------------------

    def _needs_drainer(self) -> bool:
        """(Under the lock.) No thread is draining, or every one is stuck
        in a decision, and the bound on threads leaves room."""
        if len(self._draining) >= self._threads:
            return False
        if not self._draining:
            return True
        now = time.monotonic()
        return all(since is not None and now - since > self._stall
                   for since in self._draining.values())  # fmt: skip

    def _start_drainer(self) -> None:
        with self._lock:
            number = self._next_drainer
            self._next_drainer += 1
            self._draining[number] = None
        if not self._spawn(lambda: self._drain(number)):
            with self._lock:
                del self._draining[number]
            self.close()

    def _check_stalled(self) -> None:
        self._watch = None
        waiting = not self._jobs.empty()
        if not waiting:
            return
        with self._lock:
            start = self._needs_drainer()
        if start:
            self._start_drainer()
        self._watch = self._loop.call_later(self._stall, self._check_stalled)

    def _settle(self, result: tuple[_Ticket, bool, Any]) -> None:
        ticket, ok, value = result
        if ticket.future.done():
            return  # answered at the time limit already
        if ticket.wait is not None:
            self._expiry.settle(ticket.wait)
        job = ticket.job
        ticket.future.set_result(job.done(value) if ok else job.failed(value))

    def _expired(self, ticket: _Ticket) -> None:
        if ticket.future.done():
            return
        ticket.state = _Ticket.OVER  # one still queued never starts
        ticket.future.set_result(ticket.job.timed_out())

    @staticmethod
    def _settle_stopping(ticket: _Ticket) -> None:
        ticket.state = _Ticket.OVER
        if not ticket.future.done():
            ticket.future.set_result(ticket.job.stopping())

    # -- in a pool thread -----------------------------------------------------------------

    def _next(self, number: int) -> _Ticket | None:
        """The next queued decision, waiting a moment for one; None when
        none came (this thread then no longer drains)."""
        jobs = self._jobs
        try:
            return jobs.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            self._idle += 1
        try:
            return jobs.get(timeout=_LINGER_S)
        except queue.Empty:
            pass
        finally:
            with self._lock:
                self._idle -= 1
        with self._lock:
            try:
                return jobs.get_nowait()  # put while this thread counted as idle
            except queue.Empty:
                del self._draining[number]
                return None

    def _drain(self, number: int) -> None:
        while True:
            ticket = self._next(number)
            if ticket is None:
                return
            if ticket.state is not _Ticket.QUEUED:
                continue  # answered at the time limit while it waited
            ticket.state = _Ticket.RUNNING
            self._draining[number] = time.monotonic()
            try:
                result: tuple[_Ticket, bool, Any] = (ticket, True, ticket.job.run())
            except BaseException as exc:  # noqa: BLE001 - answered deny; the thread goes on
                result = (ticket, False, exc)
            ticket.state = _Ticket.OVER
            self._draining[number] = None
            self._mail.post(self._settle, result)
            del ticket, result  # not held while this thread waits for the next


_Settled = tuple[_Wait["asyncio.Future[bool]"], "asyncio.Future[bool]", bool]


class DurableWaits:
    """Waits, on the loop, for log lines to reach the disk (at most ``seconds``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self._loop = loop
        self._mail = Mailbox(loop)
        self._expiry: Expiry[asyncio.Future[bool]] = Expiry(loop, seconds, self._expired)

    def wait(self, line: _Line) -> asyncio.Future[bool]:
        """A future that holds whether ``line`` is on disk (False once
        ``seconds`` have passed without the log saying so)."""
        done: asyncio.Future[bool] = self._loop.create_future()
        wait = self._expiry.add(done)
        line.add_done_callback(lambda ok: self._mail.post(self._settle, (wait, done, ok)))
        return done

    def _settle(self, result: _Settled) -> None:
        wait, done, ok = result
        self._expiry.settle(wait)
        if not done.done():
            done.set_result(ok)

    @staticmethod
    def _expired(done: asyncio.Future[bool]) -> None:
        if not done.done():
            done.set_result(False)

    def close(self) -> None:
        self._expiry.cancel()
