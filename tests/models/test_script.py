"""The scripted model: turns, expectations, malformed JSON, exhaustion, bad files."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from charter.runtime.models import (
    EdgeChoice,
    Message,
    ModelError,
    ModelProvider,
    ModelRequestError,
    ScriptError,
    ScriptExhaustedError,
    ScriptExpectationError,
    ScriptProvider,
    ToolSpec,
    load_provider,
    load_script,
)
from charter.runtime.models import script as script_module

SCRIPTS = Path(__file__).resolve().parent.parent / "fixtures" / "scripts"
BAD = sorted((SCRIPTS / "bad").glob("*.yaml"))
EXPECTATIONS = yaml.safe_load((SCRIPTS / "expectations.yaml").read_text(encoding="utf-8"))


def tools(*names: str) -> list[ToolSpec]:
    return [ToolSpec(name, f"the {name} tool", {"type": "object"}) for name in names]


# --------------------------------------------------------------------------- playing turns


def test_a_script_plays_its_turns_in_order() -> None:
    provider = load_provider("script:" + str(SCRIPTS / "good" / "draft_review.yaml"))
    assert isinstance(provider, ScriptProvider) and isinstance(provider, ModelProvider)
    draft_tools = tools("read_file", "write_file")
    edges = [EdgeChoice("review", "the draft is done")]
    history = [Message.user("Write a draft from notes.md")]

    turn = provider.complete(stage="draft", messages=history, tools=draft_tools, edges=edges)
    assert turn.text == "Let me read the notes first." and turn.finish_reason == "tool_calls"
    (read,) = turn.tool_calls
    assert (read.id, read.name, read.arguments, read.error) == (
        "call_0_0",
        "read_file",
        {"path": "notes.md"},
        None,
    )
    assert read.raw_arguments == '{"path": "notes.md"}'
    history += [turn.message(), Message.tool(read, "- point one")]

    turn = provider.complete(stage="draft", messages=history, tools=draft_tools, edges=edges)
    good, broken = turn.tool_calls
    assert good.id == "w1" and good.arguments == {"path": "draft.md", "content": "# Draft\n"}
    assert broken.id == "call_1_1" and broken.arguments is None
    assert broken.raw_arguments == '{"path": "draft.md", "content": '
    assert broken.error is not None and "not valid JSON" in broken.error
    history += [
        turn.message(),
        Message.tool(good, "wrote 8 bytes"),
        Message.tool(broken, f"[error] {broken.error}"),
    ]

    turn = provider.complete(stage="draft", messages=history, tools=draft_tools, edges=edges)
    assert turn.edge == "review" and turn.tool_calls == () and turn.finish_reason == "stop"
    history.append(turn.message())

    turn = provider.complete(
        stage="review", messages=history, tools=tools("read_file", "submit_output"), edges=()
    )
    assert turn.tool_calls[0].arguments == {"answer": "The draft is in draft.md."}
    assert provider.turns_left == 0 and provider.turns_used == 4

    with pytest.raises(ScriptExhaustedError) as info:
        provider.complete(stage="review", messages=history, tools=(), edges=())
    assert str(info.value).startswith("script exhausted:")
    assert "all 4 turns" in str(info.value) and "'review'" in str(info.value)
    assert info.value.turns == 4 and info.value.stage == "review"
    provider.close()
    with pytest.raises(ModelError, match="closed"):
        provider.complete(stage="review", messages=history, tools=(), edges=())


def test_an_unmet_expectation_names_the_turn_line_and_difference() -> None:
    provider = ScriptProvider.from_file(SCRIPTS / "good" / "draft_review.yaml")
    with pytest.raises(ScriptExpectationError) as info:
        provider.complete(
            stage="draft",
            messages=[Message.user("go")],
            tools=tools("read_file", "run_shell"),
            edges=[EdgeChoice("review")],
        )
    error = info.value
    assert error.turn_index == 0 and error.stage == "draft"
    assert error.differences == ("offered tools differ: missing write_file; unexpected run_shell",)
    assert re.search(
        r"draft_review\.yaml:3: turns\[0\] in stage 'draft': offered tools", str(error)
    )


def test_sub_agents_replay_their_own_turns() -> None:
    root = ScriptProvider.from_file(SCRIPTS / "good" / "draft_review.yaml")
    for _ in range(2):  # every spawn of the agent starts from its first turn
        child = root.for_agent("checker")
        turn = child.complete(stage="check", messages=[], tools=(), edges=())
        assert turn.text == "Checking." and turn.tool_calls[0].arguments == {"answer": "fine"}
        with pytest.raises(ScriptExhaustedError, match="for agent 'checker'"):
            child.complete(stage="check", messages=[], tools=(), edges=())
    assert root.turns_used == 0  # the main agent's turns are untouched

    stranger = root.for_agent("nobody")
    with pytest.raises(ScriptExhaustedError, match="has no turns for agent 'nobody'"):
        stranger.complete(stage="x", messages=[], tools=(), edges=())


def test_a_bare_list_of_turns_is_a_script() -> None:
    provider = ScriptProvider.from_file(SCRIPTS / "good" / "bare_list.yaml")
    assert provider.complete(stage="s", messages=[], tools=(), edges=()).text == "Hello."
    call = provider.complete(stage="s", messages=[], tools=(), edges=()).tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == "{}"


def test_concurrent_callers_each_get_a_distinct_turn() -> None:
    text = "\n".join(f"- text: turn {i}" for i in range(200))
    provider = ScriptProvider.from_text(text, "many.yaml")
    got: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                turn = provider.complete(stage="s", messages=[], tools=(), edges=())
            except ScriptExhaustedError:
                return
            with lock:
                got.append(turn.text or "")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == sorted(f"turn {i}" for i in range(200))


@pytest.mark.parametrize("case", EXPECTATIONS, ids=[case["name"] for case in EXPECTATIONS])
def test_expectations(case: dict[str, Any]) -> None:
    provider = ScriptProvider.from_text(yaml.safe_dump([case["turn"]]), "case.yaml")
    messages = [Message.user(case.get("prompt", "go"))]
    old = case.get("old_results")
    if old:
        call = ModelCall("old", "read_file")
        messages += [Message.assistant(None, [call]), *[Message.tool(call, r) for r in old]]
    results = case.get("results", [])
    if "results" in case:
        call = ModelCall("new", "write_file")
        messages += [Message.assistant(None, [call]), *[Message.tool(call, r) for r in results]]
    offered = case.get("tools", ["read_file", "write_file"])
    edges = [EdgeChoice(target) for target in case.get("edges", ["review"])]
    kwargs: dict[str, Any] = dict(
        stage=case.get("stage", "draft"), messages=messages, tools=tools(*offered), edges=edges
    )
    if not case["unmet"]:
        provider.complete(**kwargs)
        return
    with pytest.raises(ScriptExpectationError) as info:
        provider.complete(**kwargs)
    assert list(info.value.differences) == case["unmet"]
    assert info.value.turn_index == 0


def ModelCall(call_id: str, name: str) -> Any:
    from charter.runtime.models import ModelToolCall

    return ModelToolCall.parse(call_id, name, "{}")


# --------------------------------------------------------------------------- bad files


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_scripts(path: Path) -> None:
    wanted = [
        line.removeprefix("# expect:").strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("# expect:")
    ]
    assert wanted, f"{path.name} lists no expected message"
    with pytest.raises(ScriptError) as info:
        load_script(path)
    message = str(info.value)
    for text in wanted:
        assert text in message, f"{text!r} not in:\n{message}"
    # One line per problem, each naming the file (the header line aside).
    problems = [line for line in message.splitlines() if not line.startswith("script ")]
    assert all(line.startswith(str(path)) for line in problems), message
    assert len(problems) == len(wanted), message


def test_a_script_error_is_a_value_error_so_spec_errors_are_caught_alike() -> None:
    with pytest.raises(ValueError):
        load_provider("script:" + str(BAD[0]))


def test_missing_unreadable_and_oversized_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ScriptError, match=r"cannot read script .*nope\.yaml"):
        load_script(tmp_path / "nope.yaml")
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path)  # a directory
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"- text: caf\xe9\n")
    with pytest.raises(ScriptError, match=r"not UTF-8 \(byte 11\)"):
        load_script(latin)
    big = tmp_path / "big.yaml"
    big.write_text("- text: " + "x" * 200 + "\n", encoding="utf-8")
    monkeypatch.setattr(script_module, "MAX_SCRIPT_BYTES", 100)
    with pytest.raises(ScriptError, match="larger than 100 bytes"):
        load_script(big)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "unknown model ''"),
        ("gpt-4o", "expected script:FILE"),
        ("anthropic:claude", "unknown model 'anthropic:claude'"),
        ("script:", "names no script file"),
        ("openai:  ", "names no model name"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        load_provider(spec)


def test_http_options_do_not_apply_to_scripts() -> None:
    path = "script:" + str(SCRIPTS / "good" / "bare_list.yaml")
    with pytest.raises(ValueError, match="base URL applies only to openai"):
        load_provider(path, base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="HTTP options apply only"):
        load_provider(path, transport=object())
    with pytest.raises(ValueError, match="not an environment variable name"):
        load_provider("openai:m", api_key_env="MY-KEY")


def test_a_turn_can_think_for_a_while_and_a_turn_can_fail() -> None:
    provider = ScriptProvider.from_text(
        "- {delay_s: 0.15, text: thought}\n- {fail: the endpoint is overloaded}\n- text: after\n",
        "slow.yaml",
    )
    started = time.monotonic()
    assert provider.complete(stage="s", messages=[], tools=(), edges=()).text == "thought"
    assert time.monotonic() - started >= 0.15
    with pytest.raises(ModelRequestError) as info:
        provider.complete(stage="s", messages=[], tools=(), edges=())
    assert str(info.value) == (
        "script slow.yaml:2: turns[1]: scripted failure: the endpoint is overloaded"
    )
    # The failed turn is used up; the run may go on with the next one.
    assert provider.complete(stage="s", messages=[], tools=(), edges=()).text == "after"
