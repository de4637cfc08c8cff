"""Credentials written literally into MCP manifests (rule CH413). Cases are
lines of tests/fixtures/secrets/literal_secrets.jsonl: adding one is adding a
line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.support.literal_secrets import literal_secrets

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "secrets" / "literal_secrets.jsonl"


def _cases() -> list[Any]:
    out = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            out.append(pytest.param(case, id=case["note"]))
    return out


@pytest.mark.parametrize("case", _cases())
def test_case(case: dict[str, Any]) -> None:
    found = literal_secrets(
        env=case.get("env", {}),
        headers=case.get("headers", {}),
        url=case.get("url"),
        args=case.get("args", []),
    )
    assert [list(path) for path, _ in found] == case["found"]


def test_findings_never_repeat_the_value() -> None:
    secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
    found = literal_secrets(
        env={"DOCS_TOKEN": secret, "X": secret},
        headers={"Authorization": f"token {secret}"},
        url=f"https://{secret}@h.example/?token={secret}",
        args=["--token", secret, secret],
    )
    assert len(found) == 6
    for _, what in found:
        assert secret not in what and secret[:8] not in what
