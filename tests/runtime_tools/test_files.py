from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.catalog.builtin import resolve_builtin
from charter.compiler.resolve.emit_runtime import builtin_entry
from charter.runtime.plan import ToolEntry
from charter.runtime.tools.files import READ_CAP_BYTES
from charter.runtime.tools.paths import path_args
from charter.runtime.tools.registry import IMPLEMENTATIONS, ToolRuntime, dispatch


@pytest.fixture
def rt(layout: Path, make_rt: Any) -> ToolRuntime:
    rt: ToolRuntime = make_rt(layout)
    return rt


def test_read_file(rt: ToolRuntime) -> None:
    res = dispatch("read_file", {"path": "src/app.py"}, rt)
    assert res.ok and res.content == "print('hi')\n"


def test_read_file_offset_and_limit(rt: ToolRuntime) -> None:
    (rt.workspace / "abc.txt").write_text("0123456789", encoding="utf-8")
    res = dispatch("read_file", {"path": "abc.txt", "offset": 3, "limit": 4}, rt)
    assert res.content == "3456\n[more follows: continue with offset=7]"
    assert dispatch("read_file", {"path": "abc.txt", "offset": 7}, rt).content == "789"
    past = dispatch("read_file", {"path": "abc.txt", "offset": 50}, rt)
    assert past.ok and "past the end" in past.content


def test_read_file_cap_and_note(rt: ToolRuntime) -> None:
    (rt.workspace / "big.txt").write_text("é" * READ_CAP_BYTES, encoding="utf-8")
    res = dispatch("read_file", {"path": "big.txt"}, rt)
    text, note = res.content.rsplit("\n", 1)
    assert len(text.encode("utf-8")) <= READ_CAP_BYTES
    assert len(text) == READ_CAP_BYTES // 2  # two bytes a character
    assert note.startswith("[truncated: showed characters 0-131072 of big.txt")
    assert "offset=131072" in note
    assert res.data["truncated"] is True


def test_read_refusals(rt: ToolRuntime) -> None:
    out = dispatch("read_file", {"path": "link_out/file.txt"}, rt)
    assert (out.status, out.gate, out.rule) == ("denied", "dispatch", "path-symlink-escape")
    assert out.content.startswith("[denied]")
    sensitive = dispatch("read_file", {"path": ".env"}, rt)
    assert (sensitive.status, sensitive.rule) == ("denied", "path-sensitive")
    assert "approval" in sensitive.content
    approved = dispatch("read_file", {"path": ".env"}, rt, approved=True)
    assert approved.ok and "API_KEY" in approved.content
    # approval never lifts a deny
    assert dispatch("read_file", {"path": "/etc/passwd"}, rt, approved=True).status == "denied"
    assert dispatch("read_file", {"path": "missing.txt"}, rt).rule == "file-not-found"
    assert dispatch("read_file", {"path": "src"}, rt).rule == "is-directory"
    (rt.workspace / "bin.dat").write_bytes(b"\x00\x01\x02")
    assert dispatch("read_file", {"path": "bin.dat"}, rt).rule == "binary-file"


def test_read_files(rt: ToolRuntime) -> None:
    res = dispatch("read_files", {"paths": ["src/app.py", "environment.md"]}, rt)
    assert res.content == "=== src/app.py ===\nprint('hi')\n\n\n=== environment.md ===\ndocs\n"
    refused = dispatch("read_files", {"paths": ["src/app.py", "../ws-evil/secret.txt"]}, rt)
    assert refused.status == "denied" and "evil" not in refused.content.replace("ws-evil", "")


def test_write_file_creates_parents(rt: ToolRuntime) -> None:
    res = dispatch("write_file", {"path": "a/b/c.txt", "content": "hé\n"}, rt)
    assert res.ok and res.content == "created a/b/c.txt (4 bytes)"
    assert (rt.workspace / "a/b/c.txt").read_text(encoding="utf-8") == "hé\n"
    again = dispatch("write_file", {"path": "a/b/c.txt", "content": "x"}, rt)
    assert again.content == "replaced a/b/c.txt (1 bytes)"


