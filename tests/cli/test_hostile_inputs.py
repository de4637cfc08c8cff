"""Inputs built to break the command line end in a diagnostic or a refusal,
never in a Python traceback: a stage chain thousands of stages long, an
integer of thousands of digits (in YAML, in TOML, in a plan) and a plan file
nested deeper than any parser's stack.

Each case runs the verb in this process: an exception escaping ``main``
fails the test by itself, so a traceback cannot hide behind an exit code.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.runtime.plan import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]
DIGITS = "9" * 5000
_VERSION = str(SCHEMA_VERSION).encode()
_TAIL = re.compile(rb',"digest":"sha256:[0-9a-f]{64}","schema_version":' + _VERSION + rb"\}\n?\Z")


def _chain(root: Path, stages: int = 3000) -> Path:
    """A blueprint whose stages form one long chain s0 -> s1 -> ... -> output."""
    lines = ['[agent]\nname = "chain"\nentry_stage = "s0"\n']
    for n in range(stages - 1):
        lines.append(
            f'[stages.s{n}]\navailable_tools = ["read_file"]\n'
            f'[stages.s{n}.transitions.s{n + 1}]\nhint = "next"\n'
        )
    lines.append(f'[stages.s{stages - 1}]\nmode = "output"\n[stages.s{stages - 1}.transitions]\n')
    root.mkdir(parents=True)
    (root / "agent.leviath").write_text("\n".join(lines), encoding="utf-8")
    return root


def _compile(capsys: Any, project: Path, out: Path) -> Path:
    assert main(["compile", "--no-user-config", str(project), "-o", str(out)]) == 0
    capsys.readouterr()
    return out


def _resealed(plan: Path, edit: Callable[[bytes], bytes]) -> Path:
    """The plan with its body bytes edited and the digest recomputed over
    them, as an attacker who knows the format would write it: only the parse
    itself can refuse it."""
    data = plan.read_bytes()
    tail = _TAIL.search(data)
    assert tail is not None and data.startswith(b'{"body":')
    body = edit(data[len(b'{"body":') : tail.start()])
    digest = hashlib.sha256(body).hexdigest()
    out = plan.with_name("edited-" + plan.name)
    out.write_bytes(
        b'{"body":'
        + body
        + b',"digest":"sha256:'
        + digest.encode()
        + b'","schema_version":'
        + _VERSION
        + b"}"
    )
    return out


def test_a_3000_stage_chain_is_linted_compiled_and_shown(capsys: Any, tmp_path: Path) -> None:
    project = _chain(tmp_path / "chain")
    assert main(["validate", "--no-user-config", "--format", "concise", str(project)]) == 0
    plan = _compile(capsys, project, tmp_path / "chain.json")
    assert main(["show", str(plan), "--format", "text"]) == 0
    assert "chain/s2999" in capsys.readouterr().out


def test_a_cycle_through_a_long_chain_is_still_found(capsys: Any, tmp_path: Path) -> None:
    """The cycle lint is iterative now; it must still see a loop 3000 stages round."""
    project = _chain(tmp_path / "loop")
    text = (project / "agent.leviath").read_text()
    text = text.replace(
        '[stages.s2999]\nmode = "output"\n[stages.s2999.transitions]\n',
        '[stages.s2999]\navailable_tools = ["read_file"]\n'
        '[stages.s2999.transitions.s0]\nhint = "again"\n',
    )
    (project / "agent.leviath").write_text(text)
    main(["validate", "--no-user-config", "--format", "concise", str(project)])
    out = capsys.readouterr().out
    assert "CH604" in out or "cycle" in out, out


@pytest.mark.parametrize("verb", ["validate", "compile", "run"])
def test_a_5000_digit_integer_in_yaml_is_a_diagnostic(
    verb: str, capsys: Any, tmp_path: Path
) -> None:
    project = tmp_path / "notes"
    shutil.copytree(REPO / "blueprints" / "notes-core", project)
    agent = project / "agent.yaml"
    agent.write_text(agent.read_text().replace("max_model_steps: 40", f"max_model_steps: {DIGITS}"))
    argv = {
        "validate": ["validate", "--no-user-config", "--format", "concise", str(project)],
        "compile": ["compile", "--no-user-config", str(project), "-o", str(tmp_path / "p.json")],
        "run": [
            "run",
            str(project),
            "--agent",
            "notes-core",
            "--no-user-config",
            "--quiet",
            "--workspace",
            str(tmp_path),
        ],
    }[verb]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == (2 if verb == "run" else 1)
    text = captured.out + captured.err
    assert re.search(r"agent\.yaml:\d+:\d+: CH203 invalid-value: an integer of 5000 digits", text)
    assert "Traceback" not in text


def test_a_5000_digit_integer_in_toml_is_a_diagnostic_at_its_line(
    capsys: Any, tmp_path: Path
) -> None:
    project = tmp_path / "coder"
    shutil.copytree(REPO / "blueprints" / "coder", project)
    bp = project / "agent.leviath"
    text = bp.read_text()
    line = text[: text.index("max_iterations = 12")].count("\n") + 1
    bp.write_text(text.replace("max_iterations = 12", f"max_iterations = {DIGITS}", 1))
    assert main(["validate", "--no-user-config", "--format", "concise", str(project)]) == 1
    out = capsys.readouterr().out
    assert f"agent.leviath:{line}:18: CH203 invalid-value: an integer of 5000 digits" in out


def _hostile_plans(capsys: Any, tmp_path: Path) -> dict[str, Path]:
    plan = _compile(capsys, REPO / "blueprints" / "coder", tmp_path / "coder.json")
    huge = _resealed(
        plan,
        lambda body: body.replace(
            b'"shell_timeout_secs":60', b'"shell_timeout_secs":' + DIGITS.encode(), 1
        ),
    )
    deep = tmp_path / "deep.json"
    deep.write_text('{"body":' + "[" * 100_000 + "]" * 100_000 + "}")
    return {"huge-integer": huge, "deep": deep}


@pytest.mark.parametrize("verb", ["show", "check", "run", "diff", "hook"])
@pytest.mark.parametrize("kind", ["huge-integer", "deep"])
def test_a_hostile_plan_file_is_refused_with_exit_2(
    verb: str, kind: str, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = str(_hostile_plans(capsys, tmp_path)[kind])
    argv = {
        "show": ["show", plan],
        "check": ["check", plan, "--agent", "coder", "read_file", '{"path": "a"}'],
        "run": ["run", plan, "--agent", "coder", "--quiet", "--workspace", str(tmp_path)],
        "diff": ["diff", plan, plan],
    }.get(verb)
    if argv is None:
        # The hook answers on stdout and exits 0 whatever happens (fail closed).
        import io
        import json
        import sys

        event = {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "cwd": str(tmp_path),
            "tool_input": {"file_path": "a"},
        }
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(event).encode())))
        assert main(["hook", "claude-code", "--plan", plan, "--agent", "coder"]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert "allow" not in json.dumps(answer)
        return
    assert main(argv) == 2
    err = capsys.readouterr().err
    expected = "too long to read" if kind == "huge-integer" else "too deeply"
    assert expected in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args_json",
    ['{"a": ' + "[" * 5000 + "]" * 5000 + "}", '{"path": ' + DIGITS + "}"],
    ids=["deep", "huge-integer"],
)
def test_hostile_call_arguments_are_a_usage_error(
    args_json: str, capsys: Any, tmp_path: Path
) -> None:
    plan = _compile(capsys, REPO / "blueprints" / "coder", tmp_path / "coder.json")
    assert main(["check", str(plan), "--agent", "coder", "read_file", args_json]) == 2
    assert "ARGS_JSON cannot be read" in capsys.readouterr().err


def test_call_arguments_naming_a_key_twice_are_a_usage_error(capsys: Any, tmp_path: Path) -> None:
    # Which "path" would be checked, and which read? Neither: refused.
    plan = _compile(capsys, REPO / "blueprints" / "coder", tmp_path / "coder.json")
    args_json = '{"path": "/etc/shadow", "path": "README.md"}'
    assert main(["check", str(plan), "--agent", "coder", "read_file", args_json]) == 2
    err = capsys.readouterr().err
    assert "ARGS_JSON cannot be read" in err and "'path' appears more than once" in err
