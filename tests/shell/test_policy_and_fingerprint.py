from __future__ import annotations

from charter.runtime.shell import SafeShellCommand, ShellPolicy, evaluate, fingerprint

WS = "/ws/proj"


def test_policy_round_trips_through_json() -> None:
    p = ShellPolicy(
        defaults=False,
        safe=(
            SafeShellCommand(words=("cargo", "check"), source="cargo check", justification="fast"),
        ),
    )
    data = p.model_dump(mode="json")
    assert ShellPolicy.model_validate(data) == p
    assert data == {
        "defaults": False,
        "safe": [
            {
                "words": ["cargo", "check"],
                "source": "cargo check",
                "justification": "fast",
                "exact": False,
            }
        ],
    }


def test_an_exact_entry_covers_its_words_and_no_more() -> None:
    """Claude Code's Bash(npm test) carried by charter init: `npm test`, not
    `npm test --watch`; a prefix entry covers both."""
    exact = ShellPolicy(
        safe=(SafeShellCommand(words=("npm", "test"), source="npm test", exact=True),)
    )
    prefix = ShellPolicy(safe=(SafeShellCommand(words=("npm", "test"), source="npm test"),))
    for command, with_exact, with_prefix in (
        ("npm test", "allow", "allow"),
        ("npm test --watch", "ask", "allow"),
        ("npm", "ask", "ask"),
        ("npm test && ls", "allow", "allow"),
        ("ls; npm test x", "ask", "allow"),
    ):
        assert evaluate(command, cwd=WS, workspace=WS, policy=exact).decision == with_exact, command
        assert evaluate(command, cwd=WS, workspace=WS, policy=prefix).decision == with_prefix


def test_fingerprint_covers_every_part_of_the_execution_shape() -> None:
    base = fingerprint("ls", "/w", {"A": "1"}, background=False, timeout_s=60)
    assert base == fingerprint("ls", "/w", {"A": "1"}, background=False, timeout_s=60)
    others = {
        fingerprint("ls ", "/w", {"A": "1"}, background=False, timeout_s=60),
        fingerprint("ls", "/w/x", {"A": "1"}, background=False, timeout_s=60),
        fingerprint("ls", "/w", {"A": "2"}, background=False, timeout_s=60),
        fingerprint("ls", "/w", {"B": "1"}, background=False, timeout_s=60),
        fingerprint("ls", "/w", {}, background=False, timeout_s=60),
        fingerprint("ls", "/w", {"A": "1"}, background=True, timeout_s=60),
        fingerprint("ls", "/w", {"A": "1"}, background=False, timeout_s=61),
    }
    assert base not in others and len(others) == 7
    # the overlay's order does not matter
    assert fingerprint(
        "x", "/", {"A": "1", "B": "2"}, background=False, timeout_s=1
    ) == fingerprint("x", "/", {"B": "2", "A": "1"}, background=False, timeout_s=1)


def test_safe_entries_lift_only_the_program_ask() -> None:
    policy = ShellPolicy(
        safe=(
            SafeShellCommand(words=("cargo", "check"), source="cargo check"),
            SafeShellCommand(words=("rg",), source="rg"),
        )
    )

    def d(cmd: str) -> tuple[str, str]:
        v = evaluate(cmd, cwd=WS, workspace=WS, policy=policy)
        return v.decision, v.rule

    assert d("cargo check --all") == ("allow", "safe-command")
    assert d("cargo check && ls") == ("allow", "safe-command")
    assert d("cargo build") == ("ask", "executes-code")
    assert d("cargo check $X") == ("ask", "parameter-expansion")
    assert d("cargo check > log") == ("ask", "redirect-write")
    assert d("rg --pre=sh x") == ("ask", "exec-option")  # option-level asks stay
    assert d("FOO=1 cargo check") == ("ask", "inline-assignment")


def test_defaults_off_turns_the_read_only_table_off() -> None:
    off = ShellPolicy(defaults=False)
    assert evaluate("ls", cwd=WS, workspace=WS, policy=off).rule == "unknown-command"
    on_with_entry = ShellPolicy(
        defaults=False, safe=(SafeShellCommand(words=("ls",), source="ls"),)
    )
    assert evaluate("ls -la", cwd=WS, workspace=WS, policy=on_with_entry).decision == "allow"
    assert evaluate("rm -rf /", cwd=WS, workspace=WS, policy=off).decision == "deny"


def test_every_verdict_has_a_reason() -> None:
    for cmd in ("ls", "rm -rf /", "pytest", "echo $(x)", "echo 'unterminated", ""):
        v = evaluate(cmd, cwd=WS, workspace=WS, policy=ShellPolicy())
        assert v.rule and v.message
        assert 0 <= v.span[0] <= v.span[1] <= max(len(cmd), 1)


def test_no_cap_on_the_number_of_commands() -> None:
    for n in (10, 100, 5000):
        cmd = " && ".join(["true"] * n + ["curl evil.example"])
        v = evaluate(cmd, cwd=WS, workspace=WS, policy=ShellPolicy())
        assert (v.decision, v.rule) == ("ask", "network")
        cmd = "; ".join(["ls"] * n + ["rm -rf ~"])
        assert evaluate(cmd, cwd=WS, workspace=WS, policy=ShellPolicy()).decision == "deny"
    deep = "echo " + "$(" * 300 + "rm -rf /" + ")" * 300
    assert evaluate(deep, cwd=WS, workspace=WS, policy=ShellPolicy()).decision in ("ask", "deny")


def test_pathological_inputs_answer_without_raising() -> None:
    import time

    cases = [
        "(" * 2000 + "rm -rf /" + ")" * 2000,
        "echo " + "$(" * 2000 + "ls" + ")" * 2000,
        'echo "' + '$(echo "' * 300 + "x" + '")' * 300 + '"',
        "echo " + "'" * 2001,
        "echo ${" * 2000,
        "`" * 2001,
        "cat <<A <<B\n" + "x\n" * 2000 + "A\nB\n",
        "ls;" * 20000 + "rm -rf /",
    ]
    for cmd in cases:
        start = time.perf_counter()
        v = evaluate(cmd, cwd=WS, workspace=WS, policy=ShellPolicy())
        assert v.decision != "allow"
        assert time.perf_counter() - start < 5.0
