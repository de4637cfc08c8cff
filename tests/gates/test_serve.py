"""charter serve: the decision server answers as the hook commands do.

The identity test sends every event of the hook corpora (tests/fixtures/hooks:
the Claude Code fixtures and claude_code.jsonl, gemini_cli.jsonl) to the
server and to the command (run in process through the CLI, so its printing is
included) and compares the bytes. Cases whose options change the plan file
(missing, truncated, tampered) are left out: the server refuses such a plan
at start and keeps the last good one on reload, which is tested on its own.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _support.hooks import PERSON_ONLY, WORK_STAGE

from charter.compiler.cli import main
from charter.runtime.serve import (
    Decider,
    DecisionLog,
    DecisionServer,
    FileSource,
    ListenError,
    PlanHolder,
    ServeOptions,
)

HOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"


@pytest.fixture
def plan_file(kit: SimpleNamespace, tmp_path: Path) -> Path:
    """One plan for the three corpora: the union of their test plans' tools."""
    work = {**WORK_STAGE, "read_files": "allow"}
    plan = kit.make_plan(
        {
            "work": work,
            "lean": {"read_file": "allow"},
            "review": {"read_file": "allow"},
            "ops": {"terminal": "allow", "write_file": "allow", "read_file": "allow"},
        },
        tools=[kit.mcp_tool("docs", "lookup")],
        unattended={"work": [t for t in work if t not in PERSON_ONLY]},
    )
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    return path