def test_write_file_refusals(rt: ToolRuntime, layout: Path) -> None:
    for path, rule in [
        ("link_out/new.txt", "path-symlink-escape"),
        ("passwd", "path-symlink-escape"),
        ("../escape.txt", "path-traversal"),
        ("/tmp/escape.txt", "path-outside"),
        (".ssh/authorized_keys", "path-sensitive"),
        (".git/hooks/pre-commit", "path-vcs-internal"),
        ("%2e%2e/x", "path-encoded"),
    ]:
        res = dispatch("write_file", {"path": path, "content": "x"}, rt)
        assert (res.status, res.rule) == ("denied", rule), path
    assert not (layout.parent / "outside" / "new.txt").exists()
    assert not (layout.parent / "escape.txt").exists()
    assert dispatch("write_file", {"path": "src", "content": "x"}, rt).rule == "is-directory"


def test_write_through_a_symlink_inside_writes_the_target(rt: ToolRuntime) -> None:
    assert dispatch("write_file", {"path": "link_in/new.py", "content": "y"}, rt).ok
    assert (rt.workspace / "src" / "new.py").read_text() == "y"
    assert (rt.workspace / "link_in").is_symlink()


def test_edit_file(rt: ToolRuntime) -> None:
    (rt.workspace / "e.txt").write_text("alpha\nbeta\nalpha\n", encoding="utf-8")
    none = dispatch("edit_file", {"path": "e.txt", "old_str": "gamma", "new_str": "x"}, rt)
    assert none.rule == "replace-no-match" and "nothing was changed" in none.content
    many = dispatch("edit_file", {"path": "e.txt", "old_str": "alpha", "new_str": "x"}, rt)
    assert many.rule == "replace-ambiguous"
    assert "occurs 2 times in e.txt (lines 1, 3)" in many.content
    assert (rt.workspace / "e.txt").read_text() == "alpha\nbeta\nalpha\n"
    one = dispatch("edit_file", {"path": "e.txt", "old_str": "beta", "new_str": "BETA"}, rt)
    assert one.ok and one.content == "edited e.txt: replaced 1 occurrence at line 2"
    assert (rt.workspace / "e.txt").read_text() == "alpha\nBETA\nalpha\n"
    outside = dispatch(
        "edit_file", {"path": "link_out/file.txt", "old_str": "o", "new_str": "x"}, rt
    )
    assert outside.status == "denied"
    (rt.workspace / "latin1.txt").write_bytes(b"caf\xe9\n")
    bad = dispatch("edit_file", {"path": "latin1.txt", "old_str": "caf", "new_str": "x"}, rt)
    assert bad.rule == "not-utf8"


def test_patch(rt: ToolRuntime) -> None:
    (rt.workspace / "p.txt").write_text("a\nb\na\n", encoding="utf-8")
    amb = dispatch("patch", {"path": "p.txt", "old": "a", "new": "z"}, rt)
    assert amb.rule == "replace-ambiguous"
    wrong = dispatch("patch", {"path": "p.txt", "old": "a", "new": "z", "count": 3}, rt)
    assert wrong.rule == "replace-count-mismatch"
    res = dispatch("patch", {"path": "p.txt", "old": "a", "new": "z", "count": -1}, rt)
    assert res.ok
    assert res.content == (
        "replaced 2 occurrence(s) in p.txt\n--- a/p.txt\n+++ b/p.txt\n"
        "@@ -1,3 +1,3 @@\n-a\n+z\n b\n-a\n+z\n"
    )
    two = dispatch("patch", {"path": "p.txt", "old": "z", "new": "q", "count": 2}, rt)
    assert two.ok and (rt.workspace / "p.txt").read_text() == "q\nb\nq\n"


