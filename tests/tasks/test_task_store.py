"""Durable background tasks: the task store, the order "persist, then
announce", single-flight cancellation, the task log and the output
artifacts, and what happens when writing them fails (seed 000, terminal
process and output lifecycle)."""

from __future__ import annotations

import errno
import json
import os
import shlex
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import charter.runtime.proc.capture as proc_capture
import charter.runtime.proc.tree as proc_tree
from charter.runtime.proc import group_running
from charter.runtime.redact import Redactor
from charter.runtime.tools import tasks
from charter.runtime.tools.registry import calling_session, dispatch
from charter.runtime.tools.tasks import (
    LOG_ENTRY_CHARS,
    AppendFile,
    StreamRedactor,
    TaskStore,
    TaskStoreError,
    cancel_tasks,
    lifecycle,
)

TERMINAL = {"succeeded", "failed", "timed_out", "cancelled", "error"}
SECRET = "tok-abcdef-123456"


def _py(code: str) -> str:
    """A shell command running ``code`` in a short-lived Python child, which
    replaces the shell (so the exit code and signals are the child's)."""
    return f"exec {shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def _start(rt: Any, command: str, timeout: int = 30) -> str:
    res = dispatch(
        "terminal", {"command": command, "background": True, "timeout_seconds": timeout}, rt
    )
    assert res.ok, res.content
    return str(res.data["task_id"])


def _wait(rt: Any, tid: str, timeout: float = 15) -> Any:
    res = dispatch("yield_until", {"task_id": tid, "timeout_seconds": timeout}, rt)
    assert res.ok and res.data["timed_out"] is False, res.content
    return res


class FlakyFile(AppendFile):
    """An artifact or log file whose n-th write, or whose sync, fails."""

    def __init__(self, path: Path, fail_write_at: int | None, fail_sync: bool) -> None:
        super().__init__(path)
        self.writes = 0
        self.fail_write_at = fail_write_at
        self.fail_sync = fail_sync

    def write(self, data: bytes) -> None:
        self.writes += 1
        if self.fail_write_at is not None and self.writes >= self.fail_write_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().write(data)

    def sync(self) -> None:
        if self.fail_sync:
            raise OSError(errno.EIO, "Input/output error")
        super().sync()


class RecordingStore(TaskStore):
    """A real store that remembers every record it wrote, lets a test look
    at the world at the moment of each write, and can fail on demand."""

    def __init__(
        self,
        root: Path,
        *,
        on_write: Callable[[dict[str, Any]], None] | None = None,
        fail_open: str | None = None,
        fail_write: dict[str, int] | None = None,
        fail_sync: str | None = None,
    ) -> None:
        super().__init__(root)
        self.writes: list[dict[str, Any]] = []
        self.on_write = on_write
        self.fail_open = fail_open
        self.fail_write = fail_write or {}
        self.fail_sync = fail_sync

    def write(self, record: Any) -> None:
        if self.on_write is not None:
            self.on_write(dict(record))
        super().write(record)
        self.writes.append(json.loads(json.dumps(record)))

    def open_append(self, path: Path, role: str) -> AppendFile:
        if role == self.fail_open:
            raise OSError(errno.EACCES, "Permission denied")
        return FlakyFile(path, self.fail_write.get(role), self.fail_sync == role)


@pytest.fixture
def use_store(tmp_path: Path) -> Iterator[Callable[..., RecordingStore]]:
    """Install a RecordingStore (below tmp_path/runtime) for every task."""
    made: list[RecordingStore] = []

    def install(**options: Any) -> RecordingStore:
        store = RecordingStore(tmp_path / "runtime", **options)
        made.append(store)
        tasks.set_store_factory(lambda rt: store)
        return store

    try:
        yield install
    finally:
        tasks.set_store_factory(None)


def _states(store: RecordingStore, tid: str) -> list[str]:
    return [r["state"] for r in store.writes if r["task_id"] == tid]


# -- S000-47: persist, then announce; single-flight cancel; cleanup before failure ------


def test_the_terminal_state_is_persisted_before_completion_is_announced(
    make_rt: Any, use_store: Callable[..., RecordingStore]
) -> None:
    rt = make_rt()
    at_write: list[tuple[bool, str]] = []

    def on_write(record: dict[str, Any]) -> None:
        if record["state"] in TERMINAL:
            task = lifecycle._TASKS[record["task_id"]]
            shown = dispatch("task_status", {"task_id": record["task_id"]}, rt)
            at_write.append((task.done.is_set(), shown.data["status"]))
            # Widen the window: a waiter woken before this write finished
            # would read the old ("running") record from disk below.
            time.sleep(0.3)

    store = use_store(on_write=on_write)
    tid = _start(rt, "echo hi")
    res = _wait(rt, tid)
    on_disk = store.read(tid)  # read the moment the completion is announced
    assert res.data["status"] == "succeeded"
    assert on_disk is not None and on_disk["state"] == "succeeded"
    assert on_disk["exit_code"] == 0 and on_disk["finished_at"] is not None
    # Nobody could see the outcome while it was being written.
    assert at_write == [(False, "running")]
    assert _states(store, tid) == ["running", "succeeded"]


