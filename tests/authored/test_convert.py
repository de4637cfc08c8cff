"""How an entrypoint's return value becomes a result. Cases are data:
``tests/fixtures/authored/results.jsonl`` (one JSON object a line)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.results import ToolResult
from charter.runtime.tools.authored import MAX_RESULT_CHARS, convert_result

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "authored" / "results.jsonl"


def _cases() -> list[Any]:
    rows = [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]
    return [pytest.param(r, id=r["why"]) for r in rows]


@pytest.mark.parametrize("case", _cases())
def test_conversion(case: dict[str, Any]) -> None:
    got = convert_result(case["value"])
    assert got.status == case["status"]
    assert got.content == case["content"]
    assert got.display == case.get("display")
    if "data" in case:
        assert got.data == case["data"]


@dataclass
class SdkResult:  # the shape of an SDK ToolResult class
    content: str
    display_output: str | None = None
    is_error: bool = False
    approval: str = "forged"


class Opaque:
    def __str__(self) -> str:
        return "opaque thing"


class Broken:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_objects_bytes_and_tool_results() -> None:
    sdk = convert_result(SdkResult("hi", display_output="op", is_error=True))
    assert (sdk.status, sdk.content, sdk.display) == ("error", "[error] hi", "op")
    assert "approval" not in sdk.data
    assert convert_result(Opaque()).content == "opaque thing"
    assert convert_result(Broken()).content == "<Broken object>"
    assert convert_result(b"caf\xc3\xa9").content == "café"
    kept = convert_result(ToolResult("ok", "x", display="y", data={"n": 1}))
    assert (kept.content, kept.display, kept.data) == ("x", "y", {"n": 1})
    # A tool cannot hand back a refusal status: it ran, so it is an error.
    assert convert_result(ToolResult("denied", "no")).status == "error"
    big = convert_result("x" * (MAX_RESULT_CHARS + 10))
    assert big.content.endswith("[truncated: 10 more characters]")
