"""End to end: the hooks `charter init --serve URL` writes, with the token, in the real clients.

The settings init writes are used as they are (only the server's port is
filled in), and `charter serve` requires the token init wrote (it finds the
token file in the workspace's .charter/). Claude Code's http hook
(``--http``) sends the token from the variable init put in
.claude/settings.local.json, and with the server down its ``onFailure:
block`` blocks the call instead of letting it run; Gemini CLI's curl hook
sends the token file's line. Charter's allow runs the call and its deny
blocks it. Skipped, like the other end-to-end tests, when a client cannot
be installed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _support.clients import (
    FakeModel,
    Place,
    run_claude,
    run_gemini,
)

CHARTER = [sys.executable, "-m", "charter.compiler"]


def _init(place: Place, url: str, client: str = "claude-code") -> Path:
    http = ["--http"] if client == "claude-code" else []
    subprocess.run([*CHARTER, "init", client, str(place.ws), "--serve", url, *http,
                    "--no-user-config"], check=True, capture_output=True)  # fmt: skip
    return place.ws / (".claude" if client == "claude-code" else ".gemini") / "settings.json"


def _serve(place: Place, tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    port_file = tmp / "port"
    proc = subprocess.Popen(
        [*CHARTER, "serve", str(place.ws / ".charter" / "plan.json"), "--agent", "assistant",
         "--listen", "127.0.0.1:0", "--port-file", str(port_file),
         "--log", str(tmp / "decisions.jsonl")],
        stderr=subprocess.PIPE, cwd=place.ws,
    )  # fmt: skip
    for _ in range(600):
        if port_file.exists() and port_file.read_text().strip():
            return proc, int(port_file.read_text())
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("charter serve did not start")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0


def _assert_allowed_and_denied_with_the_token(tmp: Path) -> None:
    """The server's log: it allowed a call and denied one, and no call lacked the token."""
    log = [json.loads(x) for x in (tmp / "decisions.jsonl").read_text().splitlines()]
    decided = [x["decision"] for x in log if x["event"] == "decision"]
    assert "allow" in decided and "deny" in decided
    assert not any("bearer token" in str(x.get("reason")) for x in log)  # every call had it


def _point_at(settings: Path, port: int) -> None:
    settings.write_text(settings.read_text().replace("127.0.0.1:8787", f"127.0.0.1:{port}"))


def _run(claude: Path, place: Place, name: str, call: dict[str, Any], mode: str) -> Any:
    with FakeModel("anthropic", {name: [[place.sub(call)]]}) as model:
        run = run_claude(claude, model, name, workspace=place.ws, home=place.home, mode=mode)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.result(name)


def test_the_http_hook_init_writes_sends_the_token_and_blocks_when_the_server_is_down(
    claude: Path, tmp_path: Path
) -> None:
    place = Place(tmp_path / "p")
    settings = _init(place, "http://127.0.0.1:8787")
    assert "Bearer" not in json.dumps(json.loads(settings.read_text())["hooks"]).replace(
        "Bearer $CHARTER_SERVE_TOKEN", ""
    )  # the committed file holds no token
    proc, port = _serve(place, tmp_path)
    try:
        _point_at(settings, port)
        read = {"name": "Read", "input": {"file_path": "{WS}/README.md"}}
        result = _run(claude, place, "t_read", read, "default")
        assert result is not None and not result["error"], result
        assert "readme-marker" in result["text"]  # allowed, with the token, and it ran
        outside = {"name": "Read", "input": {"file_path": "{OUT}/secret.txt"}}
        result = _run(claude, place, "t_outside", outside, "bypassPermissions")
        assert result is not None and result["error"] and "charter:" in result["text"], result
        assert "outside-marker" not in result["text"]
    finally:
        _stop(proc)
    _assert_allowed_and_denied_with_the_token(tmp_path)

    # the server is down: Claude Code blocks the call (onFailure), never runs it
    write = {"name": "Write", "input": {"file_path": "{WS}/new.txt", "content": "x\n"}}
    result = _run(claude, place, "t_down", write, "bypassPermissions")
    assert not (place.ws / "new.txt").exists(), result


def test_the_curl_hook_init_writes_for_gemini_sends_the_token(gemini: Path, tmp_path: Path) -> None:
    place = Place(tmp_path / "g")
    settings = _init(place, "http://127.0.0.1:8787", "gemini-cli")
    token = (place.ws / ".charter" / "serve" / "token").read_text().split()[-1]
    assert token not in settings.read_text()  # the committed file holds no token
    proc, port = _serve(place, tmp_path)
    try:
        _point_at(settings, port)
        read = {"name": "read_file", "input": {"file_path": "{WS}/README.md"}}
        # the starter policy asks before a write; --gemini-ask deny makes it a deny
        write = {"name": "write_file", "input": {"file_path": "{WS}/new.txt", "content": "x\n"}}
        for name, call in (("g_tok_read", read), ("g_tok_write", write)):
            with FakeModel("gemini", {name: [[place.sub(call)]]}) as model:
                run = run_gemini(gemini, model, name, workspace=place.ws, home=place.home)
            result = run.result(name, gemini=True)
            assert result is not None, run.stderr[-2000:]
            if call is read:
                assert "readme-marker" in result["text"], result
            else:
                assert "charter:" in result["text"], result
                assert not (place.ws / "new.txt").exists()
    finally:
        _stop(proc)
    _assert_allowed_and_denied_with_the_token(tmp_path)
