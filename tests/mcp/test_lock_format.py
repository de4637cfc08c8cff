"""The lock file: canonical bytes, strict reading, and the pin comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.mcp.filters import select_tools, unmatched_patterns
from charter.runtime.mcp.lock import (
    Change,
    ListedTool,
    Lock,
    LockError,
    ServerLock,
    compare,
    dumps,
    loads,
    pin_tools,
    read_lock,
    write_lock,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "mcp"


def _cases(name: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("case", _cases("filters.jsonl"), ids=lambda c: c["case"])
def test_filters(case: dict[str, Any]) -> None:
    assert select_tools(case["names"], case["include"], case["exclude"]) == case["kept"]


def test_unmatched_patterns_names_the_typos() -> None:
    assert unmatched_patterns(["serch*", "get", "get"], ["search", "get"]) == ["serch*"]


@pytest.mark.parametrize("case", _cases("bad_locks.jsonl"), ids=lambda c: c["case"])
def test_malformed_lock_is_refused_with_a_location(case: dict[str, Any]) -> None:
    with pytest.raises(LockError) as info:
        loads(case["text"])
    assert case["error"] in str(info.value)


LISTED = [
    ListedTool(
        "search", "Search the docs.", {"type": "object", "properties": {"q": {"type": "string"}}}
    ),
    ListedTool("get.page", "", {"type": "object", "properties": {"n": {"default": 1.5}}}),
    ListedTool("Search", "Case twin.", {"type": "object"}),
]


def _lock() -> Lock:
    entry = ServerLock(
        server="docs",
        transport="stdio",
        launch={"command": "docs-mcp", "args": ["--root", "."]},
        manifest_sha256="0" * 64,
        tools=pin_tools("docs", LISTED),
    )
    return Lock({"docs": entry})


def test_round_trip_is_byte_stable(tmp_path: Path) -> None:
    lock = _lock()
    path = tmp_path / "charter.lock.json"
    write_lock(path, lock)
    first = path.read_bytes()
    again = read_lock(path)
    assert again is not None
    write_lock(path, again)
    assert path.read_bytes() == first
    assert first.endswith(b"}\n") and b"\r" not in first
    # Tools are sorted by name; safe names follow runtime.naming (case twins
    # get a suffix, dots become dashes); the float survives.
    entry = again.servers["docs"]
    assert [t.name for t in entry.tools] == ["Search", "get.page", "search"]
    assert {t.name: t.safe_name for t in entry.tools} == {
        "Search": "docs__Search",
        "get.page": "docs__get-page",
        "search": "docs__search-2",
    }
    assert entry.tool("get.page") is not None
    assert entry.tool("get.page").input_schema["properties"]["n"]["default"] == 1.5  # type: ignore[union-attr]


def test_dumps_is_a_fixed_point_of_loads() -> None:
    text = dumps(_lock())
    assert dumps(loads(text)) == text


def test_missing_lock_reads_as_none(tmp_path: Path) -> None:
    assert read_lock(tmp_path / "nope.json") is None


def test_lock_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "charter.lock.json"
    path.write_bytes(b'{"version": 1, "servers": {"\xff": {}}}')
    with pytest.raises(LockError, match="not UTF-8"):
        read_lock(path)


def test_a_server_listing_a_tool_twice_cannot_be_locked() -> None:
    with pytest.raises(LockError, match="more than once"):
        pin_tools("docs", [LISTED[0], LISTED[0]])


def test_compare_offers_only_exact_matches() -> None:
    pins = {t.name: t for t in _lock().servers["docs"].tools}
    now = [
        LISTED[0],  # unchanged
        ListedTool("get.page", "Now also deletes pages.", LISTED[1].input_schema),  # rug pull
        ListedTool("Search", "Case twin.", {"type": "object", "required": ["x"]}),  # schema
        ListedTool("delete", "New tool.", {"type": "object"}),
    ]
    cmp = compare(pins, now)
    assert [t.name for t in cmp.offered] == ["search"]
    assert cmp.changed == (
        Change("Search", ("input_schema",)),
        Change("get.page", ("description",)),
    )
    assert cmp.new == ("delete",)
    assert cmp.missing == ()
    assert not cmp.clean


def test_compare_reports_missing_and_refuses_duplicates() -> None:
    pins = {t.name: t for t in _lock().servers["docs"].tools}
    cmp = compare(pins, [LISTED[0], LISTED[0]])
    assert cmp.offered == ()
    assert cmp.changed == (Change("search", ("listed-twice",)),)
    assert cmp.missing == ("Search", "get.page")


def test_compare_a_pin_without_digests_never_matches() -> None:
    class Bare:
        description_sha256 = None
        schema_sha256 = None

    cmp = compare({"search": Bare()}, [LISTED[0]])
    assert cmp.offered == () and cmp.changed == (Change("search", ("description", "input_schema")),)


def test_relocking_shows_what_changed_since_the_previous_lock() -> None:
    import io

    from charter.runtime.mcp.relock import show_changes

    previous = _lock()
    now = [
        LISTED[0],
        ListedTool("get.page", "Now different.", LISTED[1].input_schema),
        ListedTool("purge", "", {}),
    ]
    entry = ServerLock(
        server="docs",
        transport="stdio",
        launch={"command": "docs-mcp-v2", "args": []},
        manifest_sha256="1" * 64,
        tools=pin_tools("docs", now),
    )
    out = io.StringIO()
    show_changes(out, previous, entry)
    lines = out.getvalue().splitlines()
    assert lines[0] == "docs: 3 tool(s)"
    assert "  ~ get.page: description changed since the previous lock" in lines
    assert "  + purge: new since the previous lock" in lines
    assert "  - Search: no longer listed" in lines
    assert any("launch command or URL changed" in line for line in lines)
