"""Position-aware readers: every key and value maps to its line and column."""

from __future__ import annotations

from pathlib import Path

from charter.compiler.sources.text import SourceText
from charter.compiler.sources.toml_reader import read_toml
from charter.compiler.sources.yaml_reader import read_yaml


def _src(text: str, name: str) -> SourceText:
    return SourceText(Path(name), name, text)


def test_toml_positions_cover_tables_dotted_keys_arrays_and_inline_tables() -> None:
    text = (
        "[agent]\n"
        'name = "coder"  # trailing comment\n'
        "\n"
        "[stages.plan]\n"
        'available_tools = ["read_file",\n'
        '  "shell",\n'
        "]\n"
        'tool_permissions = { shell = "ask", "edit_file" = "allow" }\n'
        "a.b = 1\n"
        "[[stages.plan.edges]]\n"
        'to = "x"\n'
        "[stages.plan.edges.gate]\n"
        "max_attempts = 3\n"
        "[[stages.plan.edges]]\n"
        'to = """y\nz"""\n'
    )
    data, smap, diags = read_toml(_src(text, "a.toml"))
    assert diags == []
    assert data["stages"]["plan"]["edges"][1]["to"] == "y\nz"

    def pos(*path: str | int) -> tuple[int, int]:
        span = smap.value_span(path)
        return span.line, span.col

    assert pos("agent", "name") == (2, 8)
    assert pos("stages", "plan", "available_tools", 1) == (6, 3)
    assert pos("stages", "plan", "tool_permissions", "edit_file") == (8, 51)
    assert pos("stages", "plan", "a", "b") == (9, 7)
    assert pos("stages", "plan", "edges", 0, "gate", "max_attempts") == (13, 16)
    assert pos("stages", "plan", "edges", 1, "to") == (15, 6)
    key = smap.key_span(("stages", "plan", "tool_permissions", "shell"))
    assert (key.line, key.col) == (8, 22)


def test_toml_syntax_error_names_line_and_column() -> None:
    data, _, diags = read_toml(_src("a = 1\nb = = 2\n", "bad.toml"))
    assert data is None
    [d] = diags
    assert (d.code, d.span.line, d.span.col) == ("CH102", 2, 5)


def test_yaml_positions_and_plain_scalar_resolution() -> None:
    text = 'a: 1\nb: "2"\nc:\n  - x\n  - {k: v}\nd: 0x1f\ne: ~\n'
    data, smap, diags = read_yaml(_src(text, "a.yaml"))
    assert diags == []
    assert data == {"a": 1, "b": "2", "c": ["x", {"k": "v"}], "d": 31, "e": None}
    span = smap.value_span(("c", 1, "k"))
    assert (span.line, span.col) == (5, 9)


def test_yaml_duplicate_key_keeps_the_first_and_reports_the_second() -> None:
    data, _, diags = read_yaml(_src("approval:\n  default: deny\n  default: auto\n", "d.yaml"))
    assert data == {"approval": {"default": "deny"}}
    [d] = diags
    assert (d.name, d.span.line, d.span.col, d.key_path) == (
        "duplicate-key",
        3,
        3,
        "approval.default",
    )


def test_yaml_anchors_aliases_and_tags_are_refused() -> None:
    _, _, diags = read_yaml(_src("a: &x 1\nb: *x\nc: !!python/name:os.system x\n", "t.yaml"))
    assert [d.name for d in diags] == [
        "yaml-alias-refused",
        "yaml-alias-refused",
        "yaml-unsupported-tag",
    ]


def test_yaml11_booleans_warn() -> None:
    data, _, diags = read_yaml(_src("enabled: no\n", "b.yaml"))
    assert data == {"enabled": False}
    [d] = diags
    assert d.name == "yaml-ambiguous-boolean" and d.severity.value == "warning"


def test_yaml_syntax_error_position() -> None:
    data, _, diags = read_yaml(_src("a: [1\nb: 2\n", "s.yaml"))
    assert data is None
    [d] = diags
    assert d.code == "CH101" and d.span.line == 2


def test_toml_key_defined_twice_is_a_duplicate_key() -> None:
    data, _, diags = read_toml(_src('a = 1\nb = 2\na = 3\n', "dup.toml"))
    assert data is None
    [d] = diags
    assert (d.name, d.span.line) == ("duplicate-key", 3)


def test_toml_dotted_header_parents_have_positions() -> None:
    _, smap, _ = read_toml(_src("# c\n[stages.review]\nmode = 'x'\n", "s.toml"))
    span = smap.key_span(("stages",))
    assert (span.line, span.col) == (2, 2)
