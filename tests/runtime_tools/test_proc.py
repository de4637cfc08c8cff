from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import charter.runtime.proc.tree as proc_tree
from charter.runtime.proc import Capture, ProcResult, group_running, run_command, start_marker

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


def sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


def run_here(cwd: Path, argv: list[str], timeout_s: float, **options: Any) -> ProcResult:
    """`run_command` in `cwd` with the test environment."""
    return run_command(argv, cwd=cwd, env=ENV, timeout_s=timeout_s, **options)


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
    res = run_here(tmp_path, [sys.executable, "-c", STUBBORN], 1.5)
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
    res = run_here(tmp_path, sh("sleep 30 & sleep 30"), 30, cancel=cancel)
    assert res.cancelled and not res.timed_out
    assert res.duration_s < 5
    assert res.pgid is not None
    _assert_no_orphan(res.pgid)


def test_a_finished_command_leaves_nothing_running(tmp_path: Path) -> None:
    # The backgrounded sleep holds the pipes open; it is stopped with its command.
    res = run_here(tmp_path, sh("sleep 30 & echo started"), 20)
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
    res = run_here(tmp_path, sh("head -c 200000000 /dev/zero | tr '\\0' x; echo oops >&2"), 30)
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
    res = run_here(
        tmp_path, sh("printf 'abcdefghij'; printf '0123456789' >&2; exit 4"), 10, output_cap=4
    )
    assert res.exit_code == 4
    assert res.stdout.startswith("abcd\n[truncated] stdout: kept the first 4 bytes")
    assert res.stdout.endswith("wrote 10 bytes")
    assert res.stderr.startswith("0123\n[truncated] stderr")


def test_redact_hook_sees_output_before_the_result(tmp_path: Path) -> None:
    res = run_here(
        tmp_path,
        sh("echo token=s3cr3t-value"),
        10,
        redact=lambda t: t.replace("s3cr3t-value", "<redacted>"),
    )
    assert res.stdout == "token=<redacted>\n"


def test_a_missing_program_is_a_result_not_an_exception(tmp_path: Path) -> None:
    res = run_here(tmp_path, [str(tmp_path / "no-such-shell"), "-c", "true"], 5)
    assert res.exit_code is None and res.error is not None and "could not start" in res.error
    assert not res.ok


# -- the spawn record and its start marker (S000-48) ---------------------------------------

LINUX = sys.platform.startswith("linux")
# Prints the child's own pid and field 22 (starttime) of its /proc/self/stat.
SELF_STAT = (
    "import os; f = open('/proc/self/stat').read().rsplit(')', 1)[1].split(); "
    "print(os.getpid(), f[19])"
)


@pytest.mark.skipif(not LINUX, reason="the start marker is read from /proc")
def test_start_marker_is_field_22_of_proc_stat() -> None:
    own = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()
    assert start_marker(os.getpid()) == own[19]
    assert start_marker(2**22 + 12345) is None  # above pid_max: no such process


@pytest.mark.skipif(not LINUX, reason="the start marker is read from /proc")
def test_the_spawn_record_names_the_child(tmp_path: Path) -> None:
    first = run_here(tmp_path, [sys.executable, "-c", SELF_STAT], 10)
    second = run_here(tmp_path, [sys.executable, "-c", SELF_STAT], 10)
    for res in (first, second):
        assert res.ok and res.spawn is not None
        pid, marker = res.stdout.split()
        assert res.spawn.pid == int(pid) == res.spawn.pgid == res.pgid
        assert res.spawn.start_marker == marker  # what the child sees of itself
        assert res.spawn.platform == sys.platform
        assert len(res.spawn.spawn_id) == 32
    assert first.spawn is not None and second.spawn is not None
    assert first.spawn.spawn_id != second.spawn.spawn_id


