"""Golden data that needs a real workspace: every
``tests/fixtures/shell/trees/*.tsv`` file lays out a workspace with ``@``
lines and then lists cases, in the format of the other golden files (see the
README there). Symlinks, credential files deep in a tree and repositories
are judged by what is on disk, so these cases run in a temporary directory."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from charter.runtime.shell import ShellPolicy, evaluate

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "shell" / "trees"


def _text(raw: str) -> str:
    return ast.literal_eval(raw[3:]) if raw.startswith("py:") else raw


def _layout(path: Path) -> tuple[list[str], list[object]]:
    layout: list[str] = []
    cases: list[object] = []
    group = ""
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if line.startswith("@ "):
            layout.append(line[2:])
        elif line.startswith("## "):
            group = line[3:]
        elif line.strip() and not line.startswith("#"):
            fields = line.split("\t")
            assert len(fields) == 3, f"{path.name}:{n}: expected 3 tab-separated fields"
            command, decision, rule = fields
            assert decision in ("allow", "ask", "deny"), f"{path.name}:{n}: bad decision"
            cases.append(
                pytest.param(
                    path.name, _text(command), decision, rule, id=f"{path.name}:{n} {group}"
                )
            )
    return layout, cases


LAYOUTS: dict[str, list[str]] = {}
CASES: list[object] = []
for _path in sorted(DATA.glob("*.tsv")):
    LAYOUTS[_path.name], _cases = _layout(_path)
    CASES.extend(_cases)


def build(root: Path, layout: list[str]) -> Path:
    """The workspace ``root/ws`` with ``layout`` made in it; ``{out}`` in a
    link target is ``root/out``, a directory outside holding ``secret``,
    ``.env`` and ``deep/``."""
    ws = root / "ws"
    out = root / "out"
    (out / "deep").mkdir(parents=True, exist_ok=True)
    (out / "secret").write_text("s")
    (out / ".env").write_text("TOKEN=x")
    ws.mkdir(exist_ok=True)
    for spec in layout:
        if " -> " in spec:
            name, target = spec.split(" -> ", 1)
            link = ws / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target.replace("{out}", str(out)).replace("{ws}", str(ws)))
        elif " = " in spec:
            name, content = spec.split(" = ", 1)
            f = ws / name
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(_text(content))
        elif spec.endswith("/"):
            (ws / spec).mkdir(parents=True, exist_ok=True)
        else:
            (ws / spec).parent.mkdir(parents=True, exist_ok=True)
            (ws / spec).write_text("")
    return ws


def test_every_tree_file_has_a_layout_and_cases() -> None:
    assert LAYOUTS, "no tree golden files"
    for name, layout in LAYOUTS.items():
        assert layout, f"{name} lays out nothing"
    assert len(CASES) >= 60


@pytest.mark.parametrize(("layout", "command", "decision", "rule"), CASES)
def test_tree_golden(tmp_path: Path, layout: str, command: str, decision: str, rule: str) -> None:
    ws = build(tmp_path, LAYOUTS[layout])
    v = evaluate(command, cwd=ws, workspace=ws, policy=ShellPolicy())
    assert (v.decision, v.rule) == (decision, rule), v.message
