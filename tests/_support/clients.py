"""The real Claude Code and Gemini CLI, driven headless against a fake model.

Used by tests/e2e (a small set that runs in the test suite) and
bench/client_matrix.py (every mode and more scenarios).

* :func:`install` puts a pinned client version from npm into a cache folder
  (``$CHARTER_E2E_CACHE``, default ``~/.cache/charter-e2e``), one folder per
  package and version, reused by later runs; a lock keeps two test runs from
  installing into the same folder at once.
* :class:`FakeModel` is a scripted stand-in for the Anthropic Messages API or
  the Gemini API on 127.0.0.1: the prompt names a scenario
  (``SCENARIO=NAME``), and the model plays turn N of it, N being the number
  of model messages already in the request (so it keeps no state and a
  retried request gets the same answer). Every request is kept, so the tool
  results the client sent back can be read afterwards.
* :func:`run_claude` and :func:`run_gemini` run one headless session in a
  fresh home directory, with only loopback reachable through the base URL.

Nothing here talks to anything but 127.0.0.1 and the npm registry (install).
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "CLAUDE_CODE_VERSION",
    "GEMINI_CLI_VERSION",
    "ClientRun",
    "FakeModel",
    "InstallError",
    "Place",
    "compile_policy",
    "install_claude",
    "install_gemini",
    "run_claude",
    "run_gemini",
]

# The versions the end-to-end tests were run with (see docs/clients.md).
CLAUDE_CODE_VERSION = os.environ.get("CHARTER_E2E_CLAUDE_VERSION", "2.1.332")
GEMINI_CLI_VERSION = os.environ.get("CHARTER_E2E_GEMINI_VERSION", "0.61.0")

_MARK = re.compile(r"SCENARIO=([A-Za-z0-9_\-]+)")
_TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class InstallError(RuntimeError):
    """A client could not be installed; the message says why."""


def cache_dir() -> Path:
    given = os.environ.get("CHARTER_E2E_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "charter-e2e"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _npm_install(package: str, version: str) -> Path:
    """The folder holding ``package@version``'s node_modules, installed once."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise InstallError("node and npm are not installed")
    name = package.rsplit("/", 1)[-1]
    target = cache_dir() / f"{name}-{version}"
    with _locked(cache_dir() / f".{name}-{version}.lock"):
        if (target / ".complete").exists():
            return target
        staging = cache_dir() / f".{name}-{version}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        proc = subprocess.run(
            [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund",
             "--loglevel", "error", f"{package}@{version}"],
            capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise InstallError(f"npm install {package}@{version} failed: {proc.stderr[-800:]}")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        (target / ".complete").write_text(f"{package}@{version}\n")
    return target


def install_claude(version: str = CLAUDE_CODE_VERSION) -> Path:
    """Claude Code's native binary. npm may skip the package's postinstall
    (install scripts are not always allowed), which leaves the wrapper a
    stub; the platform package with the binary is installed all the same."""
    root = _npm_install("@anthropic-ai/claude-code", version)
    system = {"Linux": "linux", "Darwin": "darwin"}.get(
        platform.system(), platform.system().lower()
    )
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    binary = root / "node_modules" / "@anthropic-ai" / f"claude-code-{system}-{machine}" / "claude"
    if not binary.exists():
        raise InstallError(f"Claude Code {version} has no native binary for {system}-{machine}")
    return binary


def install_gemini(version: str = GEMINI_CLI_VERSION) -> Path:
    root = _npm_install("@google/gemini-cli", version)
    binary = root / "node_modules" / ".bin" / "gemini"
    if not binary.exists():
        raise InstallError(f"Gemini CLI {version} installed no gemini command")
    return binary


# -- the fake model ------------------------------------------------------------------


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    yield str(block.get("text", ""))
                elif block.get("type") == "tool_result":
                    yield from _texts(block.get("content"))
                elif "text" in block:
                    yield str(block["text"])


def _send_json(h: BaseHTTPRequestHandler, code: int, obj: Any) -> None:
    data = json.dumps(obj).encode()
    h.send_response(code)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def _start_event_stream(h: BaseHTTPRequestHandler) -> None:
    """Headers of a server-sent-events reply; the connection closes after it."""
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.send_header("connection", "close")
    h.end_headers()