def _recycled_after_spawn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Make every marker read after the spawn record's find another process,
    as if the PID had been reused; returns the signals then sent by number."""
    real_marker = proc_tree.start_marker
    reads: list[int] = []

    def marker(pid: int) -> str | None:
        reads.append(pid)
        value = real_marker(pid)
        return value if len(reads) == 1 else f"someone-else-{value}"

    sent: list[tuple[int, int]] = []
    real_killpg, real_kill = os.killpg, os.kill

    def killpg(pgid: int, sig: int) -> None:
        if sig != 0:  # 0 only asks whether the group exists
            sent.append((pgid, sig))
        real_killpg(pgid, sig)

    def kill(pid: int, sig: int) -> None:
        if sig != 0:
            sent.append((pid, sig))
        real_kill(pid, sig)

    monkeypatch.setattr(proc_tree, "start_marker", marker)
    monkeypatch.setattr(os, "killpg", killpg)
    monkeypatch.setattr(os, "kill", kill)
    return sent


@pytest.mark.skipif(not LINUX, reason="the start marker is read from /proc")
def test_a_changed_start_marker_means_no_kill_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_killpg = os.killpg
    sent = _recycled_after_spawn(monkeypatch)
    res = run_here(tmp_path, [sys.executable, "-c", "import time; time.sleep(30)"], 0.5)
    assert res.spawn is not None and res.spawn.pgid is not None
    try:
        assert res.timed_out and not res.ok
        assert sent == []  # neither TERM nor KILL went to the PID or the group
        assert res.stop_error is not None and "start marker" in res.stop_error
        assert res.exit_code is None  # not reaped: its status is not ours to claim
        assert group_running(res.spawn.pgid)  # still running, as no signal was sent
        assert res.duration_s < 2
    finally:
        real_killpg(res.spawn.pgid, signal.SIGKILL)


@pytest.mark.skipif(not LINUX, reason="the start marker is read from /proc")
def test_the_marker_is_checked_before_every_group_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The leader exits at once; its backgrounded child holds the group. The
    # leader is not reaped until that child is stopped, so its marker is
    # still there to check when the group is signalled.
    checked: list[tuple[str | None, str | None, int | None]] = []
    real_signal = proc_tree.signal_group

    def signal_group(spawn: Any, proc: Any, sig: int) -> bool:
        checked.append((spawn.start_marker, start_marker(spawn.pid), proc.returncode))
        return real_signal(spawn, proc, sig)

    monkeypatch.setattr(proc_tree, "signal_group", signal_group)
    res = run_here(tmp_path, sh("sleep 30 & echo started"), 20)
    assert res.ok and res.stdout == "started\n" and res.stop_error is None
    assert checked and all(
        recorded is not None and current == recorded and returncode is None
        for recorded, current, returncode in checked
    )
    assert res.pgid is not None
    _assert_no_orphan(res.pgid)


# -- bounded capture (S000-49, S004-24) ---------------------------------------------------


def test_capture_keeps_a_tail_with_totals() -> None:
    cap = Capture(tail_chars=10)
    for word in ("alpha ", "beta ", "gamma ", "delta ", "épsilon"):
        cap.feed(word.encode())
    cap.finish()
    assert (cap.total_chars, cap.total_bytes) == (30, 31)
    assert cap.tail == "ta épsilon"  # the last 10 of "alpha beta gamma delta épsilon"
    assert cap.truncated and not cap.tail_at_boundary
    # The partial first word ("ta") goes; a secret cut there would leave its end.
    assert cap.render("stdout") == (
        "[truncated] stdout: the command wrote 30 characters (31 bytes); "
        "kept the last 7 characters\népsilon"
    )


def test_capture_tail_at_a_word_boundary_keeps_everything() -> None:
    cap = Capture(tail_chars=8)
    cap.feed(b"one two\nthree ")
    cap.finish()
    assert cap.tail == "o\nthree " and not cap.tail_at_boundary
    cap2 = Capture(tail_chars=6)
    cap2.feed(b"one two\nthree ")
    cap2.finish()
    assert cap2.tail == "three " and cap2.tail_at_boundary
    assert cap2.render("stderr").endswith("kept the last 6 characters\nthree ")
    one_word = Capture(tail_chars=5)
    one_word.feed(b"x" * 50)
    one_word.finish()
    assert one_word.render("stdout").endswith("kept the last 0 characters\n")


def test_capture_counts_characters_across_chunk_splits() -> None:
    data = "żółw ".encode() * 3
    cap = Capture(tail_chars=100)
    for i in range(len(data)):  # one byte at a time splits every two-byte letter
        cap.feed(data[i : i + 1])
    cap.finish()
    assert (cap.total_bytes, cap.total_chars) == (len(data), 15)
    assert cap.tail == "żółw " * 3 and not cap.truncated
    assert cap.render("stdout") == "żółw " * 3


def test_capture_keeps_head_and_tail_without_overlap() -> None:
    cap = Capture(head_bytes=6, tail_chars=6)
    cap.feed(b"start middle part the end")
    cap.finish()
    assert bytes(cap.head) == b"start " and cap.tail == "he end"
    assert cap.truncated
    assert cap.render("stdout", lambda t: t.upper()) == (
        "START \n[truncated] stdout: the command wrote 25 characters (25 bytes); "
        "kept the first 6 bytes and the last 3 characters\nEND"
    )
    small = Capture(head_bytes=6, tail_chars=6)
    small.feed(b"start end")
    small.finish()
    assert not small.truncated and small.render("stdout") == "start end"


def test_capture_needs_a_limit() -> None:
    with pytest.raises(ValueError):
        Capture()
    with pytest.raises(ValueError):
        run_command(["true"], cwd=".", env=ENV, timeout_s=1, output_cap=None)


# Writes more than 1 MB and more than 12,000 characters to both streams, in
# writes of many sizes.
FLOOD = r"""
import sys
for i in range(30000):
    sys.stdout.write(f"o{i} " + "ä" * (i % 97) + "\n")
    sys.stderr.write(f"e{i} " + "z" * (i % 89) + "\n")
