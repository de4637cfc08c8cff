"""The bash differential oracle (see ``bash_oracle.py`` and ``docs/shell-guard.md``).

Every command of the golden corpora, and a few thousand command lines from
the shell grammar in ``strategies.py``, run in real bash inside throwaway
namespaces where every program is a recording stub; each program bash
started must be one the guard listed for its verdict. A mismatch found here
is fixed in the guard and its command kept as a golden case
(``tests/fixtures/shell/oracle.tsv``), which this test re-runs through bash.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bash_oracle  # noqa: E402
from strategies import shell_text  # noqa: E402

from charter.runtime.shell import DYNAMIC, JudgedCommand, Judgement, ShellPolicy, judge  # noqa: E402
from charter.runtime.shell.policy import Verdict  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "shell"
WS = "/ws/proj"
GENERATED = 2500

needs_bash = pytest.mark.skipif(
    not bash_oracle.available(),
    reason=f"the bash oracle cannot run here: {bash_oracle.unavailable_reason()}",
)


def _corpus() -> list[str]:
    out: list[str] = []
    for path in sorted(FIXTURES.glob("*.tsv")):
        for line in path.read_text("utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                cmd = line.split("\t")[0]
                out.append(ast.literal_eval(cmd[3:]) if cmd.startswith("py:") else cmd)
    for line in (FIXTURES / "bench_corpus.txt").read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            out.append(ast.literal_eval(line[3:]) if line.startswith("py:") else line)
    return out


def _check(commands: Iterable[str]) -> tuple[int, list[str]]:
    """Run the commands the guard does not deny through bash; return how many
    ran and a description of each mismatch."""
    policy = ShellPolicy()
    judged = [(c, judge(c, cwd=WS, workspace=WS, policy=policy)) for c in commands]
    to_run = [(c, j) for c, j in judged if j.verdict.decision != "deny"]
    results = bash_oracle.run_in_bash([c for c, _ in to_run])
    problems: list[str] = []
    for (command, j), execution in zip(to_run, results, strict=True):
        for why in bash_oracle.mismatches(j, execution):
            problems.append(f"{command!r} [{j.verdict.decision} {j.verdict.rule}]: {why}")
    return len(to_run), problems


@needs_bash
def test_golden_corpora_match_bash() -> None:
    corpus = _corpus()
    assert len(corpus) > 1000
    ran, problems = _check(corpus)
    assert ran > 800
    assert not problems, "\n".join(problems[:20])


@needs_bash
def test_generated_commands_match_bash() -> None:
    commands: list[str] = []

    @settings(
        max_examples=GENERATED,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(shell_text())
    def collect(text: str) -> None:
        commands.append(text)

    collect()
    assert len(commands) >= GENERATED // 2
    _ran, problems = _check(commands)
    assert not problems, "\n".join(problems[:20])


@needs_bash
def test_the_oracle_sees_what_bash_runs() -> None:
    # the sandbox records externals, disabled builtins and code-running
    # builtins with exact words, and runs nested bash for real
    out = bash_oracle.run_in_bash(
        ["ls 'a b' c", 'echo "$\\\n(id -u)"', "eval 'cat x'", "bash -c 'wc -l'", "x=1; : $x"]
    )
    assert out[0].records == (("ls", "a b", "c"),)
    assert set(out[1].records) == {("id", "-u"), ("echo", "")}
    assert set(out[2].records) == {("eval", "cat x"), ("cat", "x")}
    assert set(out[3].records) == {("bash", "-c", "wc -l"), ("wc", "-l")}
    assert out[4].records == ()


def _j(decision: str, *argvs: tuple[object, ...], opaque: bool = False) -> Judgement:
    verdict = Verdict(decision, "r", (0, 0), "m")  # type: ignore[arg-type]
    commands = tuple(JudgedCommand(a, (0, 0)) for a in argvs)  # type: ignore[arg-type]
    return Judgement(verdict, commands, opaque)


def test_mismatch_definition() -> None:
    ex = bash_oracle.Execution((("ls", "a", "b"),), False)
    assert bash_oracle.mismatches(_j("allow", ("ls", "a", "b")), ex) == []
    # an allowed command must match exactly, with no dynamic word
    assert bash_oracle.mismatches(_j("allow", ("ls", DYNAMIC)), ex)
    assert bash_oracle.mismatches(_j("allow", ("ls", "a", "b"), opaque=True), ex)
    # an ask: a dynamic word stands for any run of words, literals must agree
    assert bash_oracle.mismatches(_j("ask", ("ls", DYNAMIC)), ex) == []
    assert bash_oracle.mismatches(_j("ask", (DYNAMIC, "b")), ex) == []
    assert bash_oracle.mismatches(_j("ask", ("ls", DYNAMIC, "c")), ex)
    assert bash_oracle.mismatches(_j("ask", ("cat", DYNAMIC)), ex)
    assert bash_oracle.mismatches(_j("ask", opaque=True), ex) == []
    assert bash_oracle.mismatches(_j("deny"), ex) == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", DYNAMIC]), max_size=5),
    st.lists(st.sampled_from("ab"), max_size=5),
)
def test_matching_is_a_glob_over_words(pattern: list[object], argv: list[str]) -> None:
    import re

    regex = "".join("(?:[ab] )*" if p is DYNAMIC else re.escape(f"{p} ") for p in pattern)
    expected = re.fullmatch(regex, "".join(f"{a} " for a in argv)) is not None
    assert bash_oracle._matches(tuple(pattern), tuple(argv)) is expected