class FakeModel:
    """A scripted model API on 127.0.0.1 (``api`` = "anthropic" or "gemini").

    ``script`` maps a scenario name to its turns, each a list of tool calls
    ``{"name": TOOL, "input": ARGS}`` the model makes in one message."""

    def __init__(self, api: str, script: Mapping[str, list[list[dict[str, Any]]]]) -> None:
        self.api = api
        self.script = dict(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:
                pass

            def _json(self, code: int, obj: Any) -> None:
                _send_json(self, code, obj)

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                if "/models" in self.path:
                    self._json(200, {"data": [{"type": "model", "id": "claude-fake"}],
                                     "models": [], "has_more": False})  # fmt: skip
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with model._lock:
                    model.requests.append({"t": time.time(), "path": self.path, "body": body})
                path = self.path.split("?")[0]
                if path.endswith(("count_tokens", ":countTokens")):
                    self._json(200, {"input_tokens": 100, "totalTokens": 100})
                elif model.api == "anthropic" and path.endswith("/v1/messages"):
                    model._anthropic(self, body)
                elif model.api == "gemini" and (":generateContent" in path or
                                                ":streamGenerateContent" in path):  # fmt: skip
                    model._gemini(self, body, stream=":streamGenerateContent" in path)
                else:
                    self._json(404, {"error": {"message": path}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        """Forget the requests so far (before the next client run)."""
        with self._lock:
            self.requests.clear()

    def __enter__(self) -> FakeModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- turns ------------------------------------------------------------------

    def _turn(self, scenario: str | None, step: int) -> list[dict[str, Any]] | None:
        turns = self.script.get(scenario) if scenario else None
        if turns is None or step >= len(turns):
            return None
        return turns[step]

    def _anthropic(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        scenario = None
        for m in messages:
            if m.get("role") == "user":
                for t in _texts(m.get("content")):
                    hit = _MARK.search(t)
                    if hit:
                        scenario = hit.group(1)
                        break
            if scenario:
                break
        step = sum(1 for m in messages if m.get("role") == "assistant")
        calls = self._turn(scenario, step) if body.get("tools") else None
        if calls:
            blocks = [
                {"type": "tool_use", "id": f"toolu_{scenario}_{step}_{i}", "name": c["name"],
                 "input": c.get("input", {})}
                for i, c in enumerate(calls)
            ]  # fmt: skip
            stop = "tool_use"
        else:
            blocks = [{"type": "text", "text": "done"}]
            stop = "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 5}
        msg = {"id": f"msg_{int(time.time() * 1e6)}", "type": "message", "role": "assistant",
               "model": body.get("model", "claude-fake"), "stop_sequence": None}  # fmt: skip
        if not body.get("stream"):
            _send_json(h, 200, {**msg, "content": blocks, "stop_reason": stop, "usage": usage})
            return
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start",
                               "message": {**msg, "content": [], "stop_reason": None,
                                           "usage": usage}}),
        ]  # fmt: skip
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": b["text"]}
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": start},
                )
            )
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))  # fmt: skip
        _start_event_stream(h)
        for name, obj in events:
            h.wfile.write(f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode())
        h.wfile.flush()
        h.close_connection = True

    def _gemini(self, h: BaseHTTPRequestHandler, body: dict[str, Any], *, stream: bool) -> None:
        contents = body.get("contents") or []
        scenario = None
        for c in contents:
            if c.get("role") == "user":
                for p in c.get("parts") or []:
                    hit = _MARK.search(str(p.get("text") or ""))
                    if hit:
                        scenario = hit.group(1)
                        break
            if scenario:
                break
        has_tools = any(t.get("functionDeclarations") for t in body.get("tools") or [])
        step = sum(1 for c in contents if c.get("role") == "model")
        calls = self._turn(scenario, step) if has_tools else None
        if calls:
            parts: list[dict[str, Any]] = [
                {"functionCall": {"name": c["name"], "args": c.get("input", {}),
                                  "id": f"call_{scenario}_{step}_{i}"}}
                for i, c in enumerate(calls)
            ]  # fmt: skip
        else:
            cfg = body.get("generationConfig") or {}
            wants_json = cfg.get("responseMimeType") == "application/json" or any(
                k in cfg for k in ("responseJsonSchema", "responseSchema")
            )
            answer = {"reasoning": "done", "next_speaker": "user", "model_choice": "flash",
                      "complexity_reasoning": "simple", "complexity_score": 1}  # fmt: skip
            parts = [{"text": json.dumps(answer) if wants_json else "done"}]
        resp = {
            "candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
        }  # fmt: skip
        if not stream:
            _send_json(h, 200, resp)
            return
        _start_event_stream(h)
        h.wfile.write(b"data: " + json.dumps(resp).encode() + b"\r\n\r\n")
        h.wfile.flush()
        h.close_connection = True

    # -- what the client sent back -------------------------------------------------

    def results(self) -> dict[str, dict[str, Any]]:
        """Tool call id -> {"error": bool, "text": str}, from every request."""
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            requests = list(self.requests)
        for r in requests:
            body = r.get("body") or {}
            for m in body.get("messages") or []:
                for b in m.get("content") if isinstance(m.get("content"), list) else []:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        out.setdefault(
                            b["tool_use_id"],
                            {"error": bool(b.get("is_error")),
                             "text": "\n".join(_texts(b.get("content")))},
                        )  # fmt: skip
            for c in body.get("contents") or []:
                for p in c.get("parts") or []:
                    fr = p.get("functionResponse") if isinstance(p, dict) else None
                    if fr and fr.get("id"):
                        resp = fr.get("response") or {}
                        out.setdefault(
                            fr["id"], {"error": "error" in resp, "text": json.dumps(resp)}
                        )
        return out

    def deferred_tools(self) -> list[str]:
        """The tools Claude Code names as loadable through ToolSearch (2.1.3xx
        lists them in a system reminder rather than in the request's tools)."""
        with self._lock:
            requests = list(self.requests)
        for r in requests:
            for m in (r.get("body") or {}).get("messages") or []:
                for text in _texts(m.get("content")):
                    if "available via ToolSearch" in text:
                        body = text.split("</system-reminder>", 1)[0].splitlines()
                        return [line.strip() for line in body[1:] if _TOOL_NAME.match(line.strip())]
        return []

    def offered_tools(self) -> list[str]:
        """The tool names of the first request that offered tools."""
        with self._lock:
            requests = list(self.requests)
        for r in requests:
            body = r.get("body") or {}
            tools = body.get("tools") or []
            names = [t["name"] for t in tools if isinstance(t, dict) and "name" in t]
            for t in tools:
                names += [fd["name"] for fd in t.get("functionDeclarations") or []]
            if names:
                return names
        return []


