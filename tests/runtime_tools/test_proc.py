from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from charter.runtime.proc import group_running, run_command

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}

# A child that starts a grandchild ignoring SIGTERM, reports both pids, and
# then waits; only SIGKILL of the whole group gets rid of the grandchild.
STUBBORN = r"""
import os, signal, subprocess, sys, time
grand = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
grand.stdout.readline()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(os.getpid(), grand.pid, flush=True)
time.sleep(60)
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); it runs nothing. Check its state.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state == "Z"


def _assert_no_orphan(pgid: int) -> None:
    """Nothing of the group runs when run_command returns; the zombies it may
    leave are reaped by init (this machine's takes about 1.5 s), after which
    the group is gone entirely."""
    assert not group_running(pgid)
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_timeout_kills_a_grandchild_that_ignores_term(tmp_path: Path) -> None:
    start = time.monotonic()
    res = run_command(
        [sys.executable, "-c", STUBBORN], cwd=tmp_path, env=ENV, timeout_s=1.5, cancel=None
    )
    elapsed = time.monotonic() - start
    assert res.timed_out and not res.cancelled
    assert res.pgid is not None
    child, grand = (int(x) for x in res.stdout.split()[:2])
    assert _gone(child) and _gone(grand)
    _assert_no_orphan(res.pgid)
    assert elapsed < 1.5 + 2 * 2.0 + 1.0  # timeout + TERM grace + KILL wait, with slack


def test_cancel_event_stops_the_tree(tmp_path: Path) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    res = run_command(
        ["/bin/sh", "-c", "sleep 30 & sleep 30"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=30,
        cancel=cancel,
    )
    assert res.cancelled and not res.timed_out
    assert res.duration_s < 5
    assert res.pgid is not None
    _assert_no_orphan(res.pgid)


def test_a_finished_command_leaves_nothing_running(tmp_path: Path) -> None:
    # The backgrounded sleep holds the pipes open; it is stopped with its command.
    res = run_command(
        ["/bin/sh", "-c", "sleep 30 & echo started"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=20,
        cancel=None,
    )
    assert res.exit_code == 0 and not res.timed_out
    assert res.stdout == "started\n"
    assert res.duration_s < 5
    assert res.pgid is not None
    _assert_no_orphan(res.pgid)


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_200_mb_of_output_keeps_memory_bounded(tmp_path: Path) -> None:
    before = _rss_kib()
    res = run_command(
        ["/bin/sh", "-c", "head -c 200000000 /dev/zero | tr '\\0' x; echo oops >&2"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=30,
        cancel=None,
    )
    growth_mb = (_rss_kib() - before) / 1024
    assert res.exit_code == 0
    assert res.stdout_bytes == 200_000_000
    assert res.stdout_truncated and not res.stderr_truncated
    assert res.stdout.endswith(
        "[truncated] stdout: kept the first 1000000 bytes; the command wrote 200000000 bytes"
    )
    assert res.stdout.count("x") == 1_000_000
    assert res.stderr == "oops\n"
    assert growth_mb < 40, f"RSS grew by {growth_mb:.1f} MB"


def test_output_cap_is_per_stream_and_exact(tmp_path: Path) -> None:
    res = run_command(
        ["/bin/sh", "-c", "printf 'abcdefghij'; printf '0123456789' >&2; exit 4"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        output_cap=4,
        cancel=None,
    )
    assert res.exit_code == 4
    assert res.stdout.startswith("abcd\n[truncated] stdout: kept the first 4 bytes")
    assert res.stdout.endswith("wrote 10 bytes")
    assert res.stderr.startswith("0123\n[truncated] stderr")


def test_redact_hook_sees_output_before_the_result(tmp_path: Path) -> None:
    res = run_command(
        ["/bin/sh", "-c", "echo token=s3cr3t-value"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=None,
        redact=lambda t: t.replace("s3cr3t-value", "<redacted>"),
    )
    assert res.stdout == "token=<redacted>\n"


def test_a_missing_program_is_a_result_not_an_exception(tmp_path: Path) -> None:
    res = run_command(
        [str(tmp_path / "no-such-shell"), "-c", "true"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=5,
        cancel=None,
    )
    assert res.exit_code is None and res.error is not None and "could not start" in res.error
    assert not res.ok
