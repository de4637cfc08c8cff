"""Option values that name files are resolved like operands (issue 13
class 3): the option grammar reader, and the fallback for programs whose
options Charter does not know ([safe_commands] entries)."""

from __future__ import annotations

from pathlib import Path

from charter.runtime.shell import SafeShellCommand, ShellPolicy, evaluate
from charter.runtime.shell.options import Spec, read_args

SPEC = Spec(
    text="e",
    path="f",
    long_text=("regexp",),
    long_path=("file", "files0-from"),
    long_optional=("color",),
    long_flags=("files-with-matches", "fixed-strings"),
)


def test_attached_and_separate_values_are_the_same_path() -> None:
    for args in (["-fX"], ["-f", "X"], ["--file=X"], ["--file", "X"], ["-nfX"], ["--fil=X"]):
        assert [v for _, v in read_args(args, SPEC).path_values()] == ["X"], args


def test_text_values_and_flags_are_not_paths() -> None:
    r = read_args(["-e", "../x", "--regexp=../y", "--color", "a", "--fixed"], SPEC)
    assert r.path_values() == ()
    assert r.operands == (4,)  # --color takes a value only with `=`


def test_an_ambiguous_abbreviation_is_read_the_strictest_way() -> None:
    # --fi could be --file, --files0-from, --files-with-matches or
    # --fixed-strings: the program refuses it, the guard reads a path
    r = read_args(["--fi=X"], SPEC)
    assert [v for _, v in r.path_values()] == ["X"]


def test_an_unknown_option_value_is_judged_as_a_path() -> None:
    assert [v for _, v in read_args(["--frob=X"], SPEC).path_values()] == ["X"]
    git_like = Spec(long_path=("output",), unknown_values="text")
    assert read_args(["--format=X"], git_like).path_values() == ()


def test_double_dash_ends_the_options() -> None:
    r = read_args(["--", "-fX"], SPEC)
    assert r.path_values() == () and r.operands == (1,)


def test_a_safe_command_s_attached_value_naming_a_link_is_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret").write_text("s")
    (ws / "notes.txt").symlink_to(tmp_path / "secret")
    policy = ShellPolicy(safe=(SafeShellCommand(words=("mytool",), source="mytool"),))
    for command in ("mytool -fnotes.txt", "mytool -vfnotes.txt", "mytool -f notes.txt"):
        v = evaluate(command, cwd=ws, workspace=ws, policy=policy)
        assert (v.decision, v.rule) == ("ask", "path-outside-workspace"), command
    v = evaluate("mytool -xyz", cwd=ws, workspace=ws, policy=policy)
    assert v.decision == "allow"
