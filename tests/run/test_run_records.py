"""A run's records are private and verifiable: the run folder is 0700 and its
files 0600 whatever the umask, and the audit log is a hash chain, sealed by
run_finished, that `charter audit --verify` checks line by line."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main


def _solo(solo_run: Any, workspace: Path) -> Any:
    ran = solo_run("solo-attended.yaml", workdir=workspace, stdin="Ada\nd\no\n2\no\n\no\no\n")
    assert ran.code == 0, ran.stderr
    return ran


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_run_records_are_private_whatever_the_umask(solo_run: Any, tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        ran = _solo(solo_run, tmp_path)
    finally:
        os.umask(old)
    run_dir = ran.run_dir
    for folder in (
        tmp_path / ".charter",
        tmp_path / ".charter" / "runs",
        run_dir,
        run_dir / "home",
    ):
        assert _mode(folder) == 0o700, folder
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"plan.json", "audit.jsonl", "events.jsonl", "output.json"}
    for path in files:
        assert _mode(path) == 0o600, path
    for folder in (p for p in run_dir.rglob("*") if p.is_dir()):
        assert _mode(folder) == 0o700, folder


def _verify(capsys: Any, log: Path) -> tuple[int, str]:
    code = main(["audit", "--verify", str(log)])
    return code, capsys.readouterr().out


# Each way of tampering with a log: what it does to the lines, the first
# line `--verify` must name (given the tampered lines) and what it must say.
Tamper = Callable[[list[str]], list[str]]
Where = Callable[[list[str]], int]


def _edit(lines: list[str]) -> list[str]:
    record = json.loads(lines[2])
    record["decision"] = "allow" if record.get("decision") != "allow" else "deny"
    return [*lines[:2], json.dumps(record), *lines[3:]]


TAMPERING: list[tuple[str, Tamper, Where, str]] = [
    ("edited", _edit, lambda ls: 3, "does not match its hash"),
    ("reordered", lambda ls: [ls[0], ls[2], ls[1], *ls[3:]], lambda ls: 2, "chain is broken"),
    ("line removed", lambda ls: [*ls[:3], *ls[4:]], lambda ls: 4, "chain is broken"),
    ("tail cut off", lambda ls: ls[:-1], lambda ls: len(ls) + 1, "ends without run_finished"),
    ("torn last line", lambda ls: [*ls[:-1], ls[-1][:20]], len, "torn last line"),
    ("line after the end", lambda ls: [*ls, ls[1]], len, "after the run's end"),
    ("not JSON", lambda ls: [ls[0], "garbage", *ls[1:]], lambda ls: 2, "not JSON"),
]


def test_an_intact_log_verifies(solo_run: Any, capsys: Any, tmp_path: Path) -> None:
    ran = _solo(solo_run, tmp_path)
    code, out = _verify(capsys, ran.run_dir / "audit.jsonl")
    assert code == 0, out
    assert "intact" in out and ran.finished["audit_hash"] in out


@pytest.mark.parametrize(
    ("name", "tamper", "where", "problem"), TAMPERING, ids=[t[0] for t in TAMPERING]
)
def test_a_tampered_log_names_its_first_bad_line(
    solo_run: Any,
    capsys: Any,
    tmp_path: Path,
    name: str,
    tamper: Tamper,
    where: Where,
    problem: str,
) -> None:
    ran = _solo(solo_run, tmp_path)
    log = ran.run_dir / "audit.jsonl"
    changed = tamper(log.read_text().splitlines())
    # A torn line is one the writer never finished: no newline after it.
    log.write_text("\n".join(changed) + ("" if name == "torn last line" else "\n"))
    code, out = _verify(capsys, log)
    assert code == 1, out
    assert out.startswith(f"{log}:{where(changed)}: ") and problem in out, out


def test_an_unreadable_log_is_exit_2(capsys: Any, tmp_path: Path) -> None:
    assert main(["audit", "--verify", str(tmp_path / "missing.jsonl")]) == 2
