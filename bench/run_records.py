"""Run records benchmark: what the audit chain costs, and how fast a run stops.

Prints
- audit write cost per event with the hash chain (each event is still
  fsync-ed, which dominates), for N events;
- ``verify_log`` throughput on that log (events per second; it is linear);
- how long ``charter run`` takes to exit after SIGINT and after SIGTERM while
  its model request hangs (a local endpoint that never answers), median of
  several runs.

Targets: verifying a run's log (thousands of events) well under a second, linear
in its size; exit after a signal <= 1 s. Figures scale with the machine's load.

    python bench/run_records.py [--events N] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from charter.runtime.audit import AuditLog, verify_log

REPO = Path(__file__).resolve().parents[1]
CHARTER = str(Path(sys.executable).parent / "charter")


def _audit(events: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "audit.jsonl"
        log = AuditLog(path)
        started = time.perf_counter()
        for n in range(events - 1):
            log.write("decision", tool="read_file", decision="allow", rule="plan-allow", n=n)
        log.write("run_finished", status="completed")
        write_s = time.perf_counter() - started
        log.close()
        started = time.perf_counter()
        found = verify_log(path)
        verify_s = time.perf_counter() - started
        assert found.ok, found.problem
        print(f"audit write: {write_s / events * 1e6:.0f} us/event (fsync each) for {events}")
        print(f"audit verify: {events / verify_s:,.0f} events/s ({verify_s * 1000:.0f} ms)")


def _hung_endpoint() -> tuple[socket.socket, int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)  # read nothing, answer nothing

    threading.Thread(target=accept, daemon=True).start()
    return listener, listener.getsockname()[1]


def _stop_time(sig: signal.Signals, port: int) -> float:
    with tempfile.TemporaryDirectory() as ws:
        argv = [
            CHARTER,
            "run",
            str(REPO / "tests" / "fixtures" / "run" / "chat"),
            "--agent",
            "chat",
            "--model",
            "openai:bench",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--no-user-config",
            "--json",
            "--workspace",
            ws,
        ]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line)["kind"] == "thinking":
                break
        time.sleep(0.2)  # the request is on the wire
        started = time.perf_counter()
        proc.send_signal(sig)
        proc.wait(timeout=60)
        return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    _audit(args.events)
    listener, port = _hung_endpoint()
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            times = [_stop_time(sig, port) for _ in range(args.runs)]
            print(
                f"exit after {sig.name} with a hung model: median "
                f"{statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
            )
    finally:
        listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