def test_shared_impl_keys_tell_shapes_apart(rt: ToolRuntime) -> None:
    (rt.workspace / "s.txt").write_text("one\n", encoding="utf-8")
    replace = IMPLEMENTATIONS["fs.replace"]
    assert replace({"path": "s.txt", "old_str": "one", "new_str": "two"}, rt).ok
    assert "--- a/s.txt" in replace({"path": "s.txt", "old": "two", "new": "3"}, rt).content
    read = IMPLEMENTATIONS["fs.read"]
    assert read({"paths": ["s.txt"]}, rt).content == "=== s.txt ===\n3\n"


def test_list_dir(rt: ToolRuntime) -> None:
    res = dispatch("list_dir", {}, rt)
    lines = res.content.splitlines()
    assert lines[0] == ".:"
    assert "src/" in lines and "link_out@ (symbolic link)" in lines
    assert "environment.md (5 bytes)" in lines
    assert (
        dispatch("list_dir", {"path": "src"}, rt).content
        == "src:\napp.py (12 bytes)\nenv.py (6 bytes)"
    )
    assert dispatch("list_dir", {"path": "link_out"}, rt).status == "denied"
    assert dispatch("list_dir", {"path": "src/app.py"}, rt).rule == "not-directory"


def test_search_files(rt: ToolRuntime) -> None:
    res = dispatch("search_files", {"query": "print"}, rt)
    assert res.content.splitlines()[0] == "src/app.py:1: print('hi')"
    # never follows links out, never searches credentials
    assert dispatch("search_files", {"query": "outside"}, rt).content.startswith("no matches")
    assert dispatch("search_files", {"query": "root:"}, rt).content.startswith("no matches")
    key = dispatch("search_files", {"query": "API_KEY"}, rt)
    assert key.content.startswith("no matches") and "sensitive file(s) not searched" in key.content
    names = dispatch(
        "search_files", {"query": "ENV", "target": "name", "case_sensitive": False}, rt
    )
    assert names.content.splitlines()[0] == "environment.md"
    assert "src/env.py" in names.content
    globbed = dispatch("search_files", {"query": "x", "pattern": "*.py"}, rt)
    assert globbed.content.splitlines()[0] == "src/env.py:1: x = 1"
    capped = dispatch("search_files", {"query": "i", "max_results": 1}, rt)
    assert "stopped at 1 results" in capped.content
    assert dispatch("search_files", {"query": "x", "path": "../ws-evil"}, rt).status == "denied"


def _entry(name: str) -> ToolEntry:
    """The plan entry the compiler writes for a built-in tool."""
    tool = resolve_builtin(name)
    assert tool is not None, name
    return builtin_entry(tool, description="")


def test_path_args() -> None:
    # The plan entry says which arguments are paths; nothing goes by name.
    assert path_args(_entry("read_file"), {"path": "a"}) == [("path", "a", "read")]
    assert path_args(_entry("read_files"), {"paths": ["a", "b"]}) == [
        ("paths", "a", "read"),
        ("paths", "b", "read"),
    ]
    assert path_args(_entry("write_file"), {"path": "a", "content": ""}) == [("path", "a", "write")]
    assert path_args(_entry("edit_file"), {"path": "a"}) == [("path", "a", "write")]
    assert path_args(_entry("patch"), {"path": "a"}) == [("path", "a", "write")]
    assert path_args(_entry("list_dir"), {}) == [("path", ".", "read")]
    assert path_args(_entry("search_files"), {"query": "q", "path": "src"}) == [
        ("path", "src", "read")
    ]
    assert path_args(_entry("terminal"), {"command": "ls", "cwd": "sub"}) == [
        ("cwd", "sub", "read")
    ]
    # A shell command runs in its working directory, the root when omitted.
    assert path_args(_entry("shell"), {"command": "ls"}) == [("cwd", ".", "read")]
    assert path_args(_entry("context_read"), {"region": "r"}) == []
    # A tool the plan does not describe touches nothing the gates could confine.
    assert path_args(None, {"path": "/etc"}) == []
    # A list argument that is not a list is the schema gate's to refuse.
    assert path_args(_entry("read_files"), {"paths": "a"}) == []