def test_cancelling_is_single_flight(
    make_rt: Any, use_store: Callable[..., RecordingStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child ignores SIGTERM, so stopping it takes the whole grace period:
    # long enough for more cancels to arrive while the first is under way.
    monkeypatch.setattr(proc_tree, "GRACE_S", 0.6)
    rt = make_rt()
    requested = threading.Event()
    published_before_answer: list[bool] = []

    def on_write(record: dict[str, Any]) -> None:
        if record["state"] == "cancelling":
            requested.set()
        if record["state"] in TERMINAL:
            published_before_answer.append(not answers)

    answers: dict[str, Any] = {}
    store = use_store(on_write=on_write)
    tid = _start(
        rt,
        _py(
            "import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(30)"
        ),
    )
    out = store.artifact_path(lifecycle._TASKS[tid].result_ref or "", "stdout")
    deadline = time.monotonic() + 10
    while "ready" not in out.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)  # the artifact fills while the command runs

    def cancel(name: str) -> None:
        answers[name] = dispatch("task_control", {"task_id": tid, "command": "cancel"}, rt)

    first = threading.Thread(target=cancel, args=("first",))
    first.start()
    assert requested.wait(5)
    second = threading.Thread(target=cancel, args=("second",))
    second.start()
    joined_by_run_end = cancel_tasks(rt.store)  # the run ending meanwhile joins too
    first.join(10)
    second.join(10)

    a, b = answers["first"], answers["second"]
    assert (a.data["cancel"], b.data["cancel"]) == ("requested", "joined")
    assert joined_by_run_end == 1
    # One request, one outcome, written once, before any answer was given.
    assert _states(store, tid) == ["running", "cancelling", "cancelled"]
    assert published_before_answer == [True]
    assert a.data["status"] == b.data["status"] == "cancelled"
    assert a.data["exit_code"] == b.data["exit_code"] == -9  # TERM was ignored: KILL
    assert "already being cancelled" in b.content
    pgid = store.writes[-1]["process"]["pgid"]
    assert not group_running(pgid)


def test_a_task_log_write_failure_stops_the_tree_before_the_task_is_published(
    make_rt: Any, use_store: Callable[..., RecordingStore]
) -> None:
    rt = make_rt()
    at_publish: list[bool] = []

    def on_write(record: dict[str, Any]) -> None:
        if record["state"] in TERMINAL:
            at_publish.append(group_running(record["process"]["pgid"]))

    # The first piece of stdout is written; the second cannot be.
    store = use_store(on_write=on_write, fail_write={"stdout": 2})
    t0 = time.monotonic()
    tid = _start(
        rt,
        _py(
            "import time\n"
            "print('one', flush=True)\n"
            "time.sleep(0.3)\n"
            "print('two', flush=True)\n"
            "time.sleep(30)"
        ),
    )
    res = _wait(rt, tid)
    assert time.monotonic() - t0 < 10  # stopped, not left to sleep
    assert res.data["status"] == "error"
    assert "task log could not be written" in res.content and "No space left" in res.content
    assert at_publish == [False]  # the tree was gone before the failure was recorded
    record = store.read(tid)
    assert record is not None and record["state"] == "error"
    assert record["output"]["stdout"]["bytes"] == len(b"one\ntwo\n")
    assert "two" in res.content  # the tail was still kept
    artifact = store.artifact_path(record["result_ref"], "stdout").read_text()
    assert artifact == "one\n"  # what was written before the failure stays


def test_after_an_artifact_write_fails_the_pipes_are_still_drained(
    make_rt: Any, use_store: Callable[..., RecordingStore]
) -> None:
    # The child ignores SIGTERM and writes 512 KiB, far more than a pipe
    # holds. Were the pipe no longer read after the failure, the child would
    # block until SIGKILL and its total would stay short.
    rt = make_rt()
    store = use_store(fail_write={"stdout": 1})
    size = 512 * 1024
    tid = _start(
        rt,
        _py(
            "import signal, sys\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            f"sys.stdout.write('x' * {size})\n"
            "sys.stdout.flush()"
        ),
    )
    res = _wait(rt, tid)
    record = store.read(tid)
    assert record is not None
    assert res.data["status"] == record["state"] == "error"
    assert record["output"]["stdout"]["bytes"] == size
    assert record["exit_code"] == 0  # it finished its output and exited on its own
    assert "No space left on device" in record["error"]


def test_a_failing_artifact_sync_fails_the_task_after_draining(
    make_rt: Any, use_store: Callable[..., RecordingStore]
) -> None:
    rt = make_rt()
    store = use_store(fail_sync="stdout")
    tid = _start(rt, _py("import sys; sys.stdout.write('z' * 100_000)"))
    res = _wait(rt, tid)
    record = store.read(tid)
    assert record is not None and record["state"] == "error"
    assert res.data["status"] == "error" and "flushed or synced" in res.content
    assert record["output"]["stdout"]["bytes"] == 100_000 and record["exit_code"] == 0
    # Everything was written before the sync failed.
    assert store.artifact_path(record["result_ref"], "stdout").read_text() == "z" * 100_000


def test_an_artifact_that_cannot_be_opened_starts_nothing(
    make_rt: Any, use_store: Callable[..., RecordingStore], tmp_path: Path
) -> None:
    rt = make_rt()
    use_store(fail_open="stderr")
    res = dispatch("terminal", {"command": "touch started", "background": True}, rt)
    assert (res.status, res.rule) == ("error", "task-store-failed")
    assert "task_id" not in res.data
    time.sleep(0.2)
    assert not (rt.workspace / "started").exists()
    assert dispatch("task_list", {}, rt).content == "(no background tasks)"


def test_a_drain_failure_stops_the_tree_before_the_task_is_published(
    make_rt: Any, use_store: Callable[..., RecordingStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_read = os.read
    reads: dict[str, int] = {"n": 0}

    def flaky_read(fd: int, n: int) -> bytes:
        # Only the stdout drain thread of run_command fails, on its second read.
        if threading.current_thread().name == "proc-drain-stdout":
            reads["n"] += 1
            if reads["n"] >= 2:
                raise OSError(errno.EIO, "Input/output error")
        return real_read(fd, n)

    rt = make_rt()
    at_publish: list[bool] = []

    def on_write(record: dict[str, Any]) -> None:
        if record["state"] in TERMINAL:
            at_publish.append(group_running(record["process"]["pgid"]))

    store = use_store(on_write=on_write)
    monkeypatch.setattr(proc_capture.os, "read", flaky_read)
    t0 = time.monotonic()
    tid = _start(rt, _py("import time\nprint('one', flush=True)\ntime.sleep(30)"))
    res = _wait(rt, tid)
    monkeypatch.undo()
    assert time.monotonic() - t0 < 10
    assert res.data["status"] == "error" and "could not be drained" in res.content
    assert at_publish == [False]
    record = store.read(tid)
    assert record is not None and "Input/output error" in record["error"]


# -- S000-50: task log, tail statistics, durable redacted artifacts ---------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_background_output_is_logged_in_chunks_and_kept_as_private_artifacts(
    make_rt: Any,
) -> None:
    rt = make_rt()
    rt.redactor.add(SECRET, "API_TOKEN", "env")
    # The secret reaches the pipe in two pieces, read separately; the
    # command line itself never holds it whole.
    code = (
        "import sys, time\n"
        "s = 'tok-abc' + 'def-123456'\n"
        "sys.stdout.write('a ' + s[:6]); sys.stdout.flush(); time.sleep(0.3)\n"
        "sys.stdout.write(s[6:] + ' b\\n'); sys.stdout.flush()\n"
        "sys.stdout.write('y' * 30000 + '\\n')\n"
        "sys.stderr.write('err ' + s + '\\n')"
    )
    tid = _start(rt, _py(code))
    res = _wait(rt, tid)
    assert res.data["status"] == "succeeded"

    root = rt.workspace / ".charter" / "runtime"
    store = TaskStore(root)
    record = store.read(tid)
    assert record is not None and record["state"] == "succeeded"
    ref = record["result_ref"]
    assert res.data["result_ref"] == ref and ref.startswith("artifact:")

    # Complete streams, redacted in the stored view, secret split or not.
    hidden = "<redacted:API_TOKEN@env>"
    stdout = store.artifact_path(ref, "stdout").read_text(encoding="utf-8")
    stderr = store.artifact_path(ref, "stderr").read_text(encoding="utf-8")
    assert stdout == f"a {hidden} b\n" + "y" * 30000 + "\n"
    assert stderr == f"err {hidden}\n"
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path

    # The same tail statistics a foreground terminal call reports.
    fg = dispatch("terminal", {"command": _py(code)}, rt)
    out = record["output"]
    assert out["tail_chars"] == 12_000
    assert (out["stdout"]["bytes"], out["stdout"]["chars"], out["stdout"]["truncated"]) == (
        fg.data["stdout_bytes"],
        fg.data["stdout_chars"],
        fg.data["stdout_truncated"],
    )
    assert out["stdout"]["truncated"] is True and out["stderr"]["truncated"] is False
    assert out["stderr"]["bytes"] == fg.data["stderr_bytes"]

    # The task log: ordered, bounded entries that add up to each stream.
    entries = [
        json.loads(line)
        for line in (root / "tasks" / f"{tid}.log.jsonl").read_text("utf-8").splitlines()
    ]
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    assert all(len(e["text"]) <= LOG_ENTRY_CHARS for e in entries)
    by_stream = {
        s: "".join(e["text"] for e in entries if e["stream"] == s) for s in ("stdout", "stderr")
    }
    assert by_stream == {"stdout": stdout, "stderr": stderr}
    assert sum(e["stream"] == "stdout" for e in entries) >= 4  # 30,000+ characters

    # Private: folders 0700, files 0600; the descriptor holds an opaque root
    # and paths relative to it.
    descriptor = record["artifact"]
    assert ref == "artifact:" + descriptor["root"]
    assert descriptor["streams"] == {"stdout": "stdout.txt", "stderr": "stderr.txt"}
    for folder in (
        root,
        root / "tasks",
        root / "artifacts",
        root / "artifacts" / descriptor["root"],
    ):
        assert _mode(folder) == 0o700, folder
    for path in root.rglob("*"):
        if path.is_file():
            assert _mode(path) == 0o600, path


def test_split_secrets_are_redacted_at_every_cut() -> None:
    redactor = Redactor()
    redactor.add("tok-abcdef-123456", "A", "env")
    redactor.add("abcdef", "B", "env")  # inside A: A must still be removed whole
    redactor.add("zzzz-9999", "C", "binding")
    text = "x tok-abcdef-123456zzzz-9999 abcdef tok-abcdef-12345 zzzz-999 tok-abcdef-123456"
    expected = redactor.redact(text, "stored")
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            stream = StreamRedactor(redactor)
            got = stream.feed(text[:i]) + stream.feed(text[i:j]) + stream.feed(text[j:])
            got += stream.feed("", final=True)
            assert got == expected, (i, j)
    # What is held back never exceeds the longest secret less one.
    stream = StreamRedactor(redactor)
    for _ in range(1000):
        stream.feed("ordinary output without secrets " * 10)
        assert stream.pending <= len("tok-abcdef-123456") - 1


def test_artifact_references_stay_inside_the_artifact_folder(make_rt: Any, tmp_path: Path) -> None:
    rt = make_rt()
    tid = _start(rt, "echo fine")
    res = _wait(rt, tid)
    store = TaskStore(rt.workspace / ".charter" / "runtime")
    path = store.artifact_path(res.data["result_ref"], "stdout")
    assert path.read_text() == "fine\n"
    for ref, stream in (
        ("artifact:../../../etc", "stdout"),
        ("artifact:" + "0" * 31 + "/", "stdout"),
        (res.data["result_ref"], "../stdout.txt"),
        ("/etc/passwd", "stdout"),
    ):
        with pytest.raises(TaskStoreError):
            store.artifact_path(ref, stream)

    # A store folder replaced by a symlink is refused, not followed.
    other = make_rt(workspace=tmp_path / "other")
    outside = tmp_path / "outside"
    outside.mkdir()
    runtime = other.workspace / ".charter" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "artifacts").symlink_to(outside)
    refused = dispatch("terminal", {"command": "echo no", "background": True}, other)
    assert (refused.status, refused.rule) == ("error", "task-store-failed")
    assert list(outside.iterdir()) == []


def test_the_store_lives_in_the_runs_own_directory(make_rt: Any) -> None:
    rt = make_rt()
    run_id = "20250101-120000-abc123"
    with calling_session(SimpleNamespace(run_id=run_id)):
        tid = _start(rt, "true")
    _wait(rt, tid)
    runtime = rt.workspace / ".charter" / "runs" / run_id / "runtime"
    assert (runtime / "tasks" / f"{tid}.json").is_file()
    # A run id that is no plain name falls back to the workspace default.
    with calling_session(SimpleNamespace(run_id="../../escape")):
        other = _start(rt, "true")
    _wait(rt, other)
    assert (rt.workspace / ".charter" / "runtime" / "tasks" / f"{other}.json").is_file()
