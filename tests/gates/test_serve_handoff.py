"""The decision server's crossing between its event loop and its threads
(`charter.runtime.serve.handoff`): answers as before, and nothing a settled
decision held outlives it until its time limit would have ended.

A worker that kept every settled decision for the whole time limit held
about 300,000 objects at 2,500 decisions/s; each full collection then
stopped it for 20 to 75 ms, the tail of every client's latency.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from charter.runtime.serve.handoff import DecisionQueue, Expiry


class _Item:
    """Something weakly referencable to wait on."""


class _Job:
    """What DecisionQueue needs of a decision: run it, and turn each ending into an answer."""

    def __init__(self, value: str, gate: threading.Event | None = None) -> None:
        self.value = value
        self.gate = gate

    def run(self) -> str:
        if self.gate is not None:
            self.gate.wait(5)
        return self.value

    def done(self, out: str) -> tuple[str, str]:
        return ("done", out)

    def failed(self, exc: BaseException) -> tuple[str, str]:
        return ("failed", type(exc).__name__)

    def timed_out(self) -> tuple[str, str]:
        return ("timed out", self.value)

    def stopping(self) -> tuple[str, str]:
        return ("stopping", self.value)


def test_a_settled_wait_lets_go_of_its_item_before_its_end() -> None:
    async def main() -> None:
        expired: list[Any] = []
        expiry: Expiry[_Item] = Expiry(asyncio.get_running_loop(), 60.0, expired.append)
        items = [_Item() for _ in range(500)]
        refs = [weakref.ref(i) for i in items]
        waits = [expiry.add(i) for i in items]
        for wait in waits[:499]:
            expiry.settle(wait)
        del items, waits
        gc.collect()
        assert sum(r() is not None for r in refs) == 1  # only the one still open
        assert len(expiry) == 1
        assert len(expiry._waits) < 500  # the settled ones left the queue too
        expiry.cancel()
        assert expired == []

    asyncio.run(main())


def test_open_waits_expire_in_order_and_settled_ones_never_do() -> None:
    async def main() -> None:
        expired: list[int] = []
        expiry: Expiry[int] = Expiry(asyncio.get_running_loop(), 0.05, expired.append)
        waits = [expiry.add(n) for n in range(200)]
        for wait in waits[::2]:
            expiry.settle(wait)
        expiry.settle(waits[0])  # settling twice changes nothing
        await asyncio.sleep(0.2)
        assert expired == list(range(1, 200, 2))
        assert len(expiry) == 0

    asyncio.run(main())


def _queue(
    loop: asyncio.AbstractEventLoop, pool: ThreadPoolExecutor, limit: float
) -> DecisionQueue:
    def spawn(fn: Any) -> bool:
        pool.submit(fn)
        return True

    return DecisionQueue(loop, spawn, limit=limit, threads=4)


def test_answered_decisions_are_not_kept_for_the_time_limit() -> None:
    async def main() -> None:
        with ThreadPoolExecutor(4) as pool:
            queue = _queue(asyncio.get_running_loop(), pool, limit=60.0)
            jobs = [_Job(str(n)) for n in range(2000)]
            refs = [weakref.ref(j) for j in jobs]
            answers = await asyncio.gather(*(queue.put(j) for j in jobs))  # type: ignore[arg-type]
            assert answers == [("done", str(n)) for n in range(2000)]
            del jobs
            gc.collect()
            assert sum(r() is not None for r in refs) == 0
            assert len(queue._expiry) == 0
            queue.close()

    asyncio.run(main())


def test_a_decision_past_its_limit_is_answered_timed_out_and_the_late_result_ignored() -> None:
    async def main() -> None:
        gate = threading.Event()
        with ThreadPoolExecutor(4) as pool:
            queue = _queue(asyncio.get_running_loop(), pool, limit=0.05)
            slow = queue.put(_Job("slow", gate))  # type: ignore[arg-type]
            fast = queue.put(_Job("fast"))  # type: ignore[arg-type]
            assert await fast == ("done", "fast")
            assert await slow == ("timed out", "slow")
            gate.set()
            await asyncio.sleep(0.05)
            assert slow.result() == ("timed out", "slow")
            queue.close()

    asyncio.run(main())
