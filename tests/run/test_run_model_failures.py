"""`charter run` against model endpoints that fail: every wait is bounded, every
retry is shown with its reason, and a broken answer ends the run cleanly.

The endpoints are the fakes of fake_models.py: one that hangs, one that
answers 429 and 500, one that answers with something that is not JSON.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_models import HANG, answer, error, fake_model  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CHAT = REPO / "tests" / "fixtures" / "run" / "chat"


def _run(charter_run: Any, model: Any, tmp_path: Path, *args: str, **kw: Any) -> Any:
    return charter_run(
        CHAT,
        "--agent",
        "chat",
        "--model",
        "openai:fake",
        "--base-url",
        model.base_url,
        *args,
        workdir=tmp_path,
        **kw,
    )


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_each_retry_is_an_event_with_its_reason(charter_run: Any, tmp_path: Path) -> None:
    replies = (
        error(429, "slow down", ("Retry-After", "0")),
        error(500, "the GPU caught fire"),
        answer("done"),
    )
    with fake_model(*replies) as model:
        ran = _run(charter_run, model, tmp_path, "--model-retries", "2")
    assert ran.code == 0, ran.stderr
    assert ran.finished["output_text"] == "done"
    retries = ran.of("model_retry")
    assert [(r["attempt"], r["attempts"], r["status"]) for r in retries] == [
        (1, 3, 429),
        (2, 3, 500),
    ]
    assert "slow down" in retries[0]["reason"] and retries[0]["delay_s"] == 0
    assert "the GPU caught fire" in retries[1]["reason"]


def test_the_live_view_and_quiet_show_retries_too(charter_run: Any, tmp_path: Path) -> None:
    for view in ("--quiet", None):
        with fake_model(error(503, "overloaded", ("Retry-After", "0")), answer("ok")) as model:
            extra = (view,) if view else ()
            ran = _run(charter_run, model, tmp_path, *extra, json_events=False)
        assert ran.code == 0, ran.stderr
        assert "model request 1 of 4 failed" in ran.stderr and "overloaded" in ran.stderr


def test_no_retries_fails_at_the_first_error(charter_run: Any, tmp_path: Path) -> None:
    with fake_model(error(500, "down"), answer("never")) as model:
        ran = _run(charter_run, model, tmp_path, "--model-retries", "0")
        assert model.requests == 1
    assert ran.code == 4
    assert ran.of("model_retry") == []
    assert "500" in ran.finished["reason"] and "down" in ran.finished["reason"]


def test_an_answer_that_is_not_json_ends_the_run_with_a_model_error(
    charter_run: Any, tmp_path: Path
) -> None:
    from fake_models import Reply

    with fake_model(Reply(200, b"<html>gateway says hi{")) as model:
        ran = _run(charter_run, model, tmp_path)
    assert ran.code == 4
    [problem] = ran.of("model_error")
    assert "not JSON" in problem["message"] and "gateway says hi" in problem["message"]
    assert "Traceback" not in ran.stderr


def test_model_timeout_bounds_a_hung_endpoint(charter_run: Any, tmp_path: Path) -> None:
    started = time.monotonic()
    with fake_model(HANG) as model:
        ran = _run(charter_run, model, tmp_path, "--model-timeout", "0.5", "--model-retries", "1")
        assert model.requests == 2
    elapsed = time.monotonic() - started
    assert ran.code == 4
    [retry] = ran.of("model_retry")
    assert "did not answer within 0.5 s" in retry["reason"] and retry["status"] is None
    assert "gave up after 2 attempts" in ran.finished["reason"]
    assert elapsed < 5, elapsed  # 2 x 0.5 s and one short backoff, not 8 minutes


def test_request_timeout_secs_in_the_config_bounds_each_request(
    charter_run: Any, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("request_timeout_secs = 1\n")
    started = time.monotonic()
    with fake_model(HANG) as model:
        ran = _run(charter_run, model, tmp_path, "--config", str(config), "--model-retries", "0")
    assert ran.code == 4
    assert "did not answer within 1 s" in ran.finished["reason"]
    assert time.monotonic() - started < 5
    plan = (ran.run_dir / "plan.json").read_text()
    assert '"model_request_timeout_secs":1' in plan


def test_model_options_are_refused_for_a_script(charter_run: Any, tmp_path: Path) -> None:
    script = REPO / "tests" / "fixtures" / "run" / "scripts" / "solo-sleep.yaml"
    ran = charter_run(
        CHAT,
        "--agent",
        "chat",
        "--model",
        f"script:{script}",
        "--model-timeout",
        "3",
        workdir=tmp_path,
    )
    assert ran.code == 2
    assert "apply to openai: models only" in ran.stderr