"""


@pytest.mark.parametrize(
    ("head", "tail"), [(1_000_000, None), (None, 12_000), (1_000_000, 12_000), (4096, 100)]
)
def test_capture_never_holds_more_than_its_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: int | None, tail: int | None
) -> None:
    held: list[tuple[int, int]] = []
    real_feed = Capture.feed

    def feed(self: Capture, chunk: bytes) -> None:
        real_feed(self, chunk)
        held.append((len(self.head), len(self.tail)))  # after every single chunk

    monkeypatch.setattr(Capture, "feed", feed)
    res = run_here(tmp_path, [sys.executable, "-c", FLOOD], 30, output_cap=head, tail_chars=tail)
    assert res.ok and res.stdout_truncated and res.stderr_truncated
    assert res.stdout_bytes > 1_000_000 and res.stderr_bytes > 1_000_000
    assert len(held) > 20
    assert max(h for h, _ in held) <= (head or 0)
    assert max(t for _, t in held) <= (tail or 0)
    expected_out = "".join(f"o{i} " + "ä" * (i % 97) + "\n" for i in range(30000))
    assert res.stdout_chars == len(expected_out)
    assert res.stdout_bytes == len(expected_out.encode())
    if tail is not None:
        assert res.stdout.rstrip("\n").endswith("o29999 " + "ä" * (29999 % 97))
    if head is not None:
        assert res.stdout.startswith("o0 \no1 ä\n")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_tail_of_200_mb_keeps_memory_bounded(tmp_path: Path) -> None:
    before = _rss_kib()
    res = run_here(
        tmp_path,
        sh("head -c 200000000 /dev/zero | tr '\\0' x; echo; echo end"),
        30,
        output_cap=None,
        tail_chars=12_000,
    )
    growth_mb = (_rss_kib() - before) / 1024
    assert res.exit_code == 0
    assert res.stdout_bytes == res.stdout_chars == 200_000_005
    assert res.stdout_truncated
    assert res.stdout == (
        "[truncated] stdout: the command wrote 200000005 characters (200000005 bytes); "
        "kept the last 4 characters\nend\n"
    )
    assert growth_mb < 40, f"RSS grew by {growth_mb:.1f} MB"


# A job started with job control on gets a process group of its own; it
# writes its pid to a file so the test can find (and, failing, clean up) it.
JOB_CONTROL = "(set -m; sleep 1013 & echo $! > {pidfile}); {after}"


def _job_pid(pidfile: Path) -> int:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        if text:
            return int(text)
        time.sleep(0.02)
    raise AssertionError("the job never started")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="sessions are read from /proc")
@pytest.mark.parametrize(
    ("after", "timeout_s"),
    [("sleep 30", 1.0), ("true", 10.0)],
    ids=["timed-out", "exited"],
)
def test_jobs_in_their_own_process_group_do_not_outlive_the_command(
    tmp_path: Path, after: str, timeout_s: float
) -> None:
    """`(set -m; sleep 1013 &)` moves the sleep out of the command's process
    group; it is still in the command's session, and is stopped with it,
    whether the command timed out or ended by itself."""
    pidfile = tmp_path / "job.pid"
    script = JOB_CONTROL.format(pidfile=pidfile, after=after)
    res = run_command(["bash", "-c", script], cwd=tmp_path, env=ENV, timeout_s=timeout_s)
    job = _job_pid(pidfile)
    try:
        assert _gone(job), "the job-control child outlived its command"
        assert res.timed_out is (after != "true")
    finally:
        if not _gone(job):
            os.kill(job, signal.SIGKILL)
