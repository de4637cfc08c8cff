"""runtime/hooks/reach.py: arguments read the way the clients' JavaScript reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from charter.runtime.hooks import reach
from charter.runtime.policy.workspace import is_sensitive


@pytest.mark.parametrize(
    ("raw", "trimmed"),
    [
        (" /etc/passwd", "/etc/passwd"),
        ("\u00a0/etc/passwd\u3000", "/etc/passwd"),
        ("\ufeff/etc/passwd", "/etc/passwd"),  # Python's strip() keeps U+FEFF
        ("\x1c/etc/passwd", "\x1c/etc/passwd"),  # and strips U+001C, which JavaScript keeps
        ("notes.txt", "notes.txt"),
    ],
)
def test_js_trim_strips_what_javascript_strips(raw: str, trimmed: str) -> None:
    assert reach.js_trim(raw) == trimmed


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        (".%65nv", ".env"),
        ("%2e%2e/x", "../x"),
        ("caf%C3%A9", "caf\u00e9"),
        ("100%.txt", None),  # decodeURIComponent throws: Gemini CLI keeps the path
        ("%C3", None),  # not UTF-8: it throws too
        ("plain", None),
    ],
)
def test_js_decode_uri_component(raw: str, decoded: str | None) -> None:
    assert reach.js_decode_uri_component(raw) == decoded


@pytest.mark.parametrize(
    ("pattern", "root"),
    [
        ("/etc/**/*.conf", "/etc"),
        ("/*", "/"),
        ("/etc/passwd", "/etc"),
        ("src/**/*.py", "src"),
        ("../outside/*", "../outside"),
        ("**/*.py", ""),
        ("*.py", ""),
        ("x.py", ""),
    ],
)
def test_literal_root_is_where_a_glob_starts(pattern: str, root: str) -> None:
    assert reach.literal_root(pattern) == root


def test_pattern_roots_expand_braces_and_refuse_a_climb_after_a_wildcard() -> None:
    assert set(reach.pattern_roots("{src,/etc}/*.py")) == {"src", "/etc"}
    assert reach.pattern_roots("**/*.py") == ["."]
    assert "after a wildcard" in str(reach.pattern_roots("src/*/../../x"))


def test_sensitive_below_applies_the_search_filter_and_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x")
    (tmp_path / ".env").write_text("T=1")
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config.py").write_text("x")
    root = str(tmp_path)
    everything = reach.sensitive_below(root, root, None, is_sensitive)
    assert sorted(map(Path, everything)) == [tmp_path / ".aws" / "config.py", tmp_path / ".env"]
    # A filter the credential file's name cannot pass leaves it out; one
    # that a file below a credential directory passes keeps that file.
    assert reach.sensitive_below(root, root, "*.py", is_sensitive) == [
        str(tmp_path / ".aws" / "config.py")
    ]
    assert reach.sensitive_below(root, root, "*.md", is_sensitive) == []
    monkeypatch.setattr(reach, "MAX_SEARCH_WALK", 2)
    assert "more than 2" in str(reach.sensitive_below(root, root, None, is_sensitive))
