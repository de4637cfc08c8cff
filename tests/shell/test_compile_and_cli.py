"""[safe_commands] compilation (CH501-CH505) and the check-shell verb."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from charter.compiler.cli import main
from charter.compiler.frontends.config_toml import SafeCommands, SafeShellEntry
from charter.compiler.resolve.shell_policy import compile_shell_policy
from charter.runtime.shell import ShellPolicy


def _compile(*items: str | SafeShellEntry, defaults: bool = True):  # type: ignore[no-untyped-def]
    return compile_shell_policy(
        SafeCommands(defaults=defaults, shell=items), source="config.toml", smap=None
    )


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        ("cargo check; curl x", "unparseable-safe-command"),
        ("cargo check && ls", "unparseable-safe-command"),
        ("echo 'a b'", "unparseable-safe-command"),
        ('"cargo" check', "unparseable-safe-command"),
        ("make $TARGET", "unparseable-safe-command"),
        ("ls *.py", "unparseable-safe-command"),
        ("(ls)", "unparseable-safe-command"),
        ("FOO=1 make", "unparseable-safe-command"),
        ("./run-tests", "unparseable-safe-command"),
        ("echo 'unterminated", "unparseable-safe-command"),
        ("env:RUST_LOG", "unparseable-safe-command"),
        ("cargo test > log.txt", "safe-command-pre-approves-write"),
        ("> out.txt", "safe-command-pre-approves-write"),
        ("sort -o sorted.txt", "safe-command-pre-approves-write"),
        ("sed -i", "safe-command-pre-approves-write"),
        ("rm", "safe-command-pre-approves-write"),
        ("tee", "safe-command-pre-approves-write"),
        ("xargs", "safe-command-grants-wrapper"),
        ("env", "safe-command-grants-wrapper"),
        ("sudo make", "safe-command-grants-wrapper"),
        ("bash -c", "safe-command-grants-wrapper"),
        ("python3", "safe-command-grants-wrapper"),
        ("eval", "safe-command-grants-wrapper"),
        ("uv run", "safe-command-grants-wrapper"),
        ("npx", "safe-command-grants-wrapper"),
    ],
)
def test_refused_entries(entry: str, rule: str) -> None:
    policy, diags = _compile(entry)
    assert [d.name for d in diags] == [rule]
    assert diags[0].is_error
    assert policy.safe == ()


def test_accepted_entries_compile_to_words() -> None:
    policy, diags = _compile("cargo check", "npm test", "  make   lint ", defaults=False)
    assert diags == []
    assert [e.words for e in policy.safe] == [("cargo", "check"), ("npm", "test"), ("make", "lint")]
    assert policy.defaults is False
    assert ShellPolicy.model_validate(policy.model_dump(mode="json")) == policy


def test_entries_the_guard_still_asks_about_warn() -> None:
    _, diags = _compile("git push")
    assert [(d.name, d.is_error) for d in diags] == [("safe-command-cannot-be-lifted", False)]


def test_examples_are_checked() -> None:
    entry = SafeShellEntry(
        command="npm test",
        match=("npm test", "npm test -- --watch", "npm run build"),
        not_match=("npm install", "npm test"),
    )
    policy, diags = _compile(entry)
    assert [d.name for d in diags] == ["safe-command-example-mismatch"] * 2
    assert "npm run build" in diags[0].message and "npm test" in diags[1].message
    assert len(policy.safe) == 1
    good = SafeShellEntry(
        command="npm test",
        match=("npm test -- --ci",),
        not_match=("npm install", "npm test; rm x", "npm test > log"),
    )
    assert _compile(good)[1] == []


def test_no_safe_commands_block() -> None:
    assert compile_shell_policy(None, source="x", smap=None) == (ShellPolicy(), [])


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check-shell", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path)]
    assert _run(["ls -la", *ws], capsys)[0] == 0
    assert _run(["rm -rf /", *ws], capsys)[0] == 1
    code, out, _ = _run(["pytest -q", *ws], capsys)
    assert code == 3 and "executes-code" in out and "^^^^^^" in out
    assert _run([*ws], capsys)[0] == 2
    code, out, _ = _run(["echo hi > x", "--format", "json", *ws], capsys)
    data = json.loads(out)
    assert code == 3 and data["rule"] == "redirect-write"
    assert data["writes"][0]["path"].endswith("/x") and data["writes"][0]["inside_workspace"]


def test_cli_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[safe_commands]\nshell = ["cargo check"]\n', "utf-8")
    code, out, _ = _run(
        ["cargo check --all", "--config", str(cfg), "--workspace", str(tmp_path)], capsys
    )
    assert code == 0 and "safe-command" in out
    cfg.write_text('[safe_commands]\nshell = ["xargs"]\n', "utf-8")
    code, _, err = _run(["ls", "--config", str(cfg)], capsys)
    assert code == 2 and "CH503" in err and ":2:" in err
    cfg.write_text("[safe_commands\n", "utf-8")
    assert _run(["ls", "--config", str(cfg)], capsys)[0] == 2


def test_cli_jsonl(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lines = [
        {"id": 1, "command": "ls"},
        {"id": "b", "command": "rm -rf ~", "cwd": "sub"},
        {"command": "echo $(id)"},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = _run(["--jsonl", "--workspace", str(tmp_path)], capsys)
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 1  # the most restrictive answer decides, as for one command
    assert [(r["id"], r["decision"], r["rule"]) for r in rows] == [
        (1, "allow", "read-only"),
        ("b", "deny", "destructive-rm"),
        (None, "ask", "command-substitution"),
    ]
    assert all(set(r) == {"id", "decision", "rule", "reason"} for r in rows)
    monkeypatch.setattr("sys.stdin", io.StringIO('{"id": 7}\nnot json\n'))
    code, out, _ = _run(["--jsonl"], capsys)
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 2 and [r["id"] for r in rows] == [7, None]
    assert {r["rule"] for r in rows} == {"malformed-request"}
