"""Background terminal tasks and the tools that follow them, scoped to the
run that started them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from charter.runtime.proc import group_running
from charter.runtime.tools.registry import dispatch
from charter.runtime.tools.tasks.lifecycle import _TASKS


def _start(rt: Any, command: str, timeout: int = 30) -> str:
    res = dispatch(
        "terminal", {"command": command, "background": True, "timeout_seconds": timeout}, rt
    )
    assert res.ok, res.content
    assert res.content.startswith("Started background task task_")
    return str(res.data["task_id"])


def test_background_command_runs_and_reports(make_rt: Any) -> None:
    rt = make_rt()
    rt.redactor.add("tok-abcdef-123456", "API_TOKEN", "env")
    tid = _start(rt, "echo out; echo err >&2; echo tok-abcdef-123456; exit 3")
    done = dispatch("yield_until", {"task_id": tid, "timeout_seconds": 10}, rt)
    assert done.ok and done.data["timed_out"] is False
    assert (done.data["status"], done.data["exit_code"]) == ("failed", 3)
    assert "[stdout]\nout" in done.content and "[stderr]\nerr" in done.content
    assert "tok-abcdef-123456" not in done.content and "<redacted>" in done.content
    status = dispatch("task_status", {"task_id": tid}, rt)
    assert status.ok and status.data["status"] == "failed"
    # The model-facing payload holds no owner, environment or directory; the
    # full output is named only by an opaque reference.
    assert set(status.data) == {
        "task_id",
        "kind",
        "status",
        "elapsed_s",
        "exit_code",
        "result_ref",
    }
    assert status.data["result_ref"].startswith("artifact:")
    assert str(rt.workspace) not in status.data["result_ref"]


def test_yield_until_timing_out_is_not_a_failure(make_rt: Any) -> None:
    rt = make_rt()
    tid = _start(rt, "sleep 20")
    t0 = time.monotonic()
    res = dispatch("yield_until", {"task_id": tid, "timeout_seconds": 1}, rt)
    assert res.ok and res.data["timed_out"] is True and res.data["status"] == "running"
    assert "timed_out is not a failure" in res.content
    assert 0.9 < time.monotonic() - t0 < 3
    listed = dispatch("task_list", {"include_completed": False}, rt)
    assert tid in listed.content
    cancel = dispatch("task_control", {"task_id": tid, "command": "cancel"}, rt)
    assert cancel.ok and cancel.data["status"] == "cancelled"
    task = _TASKS[tid]
    assert task.result is not None and task.result.pgid is not None
    assert not group_running(task.result.pgid)  # the whole process tree is gone
    assert dispatch("task_list", {"include_completed": False}, rt).content == (
        "(no background tasks)"
    )
    again = dispatch("task_control", {"task_id": tid, "command": "cancel"}, rt)
    assert again.ok and "already finished" in again.content


def test_the_task_timeout_bounds_a_background_command(make_rt: Any) -> None:
    rt = make_rt()
    tid = _start(rt, "sleep 20", timeout=1)
    res = dispatch("yield_until", {"task_id": tid, "timeout_seconds": 10}, rt)
    assert res.data["status"] == "timed_out" and res.data["timed_out"] is False


def test_cancelling_the_run_stops_its_tasks(make_rt: Any) -> None:
    rt = make_rt()
    tid = _start(rt, "sleep 20")
    rt.cancel.set()
    assert _TASKS[tid].done.wait(10)
    assert _TASKS[tid].status == "cancelled"


def test_another_runs_task_is_indistinguishable_from_a_missing_one(make_rt: Any) -> None:
    mine, other = make_rt(), make_rt()
    tid = _start(mine, "sleep 5")
    try:
        for tool, extra in (
            ("task_status", {}),
            ("yield_until", {"timeout_seconds": 1}),
            ("task_control", {"command": "cancel"}),
            ("check_agent", {}),
        ):
            key = "agent_id" if tool == "check_agent" else "task_id"
            foreign = dispatch(tool, {key: tid, **extra}, other)
            missing = dispatch(tool, {key: "task_000000000000", **extra}, other)
            assert (foreign.status, foreign.rule) == ("error", "unknown-task")
            assert foreign.content.replace(tid, "ID") == missing.content.replace(
                "task_000000000000", "ID"
            )
        assert dispatch("task_list", {}, other).content == "(no background tasks)"
        assert _TASKS[tid].status == "running"  # the other run's cancel did nothing
        assert tid in dispatch("task_list", {"kind": "terminal.exec"}, mine).content
        assert dispatch("task_list", {"kind": "agent.spawn"}, mine).content == (
            "(no background tasks)"
        )
    finally:
        dispatch("task_control", {"task_id": tid, "command": "cancel"}, mine)


def test_background_refuses_secret_bindings_and_bad_cwd(make_rt: Any) -> None:
    rt = make_rt(grants=frozenset({"secret.bind:HOME"}))
    res = dispatch(
        "terminal",
        {"command": "env", "background": True, "secret_bindings": [{"source": "env:HOME"}]},
        rt,
    )
    assert (res.status, res.rule) == ("denied", "terminal-env-invalid")
    res = dispatch("terminal", {"command": "ls", "background": True, "cwd": ".."}, rt)
    assert res.status == "denied" and "task_id" not in res.data


def test_cancel_tasks_is_per_run(make_rt: Any) -> None:
    from charter.runtime.tools.tasks import cancel_tasks

    one, two = make_rt(), make_rt()
    a, b, c = _start(one, "sleep 20"), _start(one, "sleep 20"), _start(two, "sleep 20")
    assert cancel_tasks(one.store) == 2
    assert _TASKS[a].status == _TASKS[b].status == "cancelled"
    assert _TASKS[c].status == "running"
    assert cancel_tasks(two.store) == 1 and _TASKS[c].status == "cancelled"


def test_no_background_command_outlives_the_runtime(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"""
import time
from pathlib import Path
from charter.runtime.redact import Redactor
from charter.runtime.tools.registry import ToolRuntime, dispatch
rt = ToolRuntime(
    workspace=Path({str(tmp_path)!r}), redactor=Redactor(), env={{"PATH": "/usr/bin:/bin"}}
)
res = dispatch("terminal", {{"command": "echo $$ > pid; sleep 30", "background": True}}, rt)
assert res.ok, res.content
while not Path({str(pid_file)!r}).exists():
    time.sleep(0.02)
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")
