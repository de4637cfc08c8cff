"""A stage's own model list: with ``--stage-models`` naming the providers the
run's endpoint serves, each stage runs on the first entry of its list on one
of them, and moves along the list (then to the run's own model) when the
model in use stops being usable; an ordinary bad request spends no fallback.
Without the flag every stage runs on the run's own model, as Leviath's
``--model`` overrides them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BLUEPRINT = """[agent]
name = "picky"

[stages.first]
mode = "autonomous"
available_tools = []
[stages.first.model]
models = [
  { provider = "openrouter", model = "vendor/strong" },
  { provider = "anthropic", model = "claude-sonnet-5" },
  { provider = "openrouter", model = "vendor/cheap" },
]
[stages.first.transitions.second]
condition = "llm_choice"

[stages.second]
mode = "autonomous"
available_tools = []
[stages.second.model]
provider = "openrouter"
model = "vendor/reader"
"""

SCRIPT = """turns:
  - {stage: first, edge: second}
  - {stage: second, text: done}
"""


def test_each_stage_runs_on_its_own_model(recorded_run: Any) -> None:
    ran, provider = recorded_run(
        BLUEPRINT, SCRIPT, "picky", "--yolo", "--stage-models", "openrouter"
    )
    assert ran.code == 0, ran.finished
    assert [(r.stage, r.model) for r in provider.requests] == [
        ("first", "vendor/strong"),
        ("second", "vendor/reader"),
    ]
    assert [e.get("model") for e in ran.of("model_turn")] == ["vendor/strong", "vendor/reader"]


def test_without_the_flag_every_stage_runs_on_the_runs_model(recorded_run: Any) -> None:
    ran, provider = recorded_run(BLUEPRINT, SCRIPT, "picky", "--yolo")
    assert ran.code == 0, ran.finished
    assert [r.model for r in provider.requests] == [None, None]


def test_an_unusable_model_falls_back_along_the_list_for_the_rest_of_the_run(
    recorded_run: Any,
) -> None:
    script = """turns:
  - {stage: first, fail: "out of credit"}
  - {stage: first, fail: "out of credit"}
  - {stage: first, text: "thinking"}
  - {stage: first, edge: second}
  - {stage: second, text: done}
"""
    ran, provider = recorded_run(
        BLUEPRINT, script, "picky", "--yolo", "--stage-models", "openrouter"
    )
    assert ran.code == 0, ran.finished
    assert [r.model for r in provider.requests] == [
        "vendor/strong",
        "vendor/cheap",  # anthropic is not served by this endpoint
        None,  # the run's own model, after the last entry
        None,  # and it stays there
        "vendor/reader",
    ]
    assert [(e["model"], e["to"]) for e in ran.of("model_fallback")] == [
        ("vendor/strong", "vendor/cheap"),
        ("vendor/cheap", "the run's own model"),
    ]


def test_a_bad_request_spends_no_fallback(
    charter_run: Any, model_server: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    asked: list[str] = []

    def reply(seen: Any) -> Any:
        asked.append(seen.body["model"])
        return model_server.Reply(400, {"error": {"message": "bad request"}})

    model_server.reply = reply
    home = tmp_path / "agent"
    home.mkdir()
    (home / "agent.leviath").write_text(BLUEPRINT, "utf-8")
    work = tmp_path / "work"
    work.mkdir()
    model = ("--model", "openai:own", "--base-url", model_server.base_url)
    ran = charter_run(
        home, "--agent", "picky", *model, "--yolo", "--stage-models", "openrouter", workdir=work
    )
    assert ran.code != 0
    assert set(asked) == {"vendor/strong"}
    assert not ran.of("model_fallback")
