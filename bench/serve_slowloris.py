"""Honest hook latency while a neighbour holds half-sent requests open (slowloris).

Starts `charter serve` (the real command, on 127.0.0.1 port 0) with the
shipped `coder` blueprint compiled to a plan, then times honest Claude Code
PreToolUse requests (a new connection per request, as a `curl` hook makes
them, and one keep-alive connection, as Claude Code's http hook can) twice:

1. alone;
2. while `--attack` connections each send half a request head, then one more
   header line every second, never finishing; a connection the server closes
   is opened again at once, so the attack holds its number for the whole phase;
   and, with `--large N`, N clients send hook events of `--large-mb` MB (a
   file write) one after another, each as soon as the last is answered.

Prints p50 and p99 of each phase (milliseconds), the ratio of the two, and
whether the attack keeps the honest p99 under 100 ms. Bounded: loopback only,
at most `--attack` (<= 2000) extra connections, each phase at most
`--calls` honest requests per client; the server is stopped by its pid.

    python bench/serve_slowloris.py [--attack 200] [--large 0] [--large-mb 7] [--calls 300]
                                    [--python PY]

`--python` runs the server with another interpreter (e.g. an older
checkout's venv, to compare against it).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from _serve import hook_events, prepare, start, stop, wait_port
from _serve import pct as _pct

HALF = (
    b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
)


def _events(ws: Path) -> list[bytes]:
    return hook_events(
        ws,
        [
            ("Bash", {"command": "rm -rf ~/.ssh", "description": "x"}),
        ],
    )


class Attack:
    """``n`` connections that send half a request and trickle a header line
    a second, reopened when the server closes them."""

    def __init__(self, port: int, n: int) -> None:
        self.port, self.n = port, n
        self.stop = threading.Event()
        self.opened = 0
        self.socks: list[socket.socket | None] = [None] * n
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            s.sendall(HALF)
            s.setblocking(False)
            self.opened += 1
            return s
        except OSError:
            return None

    def start(self) -> None:
        for i in range(self.n):
            self.socks[i] = self._open()
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            for i, s in enumerate(self.socks):
                if self.stop.is_set():
                    break
                alive = s is not None
                if s is not None:
                    try:
                        if s.recv(4096) == b"":
                            alive = False  # the server closed it
                    except BlockingIOError:
                        pass
                    except OSError:
                        alive = False
                    if alive:
                        try:
                            s.send(b"X-Slow: 1\r\n")
                        except OSError:
                            alive = False
                if not alive:
                    if s is not None:
                        s.close()
                    self.socks[i] = self._open()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for s in self.socks:
            if s is not None:
                s.close()


class Large:
    """``n`` keep-alive clients sending ``mb``-megabyte hook events back to back."""

    def __init__(self, port: int, n: int, ws: Path, mb: float) -> None:
        self.port = port
        self.stop = threading.Event()
        self.sent = 0
        content = "https://u:p@h.example/?t=1 Authorization: Bearer abc " * int(mb * 2**20 / 52)
        self.event = json.dumps(
            {"cwd": str(ws), "tool_name": "Write",
             "tool_input": {"file_path": str(ws / "big.txt"), "content": content}}
        ).encode()  # fmt: skip
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        while not self.stop.is_set():
            try:
                conn.request("POST", "/v1/hooks/claude-code", body=self.event)
                conn.getresponse().read()
                self.sent += 1
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(90)


def _honest(
    port: int, events: list[bytes], calls: int, seconds: float
) -> tuple[list[float], list[float], int]:
    """(new-connection times, keep-alive times, failures), in ms: ``calls``
    rounds, or fewer when ``seconds`` have passed."""
    fresh: list[float] = []
    kept: list[float] = []
    failed = 0
    keep = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    end = time.monotonic() + seconds
    for n in range(calls):
        if time.monotonic() > end:
            break
        ev = events[n % len(events)]
        for times, conn in ((fresh, None), (kept, keep)):
            c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            t0 = time.perf_counter()
            try:
                c.request("POST", "/v1/hooks/claude-code", body=ev)
                resp = c.getresponse()
                body = resp.read()
                ok = resp.status == 200 and b"permissionDecision" in body
            except OSError:
                ok = False
                if conn is not None:
                    keep = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            times.append((time.perf_counter() - t0) * 1000)
            failed += not ok
            if conn is None:
                c.close()
    keep.close()
    return fresh, kept, failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attack", type=int, default=200, help="half-sent connections (<= 2000)")
    ap.add_argument("--large", type=int, default=0, help="clients sending large events (<= 8)")
    ap.add_argument("--large-mb", type=float, default=7.0, help="size of each large event (<= 7.5)")
    ap.add_argument("--calls", type=int, default=300, help="honest requests per way and phase")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the server")
    ap.add_argument("--phase-seconds", type=float, default=60, help="bound on each phase")
    ap.add_argument("--serve-arg", action="append", default=[], help="extra server option")
    a = ap.parse_args()
    attack_n = max(0, min(a.attack, 2000))
    large_n = max(0, min(a.large, 8))
    b = prepare("charter-slowloris-", a.python)
    server = start(b, a.serve_arg, cwd=b.work)
    attack: Attack | None = None
    large: Large | None = None
    try:
        port = wait_port(b, server, 300)
        if port is None:
            return 1
        events = _events(b.ws)
        _honest(port, events, 20, a.phase_seconds)  # warm up
        base_fresh, base_kept, base_failed = _honest(port, events, a.calls, a.phase_seconds)
        attack = Attack(port, attack_n)
        attack.start()
        if large_n:
            large = Large(port, large_n, b.ws, max(0.1, min(a.large_mb, 7.5)))
            large.start()
        time.sleep(1.5)  # let the attack settle in
        held = sum(s is not None for s in attack.socks)
        att_fresh, att_kept, att_failed = _honest(port, events, a.calls, a.phase_seconds)
        reopened = attack.opened - attack_n
    finally:
        if attack is not None:
            attack.close()
        if large is not None:
            large.close()
        stop(b, server, 15)

    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"attack: {attack_n} half-sent connections ({held} open when timing began, "
          f"{reopened} reopened after the server closed them)")  # fmt: skip
    if large is not None:
        print(f"large events: {large_n} clients, {len(large.event) / 2**20:.1f} MB each, "
              f"{large.sent} answered during the phases")  # fmt: skip
    print(f"{'honest way':26} {'phase':8} {'calls':>6} {'failed':>7} {'p50 ms':>8} {'p99 ms':>8}")
    rows = [
        ("new connection per call", "alone", base_fresh, base_failed),
        ("new connection per call", "attack", att_fresh, att_failed),
        ("one keep-alive connection", "alone", base_kept, 0),
        ("one keep-alive connection", "attack", att_kept, 0),
    ]
    for way, phase, values, failed in rows:
        shown = failed if way.startswith("new") else "-"
        print(f"{way:26} {phase:8} {len(values):>6} {shown!s:>7} {_pct(values, 0.5):>8.2f} "
              f"{_pct(values, 0.99):>8.2f}")  # fmt: skip
    p99_base = _pct(base_fresh + base_kept, 0.99)
    p99_att = _pct(att_fresh + att_kept, 0.99)
    ratio = p99_att / p99_base if p99_base else float("inf")
    print(f"honest p99: {p99_base:.2f} ms alone, {p99_att:.2f} ms under attack "
          f"(x{ratio:.2f}); failed requests under attack: {att_failed}")  # fmt: skip
    verdict = "met" if p99_att <= 100 and att_failed == 0 else "NOT met"
    print(f"target (honest p99 under attack <= 100 ms, no failures): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
