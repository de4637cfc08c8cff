"""charter show's table fits the terminal and wraps only between words."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.compiler.cli._table import render_table

REPO = Path(__file__).resolve().parents[2]
PROJECTS = [REPO / "blueprints" / "coder", REPO / "blueprints" / "notes-core"]


def _show(capsys: Any, project: Path, *argv: str) -> str:
    assert main(["show", str(project), "--no-user-config", *argv]) == 0
    out: str = capsys.readouterr().out
    return out


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
@pytest.mark.parametrize("width", [60, 80, 110, 200])
def test_no_line_is_wider_than_the_terminal_and_no_word_is_cut(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, project: Path, width: int
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    data = json.loads(_show(capsys, project, "--format", "json"))
    words: set[str] = set()
    for row in data["rows"]:
        for value in row.values():
            words.update(str(value).split())
    for box in data["sandboxes"]:
        words.update(box["summary"].split())
    words |= {"yes", "no", "-"}

    monkeypatch.setenv("COLUMNS", str(width))
    table = _show(capsys, project, "--format", "table")
    lines = table.splitlines()
    assert len(lines) > len(data["rows"])
    for line in lines:
        assert len(line) <= width, (width, line)
    for line in lines[1:]:  # after the title
        for token in line.split():
            if re.fullmatch(r"-+|[a-z]+:|agent|stage|tool|source|capability|decision", token):
                continue  # a rule, a label, a header
            if token in ("liftable", "why", "sandbox", "where", "commands", "run", "(sandbox)"):
                continue
            assert token in words, (width, token, line)
    # Wide enough for every column's longest word: a real table, one row a line
    # and its wrapped continuation lines.
    if width >= 200 or (width >= 110 and project.name == "coder"):
        assert lines[1].split()[:3] == ["agent", "stage", "tool"]


def test_a_table_that_fits_is_not_wrapped() -> None:
    lines = render_table(("a", "bb"), [("x", "one two three")], 40)
    assert lines == ["a  bb", "-  -------------", "x  one two three"]


def test_the_room_goes_to_the_column_that_wants_it() -> None:
    rows = [("read_file", "agent=allow (agent.leviath:16), builtin_default=allow")]
    lines = render_table(("tool", "why"), rows, 45)
    assert lines[2] == "read_file  agent=allow (agent.leviath:16),"
    assert lines[3] == "           builtin_default=allow"


def test_only_a_word_longer_than_the_width_is_cut() -> None:
    word = "x" * 50
    lines = render_table(("name", "value"), [("a", f"short {word} end")], 30, lead=1)
    assert all(len(line) <= 30 for line in lines)
    assert "".join(line.strip() for line in lines if "x" in line).count("x") == 50
    tokens = " ".join(lines).split()
    assert "short" in tokens and "end" in tokens and "value:" in tokens


def test_random_tables_fit_every_width() -> None:
    rng = random.Random(29)
    vocabulary = [
        "a",
        "allow",
        "stage=ask",
        "(agent.leviath:16),",
        "builtin_default=allow",
        "x" * 30,
    ]
    for _ in range(200):
        columns = rng.randint(1, 8)
        headers = [f"h{i}" for i in range(columns)]
        rows = [
            [" ".join(rng.choices(vocabulary, k=rng.randint(0, 6))) for _ in range(columns)]
            for _ in range(rng.randint(1, 4))
        ]
        width = rng.randint(20, 200)
        lines = render_table(headers, rows, width, lead=min(2, columns))
        assert all(len(line) <= width for line in lines), (width, lines)
        words = {w for row in rows for cell in row for w in cell.split()}
        fitting = {w for w in words if len(w) <= width - 4}
        text = "\n".join(lines)
        for w in fitting:
            assert re.search(rf"(^|\s){re.escape(w)}(\s|$)", text, flags=re.M), (w, width, lines)