# -- running a client -------------------------------------------------------------------


@dataclass
class ClientRun:
    """One headless client session and what it left."""

    returncode: int | str
    stdout: str
    stderr: str
    seconds: float
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def result(self, scenario: str, turn: int = 0, call: int = 0, *, gemini: bool = False) -> Any:
        key = f"call_{scenario}_{turn}_{call}" if gemini else f"toolu_{scenario}_{turn}_{call}"
        return self.results.get(key)


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[Any, str, str, float]:
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)  # fmt: skip
        rc: int | str = p.returncode
        out, err = p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc = "timeout"
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    return rc, out, err, time.monotonic() - start


def _base_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "SHELL": "/bin/bash",
        "TERM": "dumb",
        "LANG": "C.UTF-8",
    }


def run_claude(
    binary: Path,
    model: FakeModel,
    scenario: str,
    *,
    workspace: Path,
    home: Path,
    mode: str = "default",
    timeout: float = 90,
) -> ClientRun:
    """``claude -p`` in ``workspace`` (whose .claude/settings.json the caller
    wrote) with ``home`` as HOME."""
    env = _base_env(home)
    env.update(
        {
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "IS_SANDBOX": "1",  # lets bypassPermissions start as root
        }
    )
    cmd = [str(binary), "-p", f"SCENARIO={scenario} carry out the scripted steps",
           "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5",
           "--no-session-persistence"]  # fmt: skip
    if mode != "default":
        cmd += ["--permission-mode", mode]
    model.reset()
    rc, out, err, secs = _run(cmd, workspace, env, timeout)
    return ClientRun(rc, out, err, secs, model.results())


GEMINI_USER_SETTINGS = {
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    # The base URL alone selects the "gateway" auth type, which 0.61 refuses.
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}


