"""``charter serve`` without its CLI: the runtime's front door refuses a server
that cannot start before it binds anything, and a project's plan comes from the
caller's compile (the runtime never compiles)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from charter.runtime import Plan, ServeRefused, ServeRequest, run_server
from charter.runtime.serve.plans import PlanLoadError, ProjectSource
from charter.runtime.serve.tokens import read_token, token_files


@pytest.fixture
def plan(kit: SimpleNamespace) -> Plan:
    made: Plan = kit.make_plan({"work": {"read_file": "allow"}})
    return made


def _never() -> Plan | str:
    raise AssertionError("compiled for a plan file")


def test_a_non_loopback_address_without_a_token_is_refused(
    plan: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHARTER_SERVE_TOKEN", raising=False)
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    request = ServeRequest(
        target=path, listen="0.0.0.0:0", workspace=str(tmp_path), log=tmp_path / "log.jsonl"
    )
    with pytest.raises(ServeRefused, match="is not a loopback address, so it needs a bearer"):
        run_server(request, _never)


def test_a_project_that_does_not_compile_is_no_usable_plan(tmp_path: Path) -> None:
    calls: list[int] = []

    def compile_project() -> Plan | str:
        calls.append(1)
        return "proj: the project does not compile"

    request = ServeRequest(
        target=tmp_path, workspace=str(tmp_path), log=tmp_path / "log.jsonl", listen="127.0.0.1:0"
    )
    with pytest.raises(ServeRefused, match="^no usable plan: proj: the project does not compile$"):
        run_server(request, compile_project)
    assert calls == [1]


def test_a_bad_listen_value_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    request = ServeRequest(target=tmp_path / "missing.json", listen="nowhere")
    with pytest.raises(ServeRefused):
        run_server(request, _never)


def test_a_project_source_prepares_what_the_caller_compiled(plan: Plan, tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("name: x\n")
    source = ProjectSource(tmp_path, lambda: plan)
    assert source.load().plan is plan
    before = source.signature()
    (tmp_path / "agent.yaml").write_text("name: xy\n")
    assert source.signature() != before
    refusing = ProjectSource(tmp_path, lambda: "does not compile")
    with pytest.raises(PlanLoadError, match="does not compile"):
        refusing.load()


def test_a_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("Authorization: Bearer abc123\n")
    os.chmod(token, 0o600)
    assert read_token(token) == "abc123"
    os.chmod(token, 0o644)
    with pytest.raises(ValueError, match="can be read by other users"):
        read_token(token)


def test_the_token_of_the_plans_charter_folder_applies(tmp_path: Path) -> None:
    plan = tmp_path / ".charter" / "plan.json"
    found = token_files(str(tmp_path / "ws"), plan)
    assert found == [
        tmp_path / "ws" / ".charter" / "serve" / "token",
        (tmp_path / ".charter" / "serve" / "token").resolve(),
    ]
