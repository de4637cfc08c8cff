"""The command line: charter sandbox, and the profile in show and diff."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from _support.sandbox import need_full_sandbox

from charter.compiler.cli import main
from charter.runtime.sandbox import probe

REPO = Path(__file__).resolve().parents[2]


def _plan(
    tmp_path: Path, capsys: Any, config: dict[str, Any] | None = None, name: str = "p"
) -> Path:
    src = tmp_path / f"coder-{name}"
    if not src.exists():
        shutil.copytree(REPO / "blueprints" / "coder", src)
    out = tmp_path / f"{name}.json"
    argv = ["compile", str(src), "-o", str(out)]
    if config is None:
        argv.append("--no-user-config")
    else:
        cfg = tmp_path / f"{name}.config.toml"
        cfg.write_text(tomli_w.dumps(config))
        argv += ["--config", str(cfg)]
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    return out


def test_sandbox_runs_the_command_contained_and_returns_its_exit_code(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_full_sandbox()
    plan = _plan(tmp_path, capsys)
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    monkeypatch.chdir(ws)
    outside = tmp_path / "outside.txt"
    code = main(
        [
            "sandbox",
            str(plan),
            "--agent",
            "coder",
            "--stage",
            "implement",
            "--",
            "sh",
            "-c",
            f"echo in > made.txt; echo out > {outside}; touch .git/x; exit 7",
        ]
    )
    assert code == 7
    assert (ws / "made.txt").read_text() == "in\n"
    assert not outside.exists() and not (ws / ".git" / "x").exists()


def test_sandbox_describe_says_what_is_contained(tmp_path: Path, capsys: Any) -> None:
    need_full_sandbox()
    plan = _plan(tmp_path, capsys)
    assert main(["sandbox", str(plan), "--agent", "coder", "--describe"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sandbox: namespace") and "network: none" in out


def test_sandbox_refuses_where_nothing_can_be_contained(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path, capsys)
    monkeypatch.setenv("CHARTER_SANDBOX_FAKE_HOST", "none")
    probe.reset()
    try:
        code = main(["sandbox", str(plan), "--agent", "coder", "--", "true"])
    finally:
        monkeypatch.delenv("CHARTER_SANDBOX_FAKE_HOST")
        probe.reset()
    assert code == 125
    assert "cannot contain" in capsys.readouterr().err


def test_sandbox_usage_errors(tmp_path: Path, capsys: Any) -> None:
    plan = _plan(tmp_path, capsys)
    assert main(["sandbox", str(plan), "--agent", "nobody", "--", "true"]) == 2
    assert "no agent named 'nobody'" in capsys.readouterr().err
    assert main(["sandbox", str(plan), "--agent", "coder", "--stage", "x", "--", "true"]) == 2
    assert "has no stage 'x'" in capsys.readouterr().err


def test_show_lists_each_stages_sandbox(tmp_path: Path, capsys: Any) -> None:
    plan = _plan(tmp_path, capsys)
    assert main(["show", str(plan), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    boxes = {(b["agent"], b["stage"]): b for b in data["sandboxes"]}
    implement = boxes[("coder", "implement")]
    assert implement["profile"]["kind"] == "namespace"
    assert implement["summary"].startswith("namespace; workspace writable; no network")
    assert main(["show", str(plan), "--format", "text"]) == 0
    assert "coder/implement\tsandbox\tnamespace" in capsys.readouterr().out


def test_diff_fails_on_a_looser_sandbox(tmp_path: Path, capsys: Any) -> None:
    old = _plan(tmp_path, capsys, name="old")
    new = _plan(tmp_path, capsys, {"sandbox": {"network": "proxy", "allow_hosts": ["*"]}}, "new")
    assert main(["diff", str(old), str(new), "--fail-on-loosen"]) == 1
    out = capsys.readouterr().out
    assert "sandbox network: LOOSER none -> proxy" in out
    # The way back is a tightening: reported, not failed.
    assert main(["diff", str(new), str(old), "--fail-on-loosen", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    nets = [c for c in data["changes"] if c.get("key") == "network"]
    assert nets and not any(c["loosened"] for c in nets)


def test_a_plan_of_the_previous_schema_is_refused_clearly(tmp_path: Path, capsys: Any) -> None:
    plan = _plan(tmp_path, capsys)
    data = json.loads(plan.read_text())
    data["schema_version"] = 1
    data["body"]["schema_version"] = 1
    plan.write_text(json.dumps(data))
    assert main(["sandbox", str(plan), "--agent", "coder", "--describe"]) == 2
    err = capsys.readouterr().err
    assert "schema version 1" in err and "recompile" in err
