"""The check verbs share one form. `--jsonl` reads the same way for every
verb: JSON lines on stdin, one answer line each with the same fields (id,
decision, rule, reason), a bad line answered deny/malformed-request, and the
same exit codes (the most restrictive answer's; 2 when a line was
malformed). One call exits with the decision vocabulary's code, and the
operand and --jsonl are one or the other.

One row per verb: its command line, a line it allows, one it denies, one it
asks about, and a line whose field has the wrong type.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from charter.compiler.cli import main

REPO = Path(__file__).resolve().parents[2]
CODER = REPO / "blueprints" / "coder"


class Verb(NamedTuple):
    name: str
    argv: list[str]
    allow: dict[str, Any]
    deny: dict[str, Any]
    ask: dict[str, Any]
    wrong: dict[str, Any]


VERBS: list[Verb] = [
    Verb(
        "check",
        ["check", str(CODER), "--no-user-config", "--agent", "coder", "--stage", "discover"],
        {"tool": "read_file", "args": {"path": "README.md"}},
        {"tool": "write_file", "args": {"path": "x", "content": "y"}},
        {"tool": "shell", "args": {"command": "pip install x"}},
        {"tool": "read_file", "args": "README.md"},
    ),
    Verb(
        "check-path",
        ["check-path"],
        {"path": "src/main.py"},
        {"path": "../outside"},
        {"path": ".env"},
        {"path": 5},
    ),
    Verb(
        "check-shell",
        ["check-shell"],
        {"command": "ls"},
        {"command": "rm -rf ~"},
        {"command": "echo $(id)"},
        {"command": ["ls"]},
    ),
    Verb(
        "check-url",
        ["check-url"],
        {"url": "http://8.8.8.8/"},
        {"url": "http://169.254.169.254/latest"},
        {"url": "https://example.org/"},
        {"url": 8},
    ),
]


@pytest.fixture(params=VERBS, ids=[v.name for v in VERBS])
def verb(request: pytest.FixtureRequest) -> Verb:
    return request.param  # type: ignore[no-any-return]


def _batch(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, argv: list[str], lines: list[str], ws: Path
) -> tuple[int, list[dict[str, Any]]]:
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(line + "\n" for line in lines)))
    if argv[0] in ("check", "check-path", "check-shell"):
        argv = [*argv, "--workspace", str(ws)]
    code = main([*argv, "--jsonl"])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _line(n: int, obj: dict[str, Any]) -> str:
    return json.dumps({"id": n, **obj})


def test_the_same_fields_and_exit_codes(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verb: Verb
) -> None:
    def run(*objs: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        return _batch(
            capsys, monkeypatch, verb.argv, [_line(n, o) for n, o in enumerate(objs, 1)], tmp_path
        )

    code, rows = run(verb.allow)
    assert code == 0 and rows[0]["decision"] == "allow", rows
    code, rows = run(verb.allow, verb.ask)
    assert code == 3 and rows[1]["decision"] in ("ask", "needs-dns"), rows
    code, rows = run(verb.allow, verb.deny, verb.ask)
    assert code == 1 and [r["id"] for r in rows] == [1, 2, 3], rows
    assert rows[1]["decision"] == "deny"
    for row in rows:
        assert {"id", "decision", "rule", "reason"} <= set(row), row
        assert isinstance(row["rule"], str) and isinstance(row["reason"], str) and row["reason"]


def test_bad_lines_are_answered_deny_in_step(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verb: Verb
) -> None:
    lines = [
        "not json",
        "[1, 2]",
        _line(3, verb.wrong),
        _line(4, {k: "\ud800" if isinstance(v, str) else v for k, v in verb.allow.items()}),
        '{"id": 5, "nested": ' + "[" * 5000 + "]" * 5000 + "}",
        _line(6, verb.allow),
    ]
    code, rows = _batch(capsys, monkeypatch, verb.argv, lines, tmp_path)
    assert code == 2
    assert [r["id"] for r in rows] == [None, None, 3, 4, None, 6]
    for n, row in enumerate(rows[:5], 1):
        assert (row["decision"], row["rule"]) == ("deny", "malformed-request"), row
        assert row["reason"].startswith(f"line {n}: "), row
    assert rows[5]["decision"] == "allow"


def _single_argv(verb: Verb, obj: dict[str, Any], ws: Path) -> list[str]:
    """The command line that asks one verb about one of its batch lines."""
    argv = verb.argv
    if verb.name == "check":
        return [*argv, "--workspace", str(ws), obj["tool"], json.dumps(obj["args"])]
    if verb.name == "check-path":
        return [*argv, "--workspace", str(ws), obj["path"]]
    if verb.name == "check-shell":
        return [*argv, "--workspace", str(ws), obj["command"]]
    return [*argv, obj["url"]]


def test_one_call_exits_with_the_vocabulary_codes(capsys: Any, tmp_path: Path, verb: Verb) -> None:
    from charter.runtime.plan.vocabulary import EXIT_CODES

    for word, obj in (("allow", verb.allow), ("deny", verb.deny), ("ask", verb.ask)):
        code = main(_single_argv(verb, obj, tmp_path))
        capsys.readouterr()
        assert code == EXIT_CODES[word], (verb.name, word, obj)


def test_the_operand_and_jsonl_are_one_or_the_other(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verb: Verb
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(_line(1, verb.allow) + "\n"))
    both = main([*_single_argv(verb, verb.allow, tmp_path), "--jsonl"])
    out, err = capsys.readouterr()
    assert both == 2 and out == "" and f"charter {verb.name}: --jsonl reads" in err, err
    neither = verb.argv if verb.name == "check-url" else [*verb.argv, "--workspace", str(tmp_path)]
    assert main(neither) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"charter {verb.name}: give a" in err, err


def test_exit_codes_come_from_the_vocabulary() -> None:
    from charter.compiler.cli._jsonl import exit_code
    from charter.runtime.plan.vocabulary import EXIT_CODES

    assert {w: exit_code(w) for w in EXIT_CODES} == dict(EXIT_CODES)
    assert exit_code("needs-dns") == EXIT_CODES["ask"]  # check-url: something else must decide
    assert exit_code("maybe") == EXIT_CODES["deny"]  # a word nobody defined fails closed
