"""How a guard verdict meets the shell tool's permission (docs/shell-guard.md)."""

from __future__ import annotations

import pytest

from charter.runtime.shell import ShellPolicy, combine, evaluate

WS = "/ws/proj"


def _v(command: str):  # type: ignore[no-untyped-def]
    return evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())


# (command, tool permission, write_file permission, launch flag) -> decision
TABLE = [
    # a guard allow lifts the tool's ask; it never lowers the tool's deny
    ("ls", "ask", "ask", False, "allow"),
    ("ls", "allow", "ask", False, "allow"),
    ("ls", "deny", "allow", False, "deny"),
    ("ls", "deny", "allow", True, "deny"),
    # a guard ask is never lowered by the tool's allow; flags lift it
    ("pytest", "allow", "allow", False, "ask"),
    ("pytest", "ask", "allow", False, "ask"),
    ("pytest", "ask", "allow", True, "allow"),
    ("pytest", "deny", "allow", True, "deny"),
    # nothing lifts a guard deny
    ("rm -rf /", "allow", "allow", True, "deny"),
    ("rm -rf /", "ask", "allow", True, "deny"),
    # a redirect inside the workspace answers to write_file
    ("echo hi > out.txt", "ask", "allow", False, "allow"),
    ("echo hi > out.txt", "ask", "ask", False, "ask"),
    ("echo hi > out.txt", "ask", "ask", True, "allow"),
    ("echo hi > out.txt", "allow", "deny", True, "deny"),
    ("echo hi > out.txt", "deny", "allow", False, "deny"),
    ("pytest > log.txt", "ask", "allow", False, "ask"),
    # a redirect outside the workspace is refused before any permission
    ("echo x > /tmp/x", "allow", "allow", True, "deny"),
    ("echo x >| /etc/hosts", "ask", "allow", True, "deny"),
    # an unnameable target always asks, and only a person answers: no flag lifts it
    ("echo hi > $OUT", "allow", "allow", False, "ask"),
    ("echo hi > $OUT", "ask", "allow", True, "ask"),
    ("echo hi > $OUT", "allow", "allow", True, "ask"),
    ("echo hi > $OUT", "ask", "deny", True, "deny"),
    # so do a credential read and a write under .git/
    ("cat .env", "allow", "allow", True, "ask"),
    ("cp x .git/hooks/pre-commit", "allow", "allow", True, "ask"),
    # a recognised writer answers to write_file like a redirect
    ("cp a b", "ask", "deny", True, "deny"),
    ("cp a b", "ask", "allow", True, "allow"),
    ("rm -f notes.txt", "ask", "ask", True, "allow"),
    # and outside the workspace it is refused before any permission
    ("cp a /tmp/b", "allow", "allow", True, "deny"),
    ("rm -rf ~/.ssh", "allow", "allow", True, "deny"),
]


@pytest.mark.parametrize(("command", "tool", "write", "flag", "want"), TABLE)
def test_combine_table(command: str, tool: str, write: str, flag: bool, want: str) -> None:
    decision, reason = combine(tool, _v(command), write, lifted_by_flag=flag)  # type: ignore[arg-type]
    assert decision == want, reason
    assert reason


def test_ungrantable_marks_unnameable_targets_only() -> None:
    assert _v("echo hi > $OUT").ungrantable
    assert _v("echo hi > /dev/tcp/x/80").ungrantable
    assert not _v("echo hi > out.txt").ungrantable
    assert not _v("ls").ungrantable


def test_writes_are_resolved() -> None:
    v = evaluate(
        "echo a > x/../y.txt; echo b >> /tmp/z", cwd=WS + "/sub", workspace=WS, policy=ShellPolicy()
    )
    paths = [(w.path, w.inside_workspace) for w in v.writes]
    assert paths == [(WS + "/sub/y.txt", True), ("/tmp/z", False)]
    assert v.decision == "deny"


def test_redirect_through_symlink_is_resolved(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    v = evaluate("echo x > link/f", cwd=ws, workspace=ws, policy=ShellPolicy())
    assert v.decision == "deny" and v.rule == "redirect-outside-workspace"
    v = evaluate("echo x > real.txt", cwd=ws, workspace=ws, policy=ShellPolicy())
    assert v.rule == "redirect-write"


def test_person_only_asks_are_named() -> None:
    # check-shell --format json shows which ask only a person can answer
    assert _v("cat .env").to_json()["person_only"] == "credential-path"
    assert _v("echo x > $OUT").to_json()["person_only"] == "unnameable-redirect"
    assert _v("pytest").to_json()["person_only"] is None
    assert _v("ls").person_only is None