class Running:
    def __init__(self, server: DecisionServer, log: DecisionLog | None) -> None:
        self.server = server
        self.log = log
        self.port = server.address[1]

    def post(
        self, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("POST", path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()


def _start(
    plan: Path,
    options: ServeOptions,
    *,
    log: Path | None = None,
    token: str | None = None,
    read_timeout: float = 10.0,
    host: str = "127.0.0.1",
    **limits: Any,
) -> Running:
    holder = PlanHolder(FileSource(plan))
    dlog = DecisionLog(log, env={}) if log is not None else None
    decider = Decider(holder, options, log=dlog, workers=4)
    server = DecisionServer(decider, host, 0, token=token, read_timeout=read_timeout, **limits)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return Running(server, dlog)


def _stop(running: Running) -> None:
    running.server.shutdown()
    running.server.close()
    if running.log is not None:
        running.log.close()


@pytest.fixture
def serve(plan_file: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[Running] = []

    def start(options: ServeOptions | None = None, **kw: Any) -> Running:
        r = _start(kw.pop("plan", plan_file), options or ServeOptions(), **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        _stop(r)


# -- the corpus ---------------------------------------------------------------------


def _corpus(workspace: Path) -> list[tuple[str, str, bytes, dict[str, Any]]]:
    """(name, kind, raw event, options) for every case the server can be given."""
    ws = str(workspace)
    out: list[tuple[str, str, bytes, dict[str, Any]]] = []
    for path in sorted(HOOKS.glob("*.json")):
        raw = path.read_bytes().replace(b"__WORKSPACE__", ws.encode())
        out.append((path.name, "claude-code", raw, {}))
    for line in (HOOKS / "claude_code.jsonl").read_text().splitlines():
        case = json.loads(line)
        event: dict[str, Any] = {
            "cwd": ws,
            "hook_event_name": "PreToolUse",
            "tool_name": case["tool"],
            "tool_input": case["input"],
            "tool_use_id": "toolu_01case",
        }
        if case.get("mode", "default") is not None:
            event["permission_mode"] = case.get("mode", "default")
        if "agent_id" in case:
            event["agent_id"] = case["agent_id"]
        raw = json.dumps(event).replace("__WORKSPACE__", ws).encode()
        out.append((case["name"], "claude-code", raw, case.get("options", {})))
    for line in (HOOKS / "gemini_cli.jsonl").read_text().splitlines():
        case = json.loads(line)
        if "raw" in case:
            raw = str(case["raw"]).encode("utf-8", "surrogateescape")
        elif "raw_b64" in case:
            raw = base64.b64decode(case["raw_b64"])
        else:
            raw = json.dumps(case["event"]).replace("__WORKSPACE__", ws).encode()
            if case.get("pad_to_bytes"):
                raw += b" " * (case["pad_to_bytes"] - len(raw))
        opts = dict(case.get("options", {}))
        if "workspace" in opts:
            opts["workspace"] = opts["workspace"].replace("__WORKSPACE__", ws)
        out.append((case["name"], "gemini-cli", raw, opts))
    return [c for c in out if c[3].get("plan", "good") == "good"]


def _command(kind: str, plan: Path, raw: bytes, opts: dict[str, Any], monkeypatch: Any) -> bytes:
    argv = ["hook", kind, "--plan", str(plan)]
    for key in ("agent", "stage", "workspace"):
        if opts.get(key):
            argv += [f"--{key}", opts[key]]
    for tool in opts.get("allow", ()):
        argv += ["--allow", tool]
    if opts.get("ask"):
        argv += ["--ask", opts["ask"]]
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    monkeypatch.setattr(sys, "stdout", out)
    assert main(argv) == 0
    return out.getvalue().encode("ascii")


def test_the_server_answers_byte_for_byte_as_the_command(
    serve: Any, plan_file: Path, workspace: Path, monkeypatch: Any
) -> None:
    servers: dict[tuple[Any, ...], Running] = {}
    compared = 0
    for name, kind, raw, opts in _corpus(workspace):
        key = (
            opts.get("agent"),
            opts.get("stage"),
            opts.get("workspace"),
            tuple(opts.get("allow", ())),
        )
        if key not in servers:
            servers[key] = serve(
                ServeOptions(agent=key[0], stage=key[1], workspace=key[2], allow=key[3])
            )
        path = f"/v1/hooks/{kind}" + (f"?ask={opts['ask']}" if opts.get("ask") else "")
        status, body = servers[key].post(path, raw)
        expected = _command(kind, plan_file, raw, opts, monkeypatch)
        assert (status, body) == (200, expected), name
        compared += 1
    assert compared >= 150


# -- reloads ---------------------------------------------------------------------------


def test_the_plan_is_reloaded_by_digest_and_a_damaged_one_is_refused(
    serve: Any, kit: SimpleNamespace, tmp_path: Path, workspace: Path
) -> None:
    plan_path = tmp_path / "live.json"
    first = kit.make_plan({"work": {"read_file": "allow"}})
    plan_path.write_text(first.to_json())
    running = serve(plan=plan_path)
    event = json.dumps(
        {
            "cwd": str(workspace),
            "tool_name": "Read",
            "tool_input": {"file_path": "notes.txt"},
            "permission_mode": "default",
        }
    ).encode()

    def decision() -> str:
        _, body = running.post("/v1/hooks/claude-code", event)
        return str(json.loads(body)["hookSpecificOutput"]["permissionDecision"])

    assert decision() == "allow"
    assert running.get("/v1/health")[1]["plan"]["digest"] == first.digest

    second = kit.make_plan({"work": {"read_file": "deny"}})
    tmp = tmp_path / "live.tmp"
    tmp.write_text(second.to_json())
    os.replace(tmp, plan_path)
    assert decision() == "deny"  # the very next request uses the new plan
    health = running.get("/v1/health")[1]
    assert (health["plan"]["digest"], health["reloads"]) == (second.digest, 1)

    text = second.to_json()
    plan_path.write_text(text[: len(text) // 2])  # cut short while being written
    assert decision() == "deny"  # still the last good plan
    health = running.get("/v1/health")[1]
    assert health["plan"]["digest"] == second.digest
    assert "the plan" in health["last_error"] or health["last_error"]

    plan_path.write_text(first.to_json())
    assert decision() == "allow"
    assert running.get("/v1/health")[1]["last_error"] is None


# -- limits, authentication, failure answers ---------------------------------------------------


def test_every_refusal_of_a_hook_request_is_a_200_deny(serve: Any, workspace: Path) -> None:
    """Claude Code and Gemini CLI run the call on any other status."""
    running = serve(token="s3cret-token-value")
    event = json.dumps({"cwd": str(workspace), "tool_name": "Read", "tool_input": {}}).encode()
    for headers, needle in (
        ({}, "no valid bearer token"),
        ({"Authorization": "Bearer wrong"}, "no valid bearer token"),
        ({"Authorization": "Bearer s3cret-token-value", "Host": "attacker.example"}, "Host header"),
    ):
        status, body = running.post("/v1/hooks/claude-code", event, headers)
        out = json.loads(body)["hookSpecificOutput"]
        assert (status, out["permissionDecision"]) == (200, "deny")
        assert needle in out["permissionDecisionReason"]
        status, body = running.post("/v1/hooks/gemini-cli", event, headers)
        assert (status, json.loads(body)["decision"]) == (200, "deny")
    ok = {"Authorization": "Bearer s3cret-token-value"}
    status, body = running.post("/v1/hooks/gemini-cli?ask=sometimes", event, ok)
    assert json.loads(body)["decision"] == "deny" and b"ask=" in body
    assert running.get("/v1/health")[0] == 401
    assert running.get("/v1/health", ok)[0] == 200
    assert running.post("/v1/check", b'{"tool": "read_file"}', {})[0] == 401


def test_a_non_loopback_address_needs_a_token(plan_file: Path) -> None:
    holder = PlanHolder(FileSource(plan_file))
    with pytest.raises(ListenError, match="needs a bearer token"):
        DecisionServer(Decider(holder, ServeOptions()), "0.0.0.0", 0)


def _closed_answer(conn: socket.socket) -> tuple[bytes, bytes]:
    """The head and body of the answer on ``conn``, read until the server
    closes it (a request it refuses is always answered with Connection: close)."""
    data = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    conn.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def test_an_oversized_body_is_denied_as_the_command_denies_it(serve: Any) -> None:
    running = serve()
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=30)
    head = (
        "POST /v1/hooks/gemini-cli HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Length: {100 * 1024 * 1024}\r\n\r\n"
    ).encode()
    conn.sendall(head + b" " * (8 * 1024 * 1024 + 1))
    head_text, body = _closed_answer(conn)
    assert head_text.startswith(b"HTTP/1.1 200") and b"Connection: close" in head_text
    assert json.loads(body) == {
        "decision": "deny",
        "reason": "charter: the hook event is larger than 8388608 bytes",
    }


@pytest.mark.parametrize(
    ("route", "key"),
    [("/v1/hooks/claude-code", "hookSpecificOutput"), ("/v1/hooks/gemini-cli", "decision")],
)
@pytest.mark.parametrize("shape", ["one long header", "too many headers"])
def test_headers_it_cannot_read_get_the_hooks_deny_not_a_bare_error(
    serve: Any, route: str, key: str, shape: str
) -> None:
    # The standard library answers these with 431, and a client's hook takes
    # any non-2xx answer as no objection: the call would run.
    running = serve()
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=30)
    if shape == "one long header":
        extra = "X-Pad: " + "a" * 70_000 + "\r\n"
    else:
        extra = "".join(f"X-Pad-{i}: a\r\n" for i in range(200))
    head = f"POST {route} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Content-Length: 2\r\n\r\n{{}}"
    conn.sendall(head.encode())
    head_text, body = _closed_answer(conn)
    assert head_text.startswith(b"HTTP/1.1 200"), head_text
    answer = json.loads(body)
    assert key in answer
    assert "deny" in json.dumps(answer)


def test_a_request_that_trickles_in_is_cut_off(serve: Any) -> None:
    running = serve(read_timeout=0.5)
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=10)
    conn.sendall(b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    start = time.monotonic()
    closed = False
    while time.monotonic() - start < 5:
        try:
            conn.sendall(b"X-Slow: 1\r\n")
            if conn.recv(1, socket.MSG_DONTWAIT) == b"":
                closed = True
                break
        except BlockingIOError:
            pass
        except OSError:
            closed = True
            break
        time.sleep(0.1)
    conn.close()
    assert closed and time.monotonic() - start < 3


def test_a_hanging_decision_is_denied_within_the_time_limit(
    serve: Any, workspace: Path, monkeypatch: Any
) -> None:
    from charter.runtime.hooks import claude_code

    release = threading.Event()

    def hang(raw: bytes, **kw: Any) -> dict[str, Any]:
        release.wait(20)
        return claude_code.hook_output("allow", "too late")

    monkeypatch.setattr(claude_code, "decide_event", hang)
    running = serve(ServeOptions(time_limit=0.5))
    start = time.monotonic()
    status, body = running.post("/v1/hooks/claude-code", b"{}")
    release.set()
    assert time.monotonic() - start < 5
    out = json.loads(body)["hookSpecificOutput"]
    assert (status, out["permissionDecision"]) == (200, "deny")
    assert out["permissionDecisionReason"] == "charter: no decision within 0.5 s"


def test_a_hanging_decision_does_not_hold_up_the_requests_behind_it(
    serve: Any, workspace: Path, monkeypatch: Any
) -> None:
    # Decisions are drained from one queue by pool threads; one that hangs
    # (a stat on a dead mount, say) keeps its own thread, and the next
    # request is decided by another, long before the hung one's limit.
    from charter.runtime.hooks import claude_code

    release = threading.Event()
    real = claude_code.decide_event

    def maybe_hang(raw: bytes, **kw: Any) -> dict[str, Any]:
        if b"hang-here" in raw:
            release.wait(20)
        return real(raw, **kw)

    monkeypatch.setattr(claude_code, "decide_event", maybe_hang)
    running = serve(ServeOptions(time_limit=10))
    hung = {"cwd": str(workspace), "tool_name": "Read", "tool_input": {"file_path": "hang-here"}}
    fine = {"cwd": str(workspace), "tool_name": "Bash", "tool_input": {"command": "ls"}}
    first: list[tuple[int, bytes]] = []
    waiting = threading.Thread(
        target=lambda: first.append(
            running.post("/v1/hooks/claude-code", json.dumps(hung).encode())
        )
    )
    waiting.start()
    time.sleep(0.3)  # the first request is being decided (and hangs)
    try:
        start = time.monotonic()
        for _ in range(3):
            status, body = running.post("/v1/hooks/claude-code", json.dumps(fine).encode())
            out = json.loads(body)["hookSpecificOutput"]
            assert (status, out["permissionDecision"]) == (200, "allow")
        assert time.monotonic() - start < 2, "requests waited behind a hung decision"
        assert not first, "the hung request was answered before it was released"
    finally:
        release.set()
        waiting.join(30)
    assert first and json.loads(first[0][1])["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_work_for_a_decision_answered_at_the_time_limit_stops(
    serve: Any, workspace: Path, monkeypatch: Any
) -> None:
    # The client has its deny at the limit; the thread still judging the
    # command must not go on spending a core on an answer nobody reads.
    from charter.runtime.shell.guard import commands

    judged: list[float] = []
    slow = commands._command

    def one_command(*args: Any) -> None:
        judged.append(time.monotonic())
        time.sleep(0.002)
        slow(*args)

    monkeypatch.setattr(commands, "_command", one_command)
    running = serve(ServeOptions(time_limit=0.3))
    command = "; ".join(["true"] * 2_000)  # about 4 s of work at this pace
    ev = {"cwd": str(workspace), "tool_name": "Bash", "tool_input": {"command": command}}
    status, body = running.post("/v1/hooks/claude-code", json.dumps(ev).encode())
    answered = time.monotonic()
    out = json.loads(body)["hookSpecificOutput"]
    assert (status, out["permissionDecision"]) == (200, "deny")
    time.sleep(1.5)
    assert judged, "the decision never reached the guard"
    assert len(judged) < 1_000
    # (without the deadline it runs on for about 4 s)
    assert max(judged) < answered + 1.0, "the guard went on after the answer"


def test_concurrent_requests_are_all_answered(serve: Any, workspace: Path) -> None:
    running = serve()
    events = {
        "allow": {"tool_name": "Bash", "tool_input": {"command": "ls -la src | wc -l"}},
        "deny": {"tool_name": "Bash", "tool_input": {"command": "echo x > /etc/motd"}},
        "ask": {"tool_name": "Write", "tool_input": {"file_path": "x.txt", "content": ""}},
    }
    wrong: list[str] = []

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=60)
        for i in range(15):
            want = ("allow", "deny", "ask")[(n + i) % 3]
            ev = {"cwd": str(workspace), "permission_mode": "default", **events[want]}
            conn.request("POST", "/v1/hooks/claude-code", body=json.dumps(ev))
            got = json.loads(conn.getresponse().read())["hookSpecificOutput"]
            if got["permissionDecision"] != want:
                wrong.append(f"{want}: {got}")
        conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert wrong == []


def test_check_answers_as_charter_check(serve: Any, plan_file: Path, workspace: Path) -> None:
    running = serve(ServeOptions(workspace=str(workspace)))
    status, body = running.post(
        "/v1/check", json.dumps({"tool": "read_file", "args": {"path": "/etc/passwd"}}).encode()
    )
    out = json.loads(body)
    assert (status, out["decision"], out["rule"]) == (200, "deny", "path-outside")
    status, body = running.post(
        "/v1/check", json.dumps({"tool": "shell", "stage": "nope"}).encode()
    )
    assert status == 400 and "no stage named" in json.loads(body)["reason"]
    assert running.post("/v1/check", b"not json")[0] == 400
    twice = b'{"tool": "read_file", "args": {"path": "/etc/passwd", "path": "README.md"}}'
    status, body = running.post("/v1/check", twice)
    assert status == 400 and "'path' appears more than once" in json.loads(body)["reason"]
    deep = b'{"tool": "read_file", "args": {"path": ' + b"[" * 5000 + b"]" * 5000 + b"}}"
    status, body = running.post("/v1/check", deep)
    assert status == 400 and "nested deeper" in json.loads(body)["reason"]


def test_every_answer_is_on_disk_before_the_client_has_it(
    serve: Any, tmp_path: Path, workspace: Path, monkeypatch: Any
) -> None:
    # A slow disk: the answer waits for it (group commit), so a server killed
    # the moment after answering has logged what it answered.
    from charter.runtime.audit import AuditLog

    slow = AuditLog.sync

    def sync(self: AuditLog) -> None:
        time.sleep(0.3)
        slow(self)

    monkeypatch.setattr(AuditLog, "sync", sync)
    log = tmp_path / "decisions.jsonl"
    running = serve(log=log)
    answers: list[str] = []

    def client(n: int) -> None:
        ev = {"cwd": str(workspace), "tool_name": "Bash", "tool_input": {"command": f"ls d{n}"}}
        _, body = running.post("/v1/hooks/claude-code", json.dumps(ev).encode())
        # read at once, before anything else can write the file
        logged = log.read_text()
        answers.append(f"ls d{n}" if f'"input": "ls d{n}"' in logged else f"MISSING ls d{n}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(answers) == sorted(f"ls d{n}" for n in range(8))


def test_a_decision_that_cannot_be_logged_is_not_given(
    serve: Any, tmp_path: Path, workspace: Path, monkeypatch: Any
) -> None:
    from charter.runtime.audit import AuditLog

    def broken(self: AuditLog) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(AuditLog, "sync", broken)
    running = serve(log=tmp_path / "decisions.jsonl")
    ev = {"cwd": str(workspace), "tool_name": "Bash", "tool_input": {"command": "ls"}}
    status, body = running.post("/v1/hooks/claude-code", json.dumps(ev).encode())
    out = json.loads(body)["hookSpecificOutput"]
    assert (status, out["permissionDecision"]) == (200, "deny")
    assert "decision log" in out["permissionDecisionReason"]


def test_the_decision_log_redacts_secrets(serve: Any, tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    running = serve(log=log)
    command = "curl -H 'Authorization: Bearer sk-live-0123456789abcdef' https://api.example/x"
    event = {
        "cwd": str(workspace),
        "session_id": "s-1",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    status, body = running.post("/v1/hooks/claude-code", json.dumps(event).encode())
    assert status == 200
    running.log.close()
    running.log = None
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    (line,) = [entry for entry in lines if entry["event"] == "decision"]
    assert (line["endpoint"], line["session"], line["tool"]) == ("claude-code", "s-1", "Bash")
    assert line["decision"] == json.loads(body)["hookSpecificOutput"]["permissionDecision"]
    assert line["args"].startswith("sha256:") and line["plan"].startswith("sha256:")
    text = log.read_text()
    assert "sk-live-0123456789abcdef" not in text
    assert "<redacted:" in text


@pytest.mark.parametrize(
    ("env", "command"),
    [
        ({}, "ls -la"),
        ({"DEPLOY_TOKEN": "tok-5up3r-s3cr3t-value"}, "echo tok-5up3r-s3cr3t-value"),
        ({}, "curl -H 'Authorization: Bearer sk-live-0123456789abcdef' https://a.example"),
    ],
)
def test_a_prepared_line_hides_what_the_environment_and_the_call_reveal(
    env: dict[str, str], command: str
) -> None:
    from charter.runtime.audit import args_digest
    from charter.runtime.serve.log import LinePreparer

    args = {"command": command}
    fields = {"decision": "allow", "reason": f"ran {command}", "us": 12}
    out = LinePreparer(env).prepare(fields, args)
    secrets = [*env.values(), "sk-live-0123456789abcdef"]
    hidden = [s for s in secrets if s in command]
    text = json.dumps(out)
    assert not any(s in text for s in hidden)
    assert out["us"] == 12 and out["decision"] == "allow"
    if hidden:
        assert "<redacted:" in out["reason"] and "<redacted:" in out["input"]
        assert out["args"] != args_digest(args)  # the digest is of the redacted text
    else:  # nothing to hide: every text as it came
        assert (out["reason"], out["input"], out["args"]) == (
            fields["reason"],
            command,
            args_digest(args),
        )


def test_a_failed_request_is_one_line_on_stderr_and_a_deny(
    serve: Any, workspace: Path, capsys: Any, monkeypatch: Any
) -> None:
    """What the HTTP side cannot handle (a bug) is answered with the hook's
    deny and reported in one line naming the client and the kind of failure
    (not its text, which may quote a token); never a traceback."""

    def broken(self: Decider, kind: str, raw: bytes, **kw: Any) -> Any:
        raise ValueError("Bearer s3cret in the text")

    monkeypatch.setattr(Decider, "hook_job", broken)
    running = serve(ServeOptions())
    event = json.dumps({"cwd": str(workspace), "tool_name": "Read", "tool_input": {}}).encode()
    status, body = running.post("/v1/hooks/claude-code", event)
    out = json.loads(body)["hookSpecificOutput"]
    assert (status, out["permissionDecision"]) == (200, "deny")
    err = capsys.readouterr().err
    assert err == "charter serve: a request from 127.0.0.1 failed (ValueError); answered deny\n"


def test_a_second_server_cannot_write_the_same_log(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    first = DecisionLog(log, env={})
    try:
        with pytest.raises(OSError, match="another charter serve"):
            DecisionLog(log, env={})
    finally:
        first.close()
    DecisionLog(log, env={}).close()  # free again once the first has stopped


def test_a_cleanly_stopped_decision_log_verifies_across_restarts(tmp_path: Path) -> None:
    from charter.runtime.audit import verify_log

    log = tmp_path / "decisions.jsonl"
    for _ in range(2):  # two server sessions appending to one file
        d = DecisionLog(log, env={})
        d.record("serve_started", {"url": "http://127.0.0.1:1"})
        d.record("decision", {"decision": "allow"}, args={"command": "ls"})
        d.record("serve_stopped", {"url": "http://127.0.0.1:1"}).durable(10)
        d.close()
    checked = verify_log(log)
    assert checked.ok, checked.problem
    assert checked.events == 6


def test_the_decision_log_is_rotated_and_every_file_verifies(tmp_path: Path) -> None:
    import json as _json

    from charter.runtime.audit import verify_log

    log = tmp_path / "decisions.jsonl"
    d = DecisionLog(log, env={}, max_bytes=2_000, keep=3)
    d.record("serve_started", {"url": "u"})
    for n in range(60):
        d.record("decision", {"decision": "allow", "n": n}, args={"command": f"ls {n}"}).durable(10)
    d.record("serve_stopped", {"url": "u"}).durable(10)
    d.close()
    files = sorted(tmp_path.glob("decisions.jsonl*"))
    kept = [f for f in files if not f.name.endswith(".lock")]
    assert [f.name for f in kept] == [
        "decisions.jsonl",
        "decisions.jsonl.1",
        "decisions.jsonl.2",
        "decisions.jsonl.3",
    ]
    for f in kept:
        assert f.stat().st_size < 4_000, f  # bounded
        checked = verify_log(f)
        assert checked.ok, (f.name, checked.problem)
    # the newest file names the head of the one before it
    first = _json.loads(log.read_text().splitlines()[0])
    older = _json.loads((tmp_path / "decisions.jsonl.1").read_text().splitlines()[-1])
    assert first["event"] == "log_continued" and first["head"] == older["hash"]


# -- neighbours that send slowly, too much, or nothing ---------------------------------------


def _hook_event(workspace: Path, command: str) -> bytes:
    ev = {"cwd": str(workspace), "permission_mode": "default", "tool_name": "Bash",
          "tool_input": {"command": command}}  # fmt: skip
    return json.dumps(ev).encode()


def _half_requests(port: int, n: int, *, with_head: bool = False) -> list[socket.socket]:
    """``n`` connections that each send part of a request and then wait."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if with_head:
            s.sendall(b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Length: 500\r\n\r\n{\"cwd\": ")  # fmt: skip
        else:
            s.sendall(b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        out.append(s)
    return out


def test_half_sent_requests_do_not_delay_an_honest_client(serve: Any, workspace: Path) -> None:
    """200 connections that send half a request (head or body) hold no
    worker: with 4 decision workers, an honest request is decided at once."""
    running = serve()
    stalled = _half_requests(running.port, 100) + _half_requests(running.port, 100, with_head=True)
    try:
        times = []
        for n in range(20):
            start = time.monotonic()
            status, body = running.post("/v1/hooks/claude-code", _hook_event(workspace, f"ls {n}"))
            times.append(time.monotonic() - start)
            out = json.loads(body)["hookSpecificOutput"]
            assert (status, out["permissionDecision"]) == (200, "allow")
        assert max(times) < 1.0, times
    finally:
        for s in stalled:
            s.close()


def test_at_the_connection_bound_the_stalled_make_room(serve: Any, workspace: Path) -> None:
    """Past the bound, the connection that has not yet sent a whole request
    for longest is closed for the new one; a honest client still gets its answer."""
    running = serve(max_connections=8)
    stalled = _half_requests(running.port, 20)
    try:
        status, body = running.post("/v1/hooks/claude-code", _hook_event(workspace, "ls"))
        assert status == 200
        assert json.loads(body)["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert running.server.open_connections <= 8
        closed = 0
        for s in stalled[:12]:  # the oldest were closed to make room
            s.settimeout(5)
            try:
                closed += s.recv(1) == b""
            except OSError:
                closed += 1
        assert closed == 12
    finally:
        for s in stalled:
            s.close()


def test_a_body_that_trickles_in_is_denied_at_the_read_deadline(serve: Any) -> None:
    running = serve(read_timeout=0.5)
    (conn,) = _half_requests(running.port, 1, with_head=True)
    start = time.monotonic()
    head, body = _closed_answer(conn)
    assert time.monotonic() - start < 3
    assert head.startswith(b"HTTP/1.1 200")
    out = json.loads(body)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "did not arrive in time" in out["permissionDecisionReason"]


def test_an_idle_keep_alive_connection_is_closed(serve: Any, workspace: Path) -> None:
    running = serve(idle_timeout=0.3)
    conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=10)
    conn.request("POST", "/v1/hooks/claude-code", body=_hook_event(workspace, "ls"))
    assert conn.getresponse().read()
    assert running.server.open_connections == 1
    deadline = time.monotonic() + 5
    while running.server.open_connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running.server.open_connections == 0
    conn.close()


def test_pipelined_requests_are_answered_in_arrival_order(serve: Any, workspace: Path) -> None:
    running = serve()
    commands = ["ls", "echo x > /etc/motd", "ls -la", "rm -rf /", "pwd"]
    raw = b""
    for c in commands:
        body = _hook_event(workspace, c)
        raw += (
            b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=10)
    conn.sendall(raw)
    reader = conn.makefile("rb")
    decisions = []
    for _ in commands:
        assert reader.readline().startswith(b"HTTP/1.1 200")
        length = 0
        while (line := reader.readline()) != b"\r\n":
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        answer = json.loads(reader.read(length))
        decisions.append(answer["hookSpecificOutput"]["permissionDecision"])
    conn.close()
    assert decisions == ["allow", "deny", "allow", "deny", "allow"]


@pytest.mark.parametrize(
    ("route", "key"),
    [("/v1/hooks/claude-code", "hookSpecificOutput"), ("/v1/hooks/gemini-cli", "decision")],
)
def test_a_too_large_request_after_a_good_one_is_still_the_hooks_deny(
    serve: Any, workspace: Path, route: str, key: str
) -> None:
    """On a keep-alive connection (as Claude Code keeps one), the second
    request's head is too long: still the hook's deny with status 200."""
    running = serve()
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=10)
    body = _hook_event(workspace, "ls")
    good = f"POST {route} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n"
    conn.sendall(good.encode() + body)
    resp = http.client.HTTPResponse(conn)
    resp.begin()
    assert resp.status == 200 and resp.read()
    pad = "X-Pad: " + "a" * 60_000 + "\r\n"
    bad = f"POST {route} HTTP/1.1\r\nHost: 127.0.0.1\r\n{pad}Content-Length: 2\r\n\r\n{{}}"
    for i in range(0, len(bad), 8192):  # arrives in parts, as over a real network
        conn.sendall(bad[i : i + 8192].encode())
        time.sleep(0.01)
    head, answer = _closed_answer(conn)
    assert head.startswith(b"HTTP/1.1 200"), head
    assert key in json.loads(answer) and "deny" in answer.decode()


def test_a_chunked_body_is_read_and_bounded(serve: Any, workspace: Path) -> None:
    running = serve()
    body = _hook_event(workspace, "ls")
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=30)
    conn.sendall(
        b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    )  # fmt: skip
    resp = http.client.HTTPResponse(conn)
    resp.begin()
    assert json.loads(resp.read())["hookSpecificOutput"]["permissionDecision"] == "allow"
    conn.close()
    # a chunked body past the bound: denied once the bound is passed, not
    # after reading whatever the client sends
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=30)
    conn.sendall(b"POST /v1/hooks/gemini-cli HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
    chunk = b"100000\r\n" + b" " * 0x100000 + b"\r\n"
    try:
        for _ in range(12):
            conn.sendall(chunk)
    except OSError:
        pass  # closed once past the bound
    head, answer = _closed_answer(conn)
    assert head.startswith(b"HTTP/1.1 200")
    assert json.loads(answer) == {
        "decision": "deny",
        "reason": "charter: the hook event is larger than 8388608 bytes",
    }


def test_a_refusal_is_dropped_not_waited_for_when_the_log_is_behind(
    tmp_path: Path, capsys: Any
) -> None:
    """A client without the token can send refused requests as fast as it
    likes; their lines never make the event loop wait for the log."""
    log = DecisionLog(tmp_path / "d.jsonl", env={}, start=False)  # a writer far behind
    for n in range(1024):
        log.record("decision", {"n": n})
    start = time.monotonic()
    line = log.record_later("decision", lambda: ({"decision": "deny"}, None), block=False)
    assert time.monotonic() - start < 1
    assert line.finished and not line.ok
    assert "were not logged" in capsys.readouterr().err
    log.start()
    log.close()
    assert len((tmp_path / "d.jsonl").read_text().splitlines()) == 1024


def test_a_connection_being_answered_is_never_closed_to_make_room(
    serve: Any, workspace: Path, monkeypatch: Any
) -> None:
    """At the bound the stalled make room, but never a connection whose
    request is being decided: its client gets its answer."""
    from charter.runtime.hooks import claude_code

    slow = claude_code.decide_event

    def deliberate(raw: bytes, **kw: Any) -> dict[str, Any]:
        time.sleep(1.0)
        return slow(raw, **kw)

    monkeypatch.setattr(claude_code, "decide_event", deliberate)
    running = serve(max_connections=3)
    got: list[tuple[int, bytes]] = []
    asking = threading.Thread(
        target=lambda: got.append(
            running.post("/v1/hooks/claude-code", _hook_event(workspace, "ls"))
        )
    )
    asking.start()
    time.sleep(0.3)  # its request is being decided
    stalled = _half_requests(running.port, 10)
    asking.join(30)
    for s in stalled:
        s.close()
    ((status, body),) = got
    assert status == 200
    assert json.loads(body)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_connections_from_one_address_are_bounded(serve: Any, workspace: Path) -> None:
    running = serve(max_connections=100, max_per_peer=4)
    stalled = _half_requests(running.port, 10)
    try:
        time.sleep(0.2)
        assert running.server.open_connections <= 4
        status, _ = running.post("/v1/hooks/claude-code", _hook_event(workspace, "ls"))
        assert status == 200
    finally:
        for s in stalled:
            s.close()


def test_request_data_held_at_once_is_bounded(serve: Any, workspace: Path) -> None:
    """Each connection may hold up to 8 MiB of body; all of them together
    are bounded too (here to one body), and the request that would pass the
    bound is the hook's deny, not a connection that hangs on."""
    running = serve(buffer_bytes=1)  # raised to one whole body: 8 MiB + 1
    head = (
        "POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Length: {6 * 1024 * 1024}\r\n\r\n"
    ).encode()
    first = socket.create_connection(("127.0.0.1", running.port), timeout=30)
    first.sendall(head + b" " * (5 * 1024 * 1024))
    time.sleep(0.5)
    second = socket.create_connection(("127.0.0.1", running.port), timeout=30)
    try:
        second.sendall(head + b" " * (4 * 1024 * 1024))
    except OSError:
        pass  # answered and closed while still sending
    answer_head, body = _closed_answer(second)
    assert answer_head.startswith(b"HTTP/1.1 200")
    reason = json.loads(body)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "too much unread request data" in reason
    first.close()
    time.sleep(0.3)  # its data is let go with it
    status, body = running.post("/v1/hooks/claude-code", _hook_event(workspace, "ls"))
    assert json.loads(body)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_a_client_that_half_closes_after_its_request_still_gets_the_answer(
    serve: Any, workspace: Path
) -> None:
    running = serve()
    body = _hook_event(workspace, "ls")
    conn = socket.create_connection(("127.0.0.1", running.port), timeout=30)
    conn.sendall(
        b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    conn.shutdown(socket.SHUT_WR)  # as `nc -q0` or a shell pipe does
    head, answer = _closed_answer(conn)
    assert head.startswith(b"HTTP/1.1 200")
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