def test_unknown_tool_is_unavailable(rt: ToolRuntime) -> None:
    res = dispatch("no_such_tool", {"url": "https://example.com"}, rt)
    assert (res.status, res.rule) == ("unavailable", "no-implementation")


def test_edit_refuses_a_huge_sparse_file(rt: ToolRuntime) -> None:
    # `truncate -s 1T` in the sandbox costs nothing; reading it whole into
    # Charter's own memory would take the run down. 17 MiB here stands in.
    big = rt.workspace / "big.txt"
    with open(big, "wb") as f:
        f.write(b"needle\n")
        f.truncate(17 * 1024 * 1024)
    for tool, args in [
        ("edit_file", {"path": "big.txt", "old_str": "needle", "new_str": "x"}),
        ("patch", {"path": "big.txt", "old": "needle", "new": "x"}),
    ]:
        res = dispatch(tool, args, rt)
        assert (res.status, res.rule) == ("error", "file-too-large"), res
    assert big.read_bytes()[:7] == b"needle\n"


def test_a_trailing_slash_names_a_directory_never_a_file(rt: ToolRuntime) -> None:
    res = dispatch("write_file", {"path": "newdir/", "content": "x"}, rt)
    assert (res.status, res.rule) == ("error", "is-directory"), res
    assert not (rt.workspace / "newdir").exists()
    assert dispatch("read_file", {"path": "src/app.py/"}, rt).rule == "is-directory"
    edit = dispatch("edit_file", {"path": "src/app.py/.", "old_str": "hi", "new_str": "x"}, rt)
    assert edit.rule == "is-directory"
    assert (rt.workspace / "src/app.py").read_text() == "print('hi')\n"


def test_edit_of_a_directory_is_an_error_not_a_crash(rt: ToolRuntime) -> None:
    res = dispatch("edit_file", {"path": "src", "old_str": "a", "new_str": "b"}, rt)
    assert (res.status, res.rule) == ("error", "is-directory"), res


@pytest.mark.parametrize(
    ("tool", "args", "rule"),
    [
        ("read_file", {"path": "src/app.py", "limit": -1}, "read-bad-range"),
        ("read_file", {"path": "src/app.py", "limit": 0}, "read-bad-range"),
        ("read_file", {"path": "src/app.py", "offset": -3}, "read-bad-range"),
        ("search_files", {"query": "x", "max_results": -1}, "search-bad-limit"),
    ],
)
def test_bad_ranges_are_refused_even_past_the_schema(
    rt: ToolRuntime, tool: str, args: dict[str, Any], rule: str
) -> None:
    # A negative limit read the whole file (f.read(-1)) before the cap.
    res = dispatch(tool, args, rt)
    assert (res.status, res.rule) == ("error", rule), res


def test_a_long_name_of_multibyte_characters_can_be_written(rt: ToolRuntime) -> None:
    name = "é" * 120  # 240 bytes: a valid name, whose temporary name must fit too
    res = dispatch("write_file", {"path": name, "content": "x"}, rt)
    assert res.ok, res
    assert (rt.workspace / name).read_text() == "x"


def test_search_of_a_very_deep_tree_answers_and_says_what_it_left(rt: ToolRuntime) -> None:
    # os.fwalk recursed once per level: 1,500 nested folders (one `mkdir -p`
    # in the sandbox) crashed the search with RecursionError.
    fd = os.open(rt.workspace, os.O_RDONLY)
    for level in range(1500):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
        if level == 5:
            with open(os.open("shallow.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
                f.write("needle\n")
    os.close(fd)
    try:
        res = dispatch("search_files", {"query": "needle"}, rt)
    finally:
        # pytest's own clean-up of old temporary folders recurses too
        subprocess.run(["rm", "-rf", str(rt.workspace / "d")], check=True)
    assert res.status == "ok", res
    assert "d/d/d/d/d/d/shallow.txt:1: needle" in res.content
    assert "deeper than 64 levels not searched" in res.content
    assert res.data["complete"] is False
