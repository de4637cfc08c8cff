"""One CLI: one name per concept across verbs, one --format vocabulary, and
the old spellings kept as hidden aliases that still work."""

from __future__ import annotations

import argparse
import io
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import VERBS, main, verb_parser
from charter.compiler.cli.doctor import _plan_of
from charter.compiler.cli.hook import plan_operand

REPO = Path(__file__).resolve().parents[2]
CODER = REPO / "blueprints" / "coder"

# The old spellings: each still parses, none is shown.
OLD_SPELLINGS = ("--workdir", "--timeout", "--model-timeout", "--json", "--plan")


def _visible_options(verb: str) -> dict[str, argparse.Action]:
    out: dict[str, argparse.Action] = {}
    for action in verb_parser(verb)._actions:
        if action.help == argparse.SUPPRESS:
            continue
        for name in action.option_strings:
            out[name] = action
    return out


def test_every_format_option_offers_text_and_json() -> None:
    with_format = {verb for verb in VERBS if "--format" in _visible_options(verb)}
    # every verb that prints a result for people or programs
    assert {"validate", "show", "audit", "diff", "rules", "rule", "run", "check"} <= with_format
    assert {"check-shell", "check-url", "check-path"} <= with_format
    for verb in with_format:
        choices = tuple(_visible_options(verb)["--format"].choices or ())
        assert choices[:2] == ("text", "json"), (verb, choices)
        # no verb has its own word for what text or json already says
        assert not {"full", "plain", "human", "jsonl"} & set(choices), (verb, choices)


def test_one_name_per_concept_and_old_spellings_are_hidden() -> None:
    for verb in VERBS:
        shown = _visible_options(verb)
        for old in OLD_SPELLINGS:
            assert old not in shown, (verb, old)
        help_text = verb_parser(verb).format_help()
        for old in OLD_SPELLINGS:
            assert f"{old} " not in help_text and f"{old}\n" not in help_text, (verb, old)
    assert "--workspace" in _visible_options("run") and "--workspace" in _visible_options("sandbox")
    assert "--time-limit" in _visible_options("doctor") and "--time-limit" in _visible_options(
        "hook"
    )
    assert "--model-time-limit" in _visible_options("run")


@pytest.mark.parametrize(
    ("verb", "argv", "attr", "value"),
    [
        ("run", ["X", "--agent", "a", "--workdir", "/w"], "workspace", Path("/w")),
        ("sandbox", ["X", "--agent", "a", "--workdir", "/w"], "workspace", Path("/w")),
        ("sandbox", ["X", "--agent", "a", "--workspace", "/w"], "workspace", Path("/w")),
        ("doctor", ["--timeout", "3"], "time_limit", 3.0),
        ("doctor", ["--time-limit", "4"], "time_limit", 4.0),
        ("run", ["X", "--agent", "a", "--model-timeout", "5"], "model_timeout", 5.0),
        ("run", ["X", "--agent", "a", "--model-time-limit", "6"], "model_timeout", 6.0),
        ("run", ["X", "--agent", "a", "--json"], "format", "json"),
        ("run", ["X", "--agent", "a", "--format", "json"], "format", "json"),
        ("validate", ["--format", "full"], "format", "text"),
        ("rules", ["--format", "table"], "format", "text"),
        ("hook", ["claude-code", "p.json"], "plan", "p.json"),
        ("hook", ["claude-code", "--agent", "a", "p.json"], "plan", "p.json"),
    ],
)
def test_old_and_new_spellings_parse_to_the_same_setting(
    verb: str, argv: list[str], attr: str, value: Any
) -> None:
    args = verb_parser(verb).parse_args(argv)
    assert getattr(args, attr) == value


def test_a_format_outside_the_vocabulary_is_a_usage_error(capsys: Any) -> None:
    with pytest.raises(SystemExit) as stop:
        verb_parser("audit").parse_args(["log", "--format", "table"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'table'" in err and "{text,json}" in err


def test_validate_text_is_the_full_form(capsys: Any, tmp_path: Path) -> None:
    broken = tmp_path / "a"
    broken.mkdir()
    (broken / "agent.leviath").write_text(
        '[agent]\nname = "b"\nentry_stage = "s"\n[stages.s]\nshell_x = 1\n'
    )
    outs = []
    for fmt in ("text", "full"):
        assert main(["validate", str(broken), "--no-user-config", "--format", fmt]) == 1
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "^" in outs[0]  # the caret under the span


def test_run_refuses_quiet_with_json(capsys: Any, tmp_path: Path) -> None:
    argv = ["run", str(CODER), "--agent", "coder", "--task", "t", "-q", "--format", "json"]
    assert main([*argv, "--workspace", str(tmp_path), "--no-user-config"]) == 2
    assert "choose one" in capsys.readouterr().err


def _hook(argv: list[str], monkeypatch: pytest.MonkeyPatch, ws: Path) -> None:
    event = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "cwd": str(ws),
        "tool_input": {"file_path": str(ws / "README.md")},
    }
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(event).encode())))
    assert main(["hook", "claude-code", *argv, "--no-user-config", "--agent", "coder"]) == 0


def test_hook_takes_the_plan_as_every_verb_does_and_still_as_an_option(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for argv in ([str(CODER)], ["--plan", str(CODER)], [f"--plan={CODER}"]):
        _hook(argv, monkeypatch, tmp_path)
        answer = json.loads(capsys.readouterr().out)
        assert answer["hookSpecificOutput"]["permissionDecision"] == "allow", argv
    # the plan after the options, as every verb takes its operand
    event = {"hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": str(tmp_path),
             "tool_input": {"file_path": str(tmp_path / "README.md")}}  # fmt: skip
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(event).encode())))
    argv = ["hook", "claude-code", "--agent", "coder", "--no-user-config", str(CODER)]
    assert main(argv) == 0
    assert (
        json.loads(capsys.readouterr().out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    )
    # none, or two: a usage error, which blocks the call in both clients
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    assert main(["hook", "claude-code"]) == 2
    assert "required: PLAN_OR_PROJECT" in capsys.readouterr().err
    assert main(["hook", "claude-code", "a.json", "--plan", "b.json"]) == 2
    assert "unrecognized arguments" in capsys.readouterr().err
    assert "--plan" not in verb_parser("hook").format_help()


def test_plan_operand_moves_the_older_option_to_the_operand() -> None:
    assert plan_operand(["hook", "gemini-cli", "--plan", "p", "--agent", "a"]) == [
        "hook", "gemini-cli", "--agent", "a", "p"
    ]  # fmt: skip
    assert plan_operand(["hook", "claude-code", "--plan=p"]) == ["hook", "claude-code", "p"]
    assert plan_operand(["hook", "claude-code", "--plan"]) == ["hook", "claude-code", "--plan"]


@pytest.mark.parametrize(
    ("command", "plan"),
    [
        ('charter hook claude-code "/p/plan.json" --agent a || exit 2', "/p/plan.json"),
        ("charter hook claude-code --plan /p/plan.json --agent a", "/p/plan.json"),
        ("charter hook gemini-cli --agent a --no-user-config /p/x.json", "/p/x.json"),
        ("/v/python -m charter.compiler hook gemini-cli --time-limit=3 /p/y.json", "/p/y.json"),
        ("charter hook claude-code --agent a || exit 2", None),
    ],
)
def test_doctor_reads_the_plan_of_either_spelling(command: str, plan: str | None) -> None:
    assert _plan_of(shlex.split(command)) == plan
