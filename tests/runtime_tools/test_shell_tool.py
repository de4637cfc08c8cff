from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.redact import Redactor
from charter.runtime.tools.registry import ToolRuntime, dispatch
from charter.runtime.tools.shell import shell_argv

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")

SECRET = "s3cr3t-V4lue-0123456789"


@pytest.fixture
def rt(make_rt: Any) -> ToolRuntime:
    rt: ToolRuntime = make_rt(
        grants=frozenset({"secret.bind:DEPLOY_TOKEN"}),
        secret_env={"DEPLOY_TOKEN": SECRET, "OTHER_TOKEN": "other-value-999"},
    )
    return rt


def test_success_keeps_stderr(rt: ToolRuntime) -> None:
    res = dispatch("shell", {"command": "echo out; echo warn >&2"}, rt)
    assert res.ok and res.content == "out\n[stderr]\nwarn"
    assert res.data["exit_code"] == 0
    assert dispatch("bash", {"command": "true"}, rt).content == "(command succeeded with no output)"


def test_failure_shape(rt: ToolRuntime) -> None:
    res = dispatch("shell", {"command": "echo a; echo b >&2; exit 7"}, rt)
    assert res.status == "error" and res.executed
    assert res.content == "[exit code 7]\n[stdout]\na\n[stderr]\nb"
    assert res.display is not None and res.display.startswith("$ echo a; echo b >&2; exit 7\n")


def test_runs_in_the_workspace_with_the_built_env(rt: ToolRuntime) -> None:
    res = dispatch("shell", {"command": "pwd; echo $HOME; echo ${OPENAI_API_KEY:-unset}"}, rt)
    pwd, home, key = res.content.splitlines()
    assert os.path.realpath(pwd) == os.path.realpath(rt.workspace)
    assert home == rt.env["HOME"]
    assert key == "unset"


def test_env_allowlist_drops_provider_keys(make_rt: Any, tmp_path: Path, monkeypatch: Any) -> None:
    from charter.runtime.env import build_env

    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-should-not-leak")
    rt: ToolRuntime = make_rt(env=build_env(os.environ, home=tmp_path / "h"))
    res = dispatch("shell", {"command": "env"}, rt)
    names = {line.split("=", 1)[0] for line in res.content.splitlines() if "=" in line}
    assert "OPENAI_API_KEY" not in names and "AWS_SECRET_ACCESS_KEY" not in names
    assert "should-not-leak" not in res.content


def test_timeout(make_rt: Any) -> None:
    rt: ToolRuntime = make_rt(timeout_s=1)
    res = dispatch("shell", {"command": "echo started; sleep 20"}, rt)
    assert res.status == "timeout" and res.rule == "timeout"
    assert (
        res.content
        == "[timed out] command exceeded 1s; its process tree was stopped\n[stdout]\nstarted"
    )


def test_cancel(make_rt: Any) -> None:
    rt: ToolRuntime = make_rt()
    threading.Timer(0.3, rt.cancel.set).start()
    start = time.monotonic()
    res = dispatch("shell", {"command": "sleep 20"}, rt)
    assert res.data["cancelled"] and time.monotonic() - start < 5
    assert res.content.startswith("[cancelled]")


def test_a_bound_secret_never_appears_in_any_view(rt: ToolRuntime) -> None:
    command = (
        'echo value=$TOK; echo "$TOK" >&2; printf \'%s\' "$TOK" | rev | rev; '
        "echo prefix${TOK}suffix; exit 1"
    )
    res = dispatch(
        "terminal",
        {
            "command": command,
            "secret_bindings": [
                {"source": "env:DEPLOY_TOKEN", "target": "TOK", "expires_in_seconds": 20}
            ],
        },
        rt,
    )
    assert res.status == "error"
    views = {
        "model": res.content,
        "operator": res.display or "",
        "data": json.dumps(res.data),
        "event": rt.redactor.redact(res.content, "event"),
        "stored": json.dumps(rt.redactor.redact_value(res.data, "stored")),
    }
    for view, text in views.items():
        assert SECRET not in text, view
    assert res.content.count("<redacted>") == 4
    assert "<redacted:TOK>" in views["operator"]
    assert res.data["timeout_s"] == 20  # the binding's expiry clamped the 30 s default
    assert res.data["bindings"] == [
        {
            "source": "env:DEPLOY_TOKEN",
            "target": "TOK",
            "capability": "secret.bind:DEPLOY_TOKEN",
            "expires_in_seconds": 20,
        }
    ]


