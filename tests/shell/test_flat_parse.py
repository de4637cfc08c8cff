"""The parser's flat fast path builds exactly the tree the LALR table builds.

``syntax._flat`` answers for command lists with no parentheses; where it
answers, its tree must equal ``syntax._drive``'s for the same tokens (and
where the table refuses the tokens, the fast path must not answer). Checked
on every golden command, a fixed generated sample and the edge cases of the
list grammar below.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from strategies import random_shell_text  # noqa: E402

from charter.runtime.shell import syntax  # noqa: E402
from charter.runtime.shell.lexer import lex  # noqa: E402
from charter.runtime.shell.splice import splice  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "shell"

# The list grammar's corners: separators where a command must be, trailing
# separators, newlines after each operator, comments, redirect-only commands.
EDGES = [
    "",
    "\n\n",
    "ls",
    "ls;",
    "ls &",
    "ls\n",
    "; ls",
    "& ls",
    "&& ls",
    "| ls",
    "ls; ; ls",
    "ls ;\n; ls",
    "ls & ; ls",
    "ls &&",
    "ls ||\n",
    "ls |",
    "ls | | wc",
    "ls && ; wc",
    "ls &&\n\nwc",
    "ls |\n wc -l",
    "ls |& wc",
    "a || b && c | d ; e & f\ng",
    "ls # note\nwc",
    "# only a comment",
    "> out",
    "2>&1",
    "ls 2>",
    "ls > >",
    "ls >f <g 2>>h",
    "{fd}>x ls",
    'echo "a $b ${c} $((1+2)) `d`" x',
    'echo "$(date)"',
    'echo "unclosed',
    "echo $'a\\nb' 'c' $d $",
    "ls )",
    "( ls )",
    "echo $(ls) x",
    "ls; echo <(ls)",
    "a=1 b=2 ls",
]


def _golden_commands() -> list[str]:
    out: list[str] = []
    lines = (DATA / "bench_corpus.txt").read_text("utf-8").splitlines()
    for path in sorted(DATA.rglob("*.tsv")):
        lines += [ln.split("\t")[0] for ln in path.read_text("utf-8").splitlines()]
    for line in lines:
        if not line.strip() or line.startswith(("#", "@ ")):
            continue
        out.append(ast.literal_eval(line[3:]) if line.startswith("py:") else line)
    return out


def _both(command: str) -> tuple[object, object] | None:
    """(fast path's tree or None, table's tree or its error's position),
    or None when the text does not lex."""
    sp = splice(command)
    text = command if sp is None else sp.text
    try:
        lexed = lex(text, sp)
    except syntax.ShellSyntaxError:
        return None
    ctx = syntax._Ctx(lexed.heredocs, lexed.values)
    try:
        flat = syntax._flat(lexed.tokens, text, ctx)
    except syntax.ShellSyntaxError:
        flat = None  # parse() then asks the table
    try:
        table: object = syntax._drive(lexed.tokens, text, ctx)
    except (syntax.ShellSyntaxError, RecursionError) as exc:
        table = ("error", getattr(exc, "pos", None))
    return flat, table


@pytest.mark.parametrize(
    "corpus",
    [
        pytest.param(EDGES, id="edges"),
        pytest.param(_golden_commands(), id="golden"),
        pytest.param(random_shell_text(3000, 13), id="generated"),
    ],
)
def test_flat_path_builds_the_tables_tree(corpus: list[str]) -> None:
    answered = 0
    for command in corpus:
        both = _both(command)
        if both is None or both[0] is None:
            continue
        answered += 1
        flat, table = both
        assert flat == table, command
    assert answered > 0  # the fast path is taken at all


@pytest.mark.parametrize(
    "command", ["ls -la", 'git status && ls | wc -l; echo "$x" > out', "a\nb &"]
)
def test_plain_lists_take_the_flat_path(command: str) -> None:
    both = _both(command)
    assert both is not None and both[0] is not None
