"""Named sessions in SQLite: a run's conversation is kept, a later run
resumes it, session_search finds earlier sessions, and a run killed with
SIGKILL leaves a consistent file that a later run resumes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.models.script import ScriptProvider
from charter.runtime.run.sessions import SessionStore, SessionStoreError, sessions_path

BLUEPRINT = """[agent]
name = "keeper"

[stages.talk]
mode = "autonomous"
available_tools = ["list_dir", "session_search"]
"""


def _agent(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "agent.leviath").write_text(BLUEPRINT)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return agent, work


def _recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, turns: str) -> ScriptProvider:
    script = tmp_path / f"model-{time.monotonic_ns()}.yaml"
    script.write_text("turns:\n" + turns)
    provider = ScriptProvider.from_file(script, record=True)
    import charter.runtime.models as models

    monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
    return provider


def test_a_resumed_session_continues_the_conversation(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    agent, work = _agent(tmp_path)
    _recorded(monkeypatch, tmp_path, "  - {text: The password hint is periwinkle.}\n")
    first = charter_run(
        agent, "--agent", "keeper", "--model", "script:x", "--task", "remember", "--session",
        "s1", workdir=work,
    )  # fmt: skip
    assert first.code == 0, first.stderr
    provider = _recorded(monkeypatch, tmp_path, "  - {text: It was periwinkle.}\n")
    second = charter_run(
        agent, "--agent", "keeper", "--model", "script:x", "--task", "what was it?",
        "--session", "s1", "--resume", workdir=work,
    )  # fmt: skip
    assert second.code == 0, second.stderr
    [request] = provider.requests
    said = [(m.role, m.content) for m in request.messages]
    assert ("user", "remember") in said
    assert ("assistant", "The password hint is periwinkle.") in said
    assert said[-1] == ("user", "what was it?")
    assert second.of("session_resumed")[0]["session"] == "s1"


def test_a_session_name_is_not_reused_by_accident(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    agent, work = _agent(tmp_path)
    _recorded(monkeypatch, tmp_path, "  - {text: one}\n")
    args = ("--agent", "keeper", "--model", "script:x", "--task", "t", "--session", "s")
    assert charter_run(agent, *args, workdir=work).code == 0
    _recorded(monkeypatch, tmp_path, "  - {text: two}\n")
    again = charter_run(agent, *args, workdir=work)
    assert again.code != 0
    assert "exists; add --resume" in again.stderr
    missing = charter_run(agent, *args[:-1], "other", "--resume", workdir=work)
    assert missing.code != 0 and "no session 'other' to resume" in missing.stderr


def test_session_search_finds_an_earlier_session(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    agent, work = _agent(tmp_path)
    _recorded(monkeypatch, tmp_path, "  - {text: The deploy key lives in vault path ops/alpha.}\n")
    charter_run(
        agent, "--agent", "keeper", "--model", "script:x", "--task", "note it", "--session",
        "old", workdir=work,
    )  # fmt: skip
    _recorded(
        monkeypatch,
        tmp_path,
        "  - {tool_calls: [{name: session_search, arguments: {query: vault path}}]}\n"
        "  - {text: found}\n",
    )
    ran = charter_run(
        agent, "--agent", "keeper", "--model", "script:x", "--task", "look", "--session",
        "new", "--allow", "session_search", workdir=work,
    )  # fmt: skip
    [found] = ran.tool_results("session_search")
    assert "[old]" in found and "ops/alpha" in found


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    SessionStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(SessionStoreError, match="newer Charter"):
        SessionStore(path)


def _charter() -> list[str]:
    return [sys.executable, "-c", "import sys; from charter.compiler.cli import entry; entry()"]


def test_a_run_killed_with_sigkill_leaves_a_session_that_resumes(tmp_path: Path) -> None:
    agent, work = _agent(tmp_path)
    turns = "".join(
        f"  - {{tool_calls: [{{name: list_dir, arguments: {{path: .}}}}], text: turn {i}}}\n"
        for i in range(3000)
    )
    (tmp_path / "long.yaml").write_text("turns:\n" + turns + "  - {text: done}\n")
    (agent / "agent.leviath").write_text(BLUEPRINT + "max_iterations = 5000\n")
    cmd = [
        *_charter(), "run", str(agent), "--agent", "keeper", "--model",
        f"script:{tmp_path / 'long.yaml'}", "--task", "walk", "--session", "k",
        "--workspace", str(work), "--no-user-config", "--json", "--allow", "list_dir",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    path = sessions_path(work)
    deadline = time.monotonic() + 60
    count = 0
    while time.monotonic() < deadline and count < 40:
        time.sleep(0.2)
        if path.exists():
            try:
                with sqlite3.connect(path, timeout=5) as db:
                    count = db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
            except sqlite3.Error:
                count = 0
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert count >= 40, "the run wrote no turns before it was killed"
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = SessionStore(path)
    book = store.open("k", "keeper", resume=True)
    store.close()
    # Nothing half-written: every tool call the history holds has its result.
    called = {c.id for m in book.history for c in m.tool_calls}
    answered = {m.tool_call_id for m in book.history if m.role == "tool"}
    assert len(book.history) >= count
    assert called - answered <= {c.id for c in book.history[-1].tool_calls}