def test_a_secret_cut_by_the_output_cap_leaves_no_prefix(make_rt: Any) -> None:
    rt: ToolRuntime = make_rt(
        grants=frozenset({"secret.bind:DEPLOY_TOKEN"}),
        secret_env={"DEPLOY_TOKEN": SECRET},
        output_cap=10,
    )
    res = dispatch(
        "terminal",
        {
            "command": "printf 'ab%s' \"$T\"",
            "secret_bindings": [{"source": "env:DEPLOY_TOKEN", "target": "T"}],
        },
        rt,
    )
    assert SECRET[:8] not in res.content and SECRET[:8] not in (res.display or "")
    assert res.content.startswith("ab<redacted>\n[truncated] stdout: kept the first 10 bytes")


def test_secrets_in_the_command_line_are_redacted(rt: ToolRuntime) -> None:
    res = dispatch("shell", {"command": "echo curl -H 'Authorization: Bearer tok-abcdef123'"}, rt)
    assert "tok-abcdef123" not in res.content and "tok-abcdef123" not in (res.display or "")


@pytest.mark.parametrize(
    ("bindings", "grants", "message"),
    [
        ([{"source": "env:OTHER_TOKEN"}], {"secret.bind:DEPLOY_TOKEN"}, "exact capability"),
        ([{"source": "env:DEPLOY_TOKEN"}], {"secret.bind:*"}, "exact capability"),
        ([{"source": "env:DEPLOY_TOKEN", "target": "PATH"}], {"secret.bind:DEPLOY_TOKEN"}, "PATH"),
        (
            [{"source": "env:DEPLOY_TOKEN", "target": "LD_PRELOAD"}],
            {"secret.bind:DEPLOY_TOKEN"},
            "LD_PRELOAD",
        ),
        ([{"source": "env:MISSING"}], {"secret.bind:MISSING"}, "not set"),
    ],
)
def test_binding_refusals(
    make_rt: Any, bindings: list[dict[str, Any]], grants: set[str], message: str
) -> None:
    rt: ToolRuntime = make_rt(
        grants=frozenset(grants), secret_env={"DEPLOY_TOKEN": SECRET, "OTHER_TOKEN": "x" * 8}
    )
    res = dispatch("terminal", {"command": "env", "secret_bindings": bindings}, rt)
    assert (res.status, res.rule) == ("denied", "terminal-env-invalid")
    assert message in res.content
    assert not res.executed


def test_terminal_overlay_cwd_and_background(rt: ToolRuntime) -> None:
    (rt.workspace / "sub").mkdir()
    res = dispatch(
        "terminal", {"command": "pwd; echo $MODE", "cwd": "sub", "env": {"MODE": "fast"}}, rt
    )
    pwd, mode = res.content.splitlines()
    assert pwd.endswith("/sub") and mode == "fast"
    assert res.data["env_keys"] == ["MODE"] and res.data["cwd"] == "sub"
    assert dispatch("terminal", {"command": "ls", "cwd": ".."}, rt).status == "denied"
    assert dispatch("terminal", {"command": "ls", "env": {"PATH": "/x"}}, rt).status == "denied"
    # Background commands become tasks of the run (tests/tasks covers them).
    bg = dispatch("terminal", {"command": "echo bg", "background": True}, rt)
    assert bg.ok and bg.data["task_id"].startswith("task_")
    done = dispatch("yield_until", {"task_id": bg.data["task_id"], "timeout_seconds": 10}, rt)
    assert done.data["status"] == "succeeded" and "bg" in done.content


def test_shell_argv() -> None:
    assert shell_argv("/bin/bash", "ls") == ["/bin/bash", "-c", "ls"]
    assert shell_argv("cmd.exe /C", "dir") == ["cmd.exe", "/C", "dir"]


def test_redaction_failure_hides_everything(make_rt: Any) -> None:
    class Broken(Redactor):
        def redact(self, text: str, view: Any = "model") -> str:
            if "boom" in text:
                raise RuntimeError("simulated failure inside redaction")
            return text

    rt: ToolRuntime = make_rt(redactor=Broken())
    res = dispatch("shell", {"command": "echo boom"}, rt)
    assert res.content == "<redaction-failed>" and res.display == "<redaction-failed>"
