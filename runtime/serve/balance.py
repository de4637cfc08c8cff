"""Which worker takes a new connection: with ``--workers``, the one holding fewest.

The workers share one listening socket, and every worker whose event loop
is free is woken for a new connection: whichever runs first takes it.
Measured with 128 keep-alive clients connecting at once to two workers, the
split ran anywhere from 64/64 to 120/8, and a client of the fuller worker
waits longer for every answer (its worker decides for most of the clients
while the other idles).

So each worker writes how many connections it holds into a small array
shared by all of them (made by the parent before it forks). A worker that
holds more than another live one (by more than :data:`SLACK`) lets a new
connection wait for that one: it stops watching the socket for
:data:`DEFER_S` and looks again, at most :data:`MAX_DEFERS` times in a row,
then takes the connection itself. A worker that is stuck, slow or gone
therefore never leaves a connection waiting more than a few milliseconds;
one that exits is marked gone by the parent and counted no more.

The counts only steer who accepts: nothing is decided from them.
"""

from __future__ import annotations

import mmap
import struct

__all__ = ["DEFER_S", "MAX_DEFERS", "SLACK", "Balance"]

# A worker may hold this many connections more than the least loaded one
# before it leaves new ones to it.
SLACK = 2
# How long a worker that leaves a connection to another stops watching the
# listening socket, and how many times in a row it does so.
DEFER_S = 0.002
MAX_DEFERS = 5

_SLOT = struct.Struct("=q")
_GONE = -1


class Balance:
    """The shared counts of open connections, one slot per worker."""

    def __init__(self, workers: int) -> None:
        """(In the parent, before the fork: the children share the mapping.)"""
        self.workers = workers
        self.me = -1
        self._mem = mmap.mmap(-1, _SLOT.size * max(1, workers))  # anonymous, shared on fork

    def join(self, number: int) -> None:
        """(In worker ``number``.) The slot this process writes."""
        self.me = number
        self.hold(0)

    def hold(self, connections: int) -> None:
        """This worker now holds ``connections``."""
        if self.me >= 0:
            _SLOT.pack_into(self._mem, _SLOT.size * self.me, connections)

    def gone(self, number: int) -> None:
        """(In the parent.) Worker ``number`` exited: count it no more."""
        _SLOT.pack_into(self._mem, _SLOT.size * number, _GONE)

    def lighter_elsewhere(self, mine: int) -> bool:
        """Whether a live worker holds fewer connections than ``mine`` by more than SLACK."""
        for number in range(self.workers):
            if number == self.me:
                continue
            held = _SLOT.unpack_from(self._mem, _SLOT.size * number)[0]
            if held != _GONE and held + SLACK < mine:
                return True
        return False
