"""`charter run` with the OpenAI-compatible provider, against a local server
on 127.0.0.1 that plays a model calling tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SOLO = REPO / "tests" / "fixtures" / "run" / "solo"


def _run_solo(charter_run: Any, model_server: Any, workdir: Path, *args: str) -> Any:
    """`charter run` of the solo fixture agent, its model the local server."""
    model = ("--model", "openai:fake", "--base-url", model_server.base_url)
    return charter_run(SOLO, "--agent", "solo", *model, *args, workdir=workdir)


def test_openai_provider_drives_a_run(
    charter_run: Any, model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    completion, Reply = model_server.completion, model_server.Reply

    def reply(seen: Any) -> Any:
        body = seen.body
        names = [t["function"]["name"] for t in body.get("tools", [])]
        turn = len(model_server.seen)
        if turn == 1:
            assert "choose_edge" in names and "write_file" in names
            assert "submit_output" not in names
            return Reply(
                body=completion(
                    tool_calls=[
                        ("c1", "write_file", '{"path": '),  # malformed: answered, not fatal
                        ("c2", "write_file", {"path": "o.txt", "content": "x"}),
                    ]
                )
            )
        if turn == 2:
            results = {
                m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"
            }
            assert results["c1"].startswith("[error]") and "not valid JSON" in results["c1"]
            assert results["c2"].startswith("created")
            return Reply(body=completion(tool_calls=[("c3", "choose_edge", {"edge": "report"})]))
        assert sorted(names) == ["read_file", "submit_output"]
        return Reply(
            body=completion(tool_calls=[("c4", "submit_output", {"content": '{"via": "openai"}'})])
        )

    model_server.reply = reply
    allow = ("--allow", "write_file", "--allow", "submit_output")
    ran = _run_solo(charter_run, model_server, tmp_path, *allow)
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.finished["output_text"]) == {"via": "openai"}
    assert (tmp_path / "o.txt").read_text() == "x"
    assert len(model_server.seen) == 3
    assert all("authorization" not in s.headers for s in model_server.seen)
    assert [e["to"] for e in ran.of("edge_taken")] == ["report"]


def test_openai_failure_ends_the_run_without_output(
    charter_run: Any, model_server: Any, tmp_path: Path
) -> None:
    Reply = model_server.Reply
    model_server.reply = lambda seen: Reply(400, {"error": {"message": "model 'fake' not found"}})
    ran = _run_solo(charter_run, model_server, tmp_path)
    assert ran.code == 4
    assert "model 'fake' not found" in ran.finished["reason"]
    assert ran.of("model_error")
