"""`validate` and `compile` stay light at start-up: no HTTP, MCP or async stack, no jsonschema."""

from __future__ import annotations

import json
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


def _console(*argv: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "charter.compiler", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_console_entry_reads_no_package_metadata() -> None:
    # importlib.metadata drags in email, zipfile and csv: a large share of a
    # cold start. The plugin loader stand-in and the static version keep it out.
    out = _console(
        "validate", "--no-user-config", "--format", "concise", "blueprints/coder", importtime=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "pydantic" in imported  # the probe sees imports at all
    assert "importlib.metadata" not in imported
    assert "email" not in imported


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


def test_the_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    from charter.runtime.version import VERSION

    assert version("charter-policy") == VERSION
    out = _console("--version")
    assert out.stdout.strip() == f"charter {VERSION}"
