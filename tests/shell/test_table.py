"""The shipped LALR table is exactly what lark computes from bash.lark."""

from __future__ import annotations

import json
import subprocess
import sys

from charter.runtime.shell import tablegen


def test_shipped_table_is_fresh() -> None:
    fresh = tablegen.render(tablegen.export_table(tablegen.grammar_text()))
    shipped = tablegen.table_path().read_text(encoding="utf-8")
    assert shipped == fresh, "regenerate with `python -m charter.runtime.shell.tablegen`"


def test_deciding_a_command_does_not_import_lark() -> None:
    code = (
        "import sys\n"
        "from charter.runtime.shell import ShellPolicy, evaluate\n"
        "v = evaluate('git status | head -3', cwd='.', workspace='.', policy=ShellPolicy())\n"
        "print(v.decision, 'lark' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["allow", "False"]


def test_a_table_for_another_grammar_is_not_used(monkeypatch: object) -> None:
    from charter.runtime.shell import syntax

    data = json.loads(tablegen.table_path().read_text(encoding="utf-8"))
    assert data["grammar_sha256"] == tablegen.grammar_digest(tablegen.grammar_text())
    syntax.build_parser.cache_clear()
    try:
        import pytest

        mp = pytest.MonkeyPatch()
        mp.setattr(tablegen, "grammar_digest", lambda text: "other")
        calls: list[str] = []
        real = tablegen.export_table

        def spy(grammar: str) -> dict[str, object]:
            calls.append("built")
            return real(grammar)

        mp.setattr(tablegen, "export_table", spy)
        table = syntax.build_parser()
        assert calls == ["built"] and table.actions
        mp.undo()
    finally:
        syntax.build_parser.cache_clear()
