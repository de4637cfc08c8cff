"""`validate` and `compile` stay light at start-up: no HTTP, MCP or async stack, no jsonschema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# jsonschema (about 65 ms to import) is needed only for a schema the quick
# meta-schema check cannot vouch for; the shipped examples need none.
HEAVY = ("httpx", "httpx2", "mcp", "anyio", "uvicorn", "starlette", "jsonschema", "referencing")
# validate renders no description, so it needs no template engine either
# (compile renders them, and loads jinja2 for that).
VALIDATE_HEAVY = (*HEAVY, "jinja2")

CODE = """
import io, json, sys, contextlib
from charter.compiler.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(%r)))
print(json.dumps({"code": code, "heavy": heavy}))
"""


@pytest.mark.parametrize(
    ("argv", "heavy"),
    [
        (["validate", "--no-user-config", "--format", "concise", "blueprints"], VALIDATE_HEAVY),
        (["validate", "--no-user-config", "--format", "json", "blueprints/coder"], VALIDATE_HEAVY),
        (["compile", "--no-user-config", "blueprints/notes-core"], HEAVY),
    ],
)
def test_no_heavy_imports(argv: list[str], heavy: tuple[str, ...]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE % json.dumps(heavy), *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    assert result["heavy"] == []


def _console(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "charter.compiler", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_fast_exit_still_delivers_all_output_and_the_exit_code(tmp_path: Path) -> None:
    out = _console("validate", "--no-user-config", "--format", "json", "blueprints/coder")
    assert out.returncode == 0
    report = json.loads(out.stdout)  # complete, not cut off by os._exit
    assert report["valid"] is True

    bad = tmp_path / "agent.yaml"
    bad.write_text("schema_version: 1\nagent: {name: x}\nnot_a_key: 1\n")
    out = _console("validate", "--no-user-config", "--format", "json", str(tmp_path))
    assert out.returncode == 1
    assert json.loads(out.stdout)["valid"] is False


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["validate", "--no-user-config", "--format", "json", "blueprints/coder"], 0),
        (["compile", "--no-user-config", "blueprints/notes-core"], 0),
        (["validate", "--no-user-config", "no-such-project"], 2),
    ],
)
def test_a_reader_that_went_away_gets_no_traceback(argv: list[str], code: int) -> None:
    # `charter ... | head -c 0`: nobody reads the output. The console script
    # reports no broken pipe on stderr, neither from the verb nor from the
    # interpreter's own flush at exit (which would make the exit code 120),
    # and exits with the verb's code.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "charter.compiler", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == code, proc.stderr
    assert "BrokenPipeError" not in proc.stderr
    assert "Exception ignored" not in proc.stderr


def test_the_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    from charter.runtime.version import VERSION

    assert version("charter-policy") == VERSION
    out = _console("--version")
    assert out.stdout.strip() == f"charter {VERSION}"
