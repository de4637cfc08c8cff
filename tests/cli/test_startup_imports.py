"""`validate` and `compile` stay light: no HTTP, MCP or async stack at start-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("httpx", "httpx2", "mcp", "anyio", "uvicorn", "starlette")

CODE = """
import io, json, sys, contextlib
from charter.compiler.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(%r)))
print(json.dumps({"code": code, "heavy": heavy}))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--no-user-config", "--format", "concise", "blueprints"],
        ["validate", "--no-user-config", "--format", "json", "blueprints/coder"],
        ["compile", "--no-user-config", "blueprints/notes-core"],
    ],
)
def test_no_heavy_imports(argv: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE % json.dumps(HEAVY), *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    assert result["heavy"] == []
