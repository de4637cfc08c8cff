"""``charter check PLAN --agent A TOOL ARGS``: options may stand between the
positionals. The verb asks for argparse's intermixed parsing (``INTERMIXED``)
and the CLI calls it, so no parser's method is replaced at run time."""

from __future__ import annotations

import argparse

import pytest

from charter.compiler.cli import _parse, build_parser, check, main, verb_parser


def _args(argv: list[str]) -> argparse.Namespace:
    args, extra = _parse(build_parser(argv), argv)
    assert extra == []
    return args


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "plan.json", "--agent", "a", "read_file", '{"path": "x"}'],
        ["check", "plan.json", "read_file", "--agent", "a", '{"path": "x"}'],
        ["check", "--agent", "a", "plan.json", "read_file", '{"path": "x"}'],
        ["--color", "never", "check", "plan.json", "--agent", "a", "read_file", '{"path": "x"}'],
    ],
)
def test_options_may_stand_between_the_positionals(argv: list[str]) -> None:
    args = _args(argv)
    assert (args.verb, str(args.plan), args.agent) == ("check", "plan.json", "a")
    assert (args.tool, args.args_json) == ("read_file", '{"path": "x"}')


def test_the_top_level_options_still_apply() -> None:
    assert _args(["--color", "always", "check", "p", "--agent", "a", "t"]).color == "always"
    assert _args(["check", "p", "--agent", "a", "t"]).color == "auto"


def test_an_unknown_option_is_the_verbs_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "p", "--agent", "a", "t", "--nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: charter check")
    assert "unrecognized arguments: --nope" in err


def test_no_parser_method_is_replaced() -> None:
    parser = verb_parser("check")
    assert "parse_known_args" not in vars(parser)
    assert check.INTERMIXED is True