def run_gemini(
    binary: Path,
    model: FakeModel,
    scenario: str,
    *,
    workspace: Path,
    home: Path,
    mode: str = "yolo",
    trust: bool = True,
    timeout: float = 120,
) -> ClientRun:
    """``gemini -p`` in ``workspace`` (whose .gemini/settings.json the caller
    wrote). ``trust``: trust the folder through GEMINI_CLI_TRUST_WORKSPACE, so
    project hooks load (with --skip-trust they do not)."""
    settings = home / ".gemini" / "settings.json"
    if not settings.exists():
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps(GEMINI_USER_SETTINGS))
    env = _base_env(home)
    env.update({"GOOGLE_GEMINI_BASE_URL": model.url, "GEMINI_API_KEY": "e2e-dummy",
                "NO_BROWSER": "1"})  # fmt: skip
    if trust:
        env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
    cmd = [str(binary), "-p", f"SCENARIO={scenario} carry out the scripted steps",
           "--output-format", "json", "-m", "gemini-2.5-pro", "--approval-mode", mode]  # fmt: skip
    if not trust:
        cmd.append("--skip-trust")
    model.reset()
    rc, out, err, secs = _run(cmd, workspace, env, timeout)
    return ClientRun(rc, out, err, secs, model.results())


# -- the policy and the places the scenarios use -------------------------------------------

# The policy the end-to-end runs put in front of the clients: reads and
# writes in the workspace are allowed, the shell asks (the guard lets
# read-only commands through), web search is denied.
BLUEPRINT = """\
[agent]
name = "e2e"
version = "1.0.0"
description = "The policy the end-to-end runs put in front of Claude Code and Gemini CLI"
entry_stage = "work"

[stages.work]
mode = "autonomous"
description = "Do the work"
available_tools = ["read_file", "list_dir", "write_file", "edit_file", "shell", "search_files",
                   "web_fetch", "web_search", "todo"]
system_prompt = "Work."

[stages.work.tool_permissions]
read_file = "allow"
list_dir = "allow"
write_file = "allow"
edit_file = "allow"
shell = "ask"
search_files = "allow"
web_fetch = "ask"
web_search = "deny"
todo = "allow"
"""
# The user's ceiling lets the blueprint allow writes (a blueprint alone cannot).
CONFIG = """\
[tool_permissions]
write_file = "allow"
edit_file = "allow"
search_files = "allow"
todo = "allow"
"""


def compile_policy(root: Path, charter: list[str]) -> Path:
    """The e2e policy compiled below ``root``; returns the plan's path."""
    (root / "e2e").mkdir(parents=True, exist_ok=True)
    (root / "e2e" / "agent.leviath").write_text(BLUEPRINT)
    (root / "config.toml").write_text(CONFIG)
    out = root / "plan.json"
    subprocess.run(
        [*charter, "compile", str(root / "e2e"), "--config", str(root / "config.toml"),
         "-o", str(out)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


_NOTEBOOK = {
    "cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": ["print(1)"],
               "outputs": [], "execution_count": None}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}  # fmt: skip


class Place:
    """A workspace, a home and a directory outside both, laid out afresh,
    with a marker in each file so a read that ran can be told."""

    def __init__(self, root: Path) -> None:
        self.ws, self.home, self.out = root / "ws", root / "home", root / "out"
        for d in (self.ws / ".git", self.home / ".ssh", self.out):
            d.mkdir(parents=True)
        (self.ws / "README.md").write_text("readme-marker\n")
        (self.ws / ".env").write_text("API_KEY=hunter2-secret\n")
        (self.ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (self.home / ".ssh" / "id_ed25519").write_text("fake-private-key\n")
        (self.out / "secret.txt").write_text("outside-marker\n")
        (self.out / "nb.ipynb").write_text(json.dumps(_NOTEBOOK))

    def sub(self, obj: Any) -> Any:
        """``obj`` with {WS}, {HOME} and {OUT} replaced, in every string."""
        text = json.dumps(obj)
        for key, value in (("{WS}", self.ws), ("{HOME}", self.home), ("{OUT}", self.out)):
            text = text.replace(key, str(value))
        return json.loads(text)

    def ran(self, check: tuple[str, str], result: dict[str, Any] | None) -> bool:
        """Whether the call ``check`` describes ran: ``exists``/``missing``
        PATH, ``edited`` NOTEBOOK, ``ok`` (a result that is not an error) or
        ``result`` TEXT (its result holds TEXT)."""
        kind, what = check
        if kind == "exists":
            return Path(self.sub(what)).exists()
        if kind == "missing":
            return not Path(self.sub(what)).exists()
        if kind == "edited":
            cells = json.loads(Path(self.sub(what)).read_text())["cells"]
            return bool(cells[0]["source"] != ["print(1)"])
        if kind == "ok":
            return result is not None and not result["error"]
        return result is not None and not result["error"] and what in result["text"]
