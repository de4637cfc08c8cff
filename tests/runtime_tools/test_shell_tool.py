from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.redact import Redactor
from charter.runtime.tools.registry import ToolRuntime, dispatch
from charter.runtime.tools.shell import command_executable, shell_argv

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
    # An alias (``bash``) is the plan's to map, in the visibility gate;
    # direct dispatch knows only canonical names and runs nothing for it.
    aliased = dispatch("bash", {"command": "true"}, rt)
    assert not aliased.ok and aliased.rule == "no-implementation"


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
    from charter.runtime.policy.env import build_env

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


def test_a_secret_cut_by_the_output_cap_leaves_no_prefix(make_rt: Any, tmp_path: Path) -> None:
    # seed 004's shell keeps a head: the cap cuts the secret at its end.
    from charter.runtime.policy.env import build_env

    rt: ToolRuntime = make_rt(
        env={**build_env(os.environ, home=tmp_path / "home"), "T": SECRET}, output_cap=10
    )
    rt.redactor.add(SECRET, "T", "binding")
    res = dispatch("shell", {"command": "printf 'ab%s' \"$T\""}, rt)
    assert SECRET[:8] not in res.content and SECRET[:8] not in (res.display or "")
    assert res.content.startswith("ab<redacted>\n[truncated] stdout: kept the first 10 bytes")


def test_a_secret_cut_at_the_start_of_the_tail_leaves_no_suffix(rt: ToolRuntime) -> None:
    # seed 000's terminal keeps a 12,000-character tail; here its window
    # starts inside the bound value, so the value's last characters would open
    # the kept text were the partial first word not dropped.
    command = "printf 'ab%s\\n' \"$TOK\"; head -c 11990 /dev/zero | tr '\\0' y"
    res = dispatch(
        "terminal",
        {"command": command, "secret_bindings": [{"source": "env:DEPLOY_TOKEN", "target": "TOK"}]},
        rt,
    )
    assert res.ok and res.data["stdout_truncated"]
    total = len("ab" + SECRET + "\n") + 11990
    assert res.data["stdout_chars"] == res.data["stdout_bytes"] == total
    assert SECRET[-9:] not in res.content and SECRET[-4:] not in (res.display or "")
    header, kept = res.content.split("\n", 1)
    assert header == (
        f"[truncated] stdout: the command wrote {total} characters ({total} bytes); "
        "kept the last 11990 characters"
    )
    assert kept == "y" * 11990


def test_a_bound_value_with_whitespace_cut_by_the_tail_is_masked(make_rt: Any) -> None:
    pem = "-----BEGIN TEST KEY-----\nMIIEabcdefghijklmnop\n-----END TEST KEY-----"
    rt: ToolRuntime = make_rt(grants=frozenset({"secret.bind:PEM"}), secret_env={"PEM": pem})
    # 11,990 characters after the value: the window starts inside its middle line.
    command = "printf '%s\\n' \"$PEM\"; head -c 11990 /dev/zero | tr '\\0' y"
    res = dispatch("terminal", {"command": command, "secret_bindings": [{"source": "env:PEM"}]}, rt)
    assert res.ok and res.data["stdout_truncated"]
    for view in (res.content, res.display or ""):
        assert "END TEST KEY" not in view and "mnop" not in view
    assert "<redacted:PEM>" in (res.display or "")
    assert res.content.endswith("<redacted>\n" + "y" * 11990)


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


# -- the host-side environment (S000-37) -------------------------------------------------


