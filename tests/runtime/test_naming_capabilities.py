"""MCP safe names and capability matching."""

from __future__ import annotations

import pytest

from charter.runtime.mcp.naming import MAX_NAME, mcp_safe_name, mcp_safe_names
from charter.runtime.policy.capabilities import grant_covers, is_granted, valid_capability


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("docs", "search_docs", "docs__search_docs"),
        ("docs", "search.docs", "docs__search-docs"),
        ("9lives", "x", "mcp-9lives__x"),
        ("my server", "Get Page", "my-server__Get-Page"),
        ("", "", "server__tool"),
        ("a" * 40, "t", "a" * 30 + "__t"),
    ],
)
def test_safe_names(server: str, tool: str, expected: str) -> None:
    assert mcp_safe_name(server, tool) == expected


def test_safe_names_fit_the_provider_limit() -> None:
    name = mcp_safe_name("s" * 50, "t" * 100)
    assert len(name) == MAX_NAME and name.startswith("s" * 30 + "__")


def test_sanitised_collisions_are_numbered_deterministically() -> None:
    first = mcp_safe_names("docs", ["search.docs", "search-docs", "Search-Docs"])
    second = mcp_safe_names("docs", ["Search-Docs", "search-docs", "search.docs"])
    assert first == second
    assert sorted(first.values()) == [
        "docs__Search-Docs",
        "docs__search-docs-2",
        "docs__search-docs-3",
    ]


@pytest.mark.parametrize(
    ("grant", "required", "covered"),
    [
        ("fs.read", "fs.read", True),
        ("fs.read", "fs.write", False),
        ("mcp.call:*", "mcp.call:docs", True),
        ("mcp.call:*", "mcp.call", False),
        ("mcp.call:*", "mcp.connect:docs", False),
        ("a:*", "a:b:c", True),
        ("a:b:*", "a:b:c", True),
        ("a:b:*", "a:c:d", False),
        ("secret.bind:*", "secret.bind:GH_TOKEN", False),
        ("secret.bind:GH_TOKEN", "secret.bind:GH_TOKEN", True),
        ("tool.call:*", "tool.call:evolve_core", True),
    ],
)
def test_grant_matching(grant: str, required: str, covered: bool) -> None:
    assert grant_covers(grant, required) is covered


def test_is_granted_any_grant() -> None:
    assert is_granted("mcp.call:docs", ["fs.read", "mcp.call:*"])
    assert not is_granted("terminal.exec", ["fs.read"])


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("fs.read", True),
        ("mcp.call:*", True),
        ("*", False),
        ("a*:b", False),
        (" fs", False),
        ("a::b", False),
        (":a", False),
        ("mcp.call:do*cs", False),
        ("", False),
    ],
)
def test_valid_capability(name: str, ok: bool) -> None:
    assert valid_capability(name) is ok
