"""`--color auto|always|never` for every verb (before the verb, as with git),
over NO_COLOR/FORCE_COLOR for that one command; `-q` on validate leaves out
notes, and on run is `--quiet`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from charter.compiler.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "CH235" / "trigger"
ESC = "\x1b["


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "p")
    return tmp_path / "p"


def _validate(project: Path, *flags: str, top: tuple[str, ...] = ()) -> None:
    config = str(project / "user-config.toml")
    main([*top, "validate", str(project), "--config", config, "--format", "full", *flags])


def test_color_always_and_never_win_over_the_environment(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    _validate(project, top=("--color", "always"))
    assert ESC in capsys.readouterr().out
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    _validate(project, top=("--color=never",))
    assert ESC not in capsys.readouterr().out
    # for that command only: the environment is as it was
    assert os.environ.get("FORCE_COLOR") == "1" and "NO_COLOR" not in os.environ


def test_a_mistyped_verb_after_color_is_still_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--color", "never", "valdate"]) == 2
    assert "did you mean 'validate'" in capsys.readouterr().err


def test_quiet_validate_leaves_out_notes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _validate(project, "--format", "concise")
    loud = capsys.readouterr().out
    _validate(project, "-q", "--format", "concise")
    quiet = capsys.readouterr().out
    assert "CH235" in loud and "CH235" not in quiet
    assert "CH252" in quiet  # warnings stay


def test_run_takes_q_for_quiet() -> None:
    from charter.compiler.cli import verb_parser

    args = verb_parser("run").parse_args(["x", "--agent", "a", "-q"])
    assert args.quiet is True