def test_bound_values_never_reach_the_host_environment(
    rt: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    import charter.runtime.proc.command as proc_command
    import charter.runtime.tools.shell as shell_mod

    assert SECRET not in os.environ.values()  # the source lives in rt.secret_env only
    env_before, rt_env_before = dict(os.environ), dict(rt.env)
    seen: dict[str, Any] = {}
    real_popen = proc_command.subprocess.Popen

    class SpyPopen(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # The moment the child is spawned: the host's environment must not
            # hold the value, the child's must.
            seen["host_at_spawn"] = dict(os.environ)
            seen["child"] = dict(kwargs["env"])
            super().__init__(*args, **kwargs)

    real_run = shell_mod.run_command

    def spy_run(*args: Any, **kwargs: Any) -> Any:
        seen["call_env"] = kwargs["env"]  # the shell tool's own per-call mapping
        return real_run(*args, **kwargs)

    monkeypatch.setattr(proc_command.subprocess, "Popen", SpyPopen)
    monkeypatch.setattr(shell_mod, "run_command", spy_run)
    samples: list[bool] = []
    stop = threading.Event()

    def sample() -> None:  # watch the host environment while the command runs
        while not stop.is_set():
            samples.append(SECRET in os.environ.values() or "TOK" in os.environ)
            time.sleep(0.005)

    watcher = threading.Thread(target=sample)
    watcher.start()
    try:
        res = dispatch(
            "terminal",
            {
                "command": 'sleep 0.3; echo "$TOK"',
                "secret_bindings": [{"source": "env:DEPLOY_TOKEN", "target": "TOK"}],
            },
            rt,
        )
    finally:
        stop.set()
        watcher.join()
    assert res.ok and res.content == "<redacted>"
    assert seen["child"]["TOK"] == SECRET  # the command did get it
    assert "TOK" not in seen["host_at_spawn"] and SECRET not in seen["host_at_spawn"].values()
    assert len(samples) > 10 and not any(samples)
    # Afterwards: the process environment, the run's environment and the
    # per-call mapping hold no trace of it.
    assert dict(os.environ) == env_before
    assert dict(rt.env) == rt_env_before and "TOK" not in rt.env
    assert seen["call_env"] == {}
    assert rt.secret_env["DEPLOY_TOKEN"] == SECRET  # the source itself is untouched


# -- executables (S000-40) ---------------------------------------------------------------


def test_results_name_the_resolved_shell_and_the_command_executable(
    make_rt: Any, tmp_path: Path
) -> None:
    rt: ToolRuntime = make_rt(shell="sh")  # a bare name: resolved on the child's PATH
    path = rt.env["PATH"]
    python = shutil.which("python3", path=path)
    assert python is not None
    res = dispatch("shell", {"command": "python3 -c 'print(1)' | cat"}, rt)
    assert res.ok
    assert res.data["shell"] == shutil.which("sh", path=path)
    assert res.data["command_executable"] == python
    assert f"(shell: {res.data['shell']}, program: {python}, cwd: .)" in (res.display or "")
    term = dispatch("terminal", {"command": "echo hi"}, make_rt())
    assert term.data["shell"] == "/bin/sh" and term.data["command_executable"] is None
    assert "program: unknown" in (term.display or "")


def test_command_executable_is_best_effort(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "mytool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "data.txt").write_text("not a program\n")
    path = f"{bindir}:/usr/bin:/bin"
    sh = ["/bin/sh", "-c", ""]

    def exe(command: str, argv: list[str] = sh) -> str | None:
        return command_executable(command, argv, cwd=tmp_path, path=path)

    assert exe("mytool --flag") == str(tool)
    assert exe("MODE=fast X='a b' mytool") == str(tool)  # inline assignments skipped
    assert exe("exec mytool") == str(tool) and exe("command mytool -v") == str(tool)
    assert exe("(mytool); echo done") == str(tool)  # inside a subshell
    assert exe("mytool | grep x && false") == str(tool)  # the first command only
    assert exe("./run.sh arg") == str(tmp_path / "run.sh")  # relative to the cwd
    assert exe(f"{tool} x") == str(tool)
    for unknown in (
        "echo hi",  # a builtin: the shell runs it, whatever /usr/bin holds
        "cd /tmp && mytool",
        "$CMD arg",  # expands: only known when the shell runs
        "./data.txt",  # not executable
        "no-such-program-here",
        "echo 'unclosed",  # the parser refuses it
        "X=1",
    ):
        assert exe(unknown) is None, unknown
    cmd = ["cmd.exe", "/C", ""]
    assert exe("mytool /q", cmd) == str(tool)
    assert exe('"mytool" /q', cmd) == str(tool)
    assert exe("@mytool&dir", cmd) == str(tool)
    assert exe("DIR /b", cmd) is None and exe("type x", cmd) is None


# -- process record (S000-48) ------------------------------------------------------------


def test_results_carry_the_spawn_record(rt: ToolRuntime) -> None:
    first = dispatch("terminal", {"command": "echo $$"}, rt)
    second = dispatch("shell", {"command": "echo $$"}, rt)
    for res in (first, second):
        proc = res.data["process"]
        assert set(proc) == {"spawn_id", "pid", "pgid", "platform", "start_marker"}
        assert proc["pid"] == int(res.content) == proc["pgid"]  # the shell leads its group
        assert proc["platform"] == sys.platform
        if sys.platform.startswith("linux"):
            assert proc["start_marker"] is not None and proc["start_marker"].isdigit()
        assert res.data["stop_error"] is None
    assert first.data["process"]["spawn_id"] != second.data["process"]["spawn_id"]


def test_leftovers_are_not_signalled_once_the_start_marker_changed(
    make_rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import charter.runtime.proc as proc_mod
    import charter.runtime.proc.tree as proc_tree

    real_marker = proc_tree.start_marker
    calls: list[int] = []

    def recycled(pid: int) -> str | None:
        # The first read is the spawn record's; every later one finds another process.
        calls.append(pid)
        marker = real_marker(pid)
        return marker if len(calls) == 1 else f"other-{marker}"

    sent: list[tuple[int, int]] = []
    real_killpg = os.killpg

    def spy_killpg(pgid: int, sig: int) -> None:
        if sig != 0:
            sent.append((pgid, sig))
        real_killpg(pgid, sig)

    monkeypatch.setattr(proc_tree, "start_marker", recycled)
    monkeypatch.setattr(os, "killpg", spy_killpg)
    rt: ToolRuntime = make_rt()
    res = dispatch("shell", {"command": "sleep 30 & echo started"}, rt)
    pgid = res.data["process"]["pgid"]
    try:
        assert sent == []
        assert res.status == "error" and res.rule == "process-not-stopped"
        assert "no longer has the start marker" in res.data["stop_error"]
        assert res.content.startswith("[exit code unknown] the command left processes running")
        assert proc_mod.group_running(pgid)  # the leftover sleep really was left alone
    finally:
        real_killpg(pgid, signal.SIGKILL)


# -- how much output is kept (S000-49, S004-24) -------------------------------------------

# Writes 40,000 lines to each stream: stdout 1,520,000 characters in 2,560,000
# bytes (two-byte "é"), stderr 1,520,000 of both. Larger than the 1 MB head
# and the 12,000-character tail alike.
BIG = (
    'python3 -c "import sys\n'
    "for i in range(40000):\n"
    "    sys.stdout.write(f'out {i:06d} ' + chr(233) * 26 + chr(10))\n"
    "    sys.stderr.write(f'err {i:06d} ' + 'x' * 26 + chr(10))\""
)
LINE = 11 + 26 + 1  # characters per line


def test_terminal_keeps_the_tail_and_shell_the_head(make_rt: Any) -> None:
    rt: ToolRuntime = make_rt()
    term = dispatch("terminal", {"command": BIG}, rt)
    shell = dispatch("shell", {"command": BIG}, rt)
    for res in (term, shell):
        assert res.ok
        assert res.data["stdout_chars"] == res.data["stderr_chars"] == 40000 * LINE
        assert res.data["stdout_bytes"] == 40000 * (LINE + 26)
        assert res.data["stderr_bytes"] == 40000 * LINE
        assert res.data["stdout_truncated"] and res.data["stderr_truncated"]
    assert term.data["output_kept"] == {"tail_chars": 12_000}
    assert shell.data["output_kept"] == {"head_bytes": 1_000_000}

    out, err = term.content.split("\n[stderr]\n")
    for text, name, tag, char in ((out, "stdout", "out", chr(233)), (err, "stderr", "err", "x")):
        full = "".join(f"{tag} {i:06d} " + char * 26 + "\n" for i in range(40000))
        nbytes = len(full.encode())
        header, body = text.split("\n", 1)
        body += "\n"  # the tool strips the final newline
        # The kept text is the stream's end, starting at a word: the window's
        # partial first word is dropped, nothing else.
        assert full.endswith(body) and full[-len(body) - 1].isspace()
        assert 12_000 - LINE < len(body) <= 12_000
        assert header == (
            f"[truncated] {name}: the command wrote {len(full)} characters ({nbytes} bytes); "
            f"kept the last {len(body)} characters"
        )
        assert body.endswith(f"{tag} 039999 " + char * 26 + "\n")

    shell_out = shell.content.split("\n[stderr]\n")[0]
    assert shell_out.startswith("out 000000 ")
    assert shell_out.endswith(
        "[truncated] stdout: kept the first 1000000 bytes; the command wrote 2560000 bytes"
    )
    assert "out 039999" not in shell.content


def test_credentials_the_output_reveals_are_redacted_now_and_later(rt: ToolRuntime) -> None:
    # `git remote -v` shows a remote's token: nobody declared it, but its
    # shape is unmistakable, so it is hidden in this result and every later one
    token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
    remote = f"https://x-access-token:{token}@github.com/o/r.git"
    res = dispatch(
        "shell", {"command": f"printf 'origin\\t%s (fetch)\\n' '{remote[:8]}''{remote[8:]}'"}, rt
    )
    assert res.status == "ok", res.content
    assert "github.com/o/r.git" in res.content
    assert token not in res.content and token not in (res.display or "")
    assert token not in json.dumps(res.data)
    later = dispatch("shell", {"command": f"echo {token[:10]}''{token[10:]}"}, rt)
    assert token not in later.content and "<redacted>" in later.content
