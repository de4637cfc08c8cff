"""The OpenAI-compatible provider against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import email.utils
import logging
import random
import time
from typing import Any

import httpx
import pytest

from charter.runtime.models import (
    CHOOSE_EDGE_TOOL,
    EdgeChoice,
    Message,
    ModelError,
    ModelRequestError,
    ModelResponseError,
    ModelTimeoutError,
    ToolSpec,
    load_provider,
)
from charter.runtime.models.openai import OpenAIProvider, RetryPolicy

KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"
READ = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
WRITE = ToolSpec("write_file", "Write a file.", {"type": "object"})
EDGES = (EdgeChoice("review", "the draft is written"), EdgeChoice("research", "need more facts"))


class Sleeps:
    """Records backoff delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def provider(server: Any, key: str | None = KEY, **kw: Any) -> OpenAIProvider:
    kw.setdefault("retry", RetryPolicy(attempts=3, base_s=0.01, max_s=0.02))
    kw.setdefault("sleep", Sleeps())
    return OpenAIProvider("fake-model", base_url=server.base_url, api_key=key, **kw)


def ask(p: OpenAIProvider, messages: list[Message] | None = None, **kw: Any) -> Any:
    kw.setdefault("tools", [READ, WRITE])
    kw.setdefault("edges", ())
    return p.complete(stage="draft", messages=messages or [Message.user("go")], **kw)


# --------------------------------------------------------------------------- a model at work


def test_a_model_that_calls_tools_then_chooses_an_edge(model_server: Any) -> None:
    """The server plays a model: it reads a file, then writes, then moves on,
    deciding each step from the conversation it is sent."""
    server = model_server

    def model(seen: Any) -> Any:
        messages = seen.body["messages"]
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            return server.Reply(
                body=server.completion("Reading.", [("c1", "read_file", {"path": "notes.md"})])
            )
        if len(results) == 1:
            assert results[0] == {"role": "tool", "tool_call_id": "c1", "content": "# Notes"}
            return server.Reply(
                body=server.completion(
                    None, [("c2", "write_file", {"path": "out.md", "text": "hi"})]
                )
            )
        return server.Reply(
            body=server.completion("Done.", [("c3", CHOOSE_EDGE_TOOL, {"edge": "review"})])
        )

    server.reply = model
    p = provider(server)
    history = [Message.system("You write."), Message.user("Summarise notes.md")]

    turn = ask(p, history, edges=EDGES)
    assert turn.text == "Reading."
    assert [(c.id, c.name, c.arguments, c.error) for c in turn.tool_calls] == [
        ("c1", "read_file", {"path": "notes.md"}, None)
    ]
    assert turn.edge is None and turn.finish_reason == "tool_calls"
    assert turn.usage.prompt_tokens == 11 and turn.usage.completion_tokens == 7
    history += [turn.message(), Message.tool(turn.tool_calls[0], "# Notes")]

    turn = ask(p, history, edges=EDGES)
    assert turn.tool_calls[0].arguments == {"path": "out.md", "text": "hi"}
    history += [turn.message(), Message.tool(turn.tool_calls[0], "wrote 2 bytes")]

    turn = ask(p, history, edges=EDGES)
    assert turn.edge == "review"
    assert turn.tool_calls == ()  # the choice is not a call the loop must run
    assert turn.text == "Done."

    # What went over the wire, on the last request.
    body = server.seen[-1].body
    assert body["model"] == "fake-model" and body["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in body["tools"]] == [
        "read_file",
        "write_file",
        "choose_edge",
    ]
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": READ.parameters,
        },
    }
    edge_params = body["tools"][2]["function"]["parameters"]
    assert edge_params["properties"]["edge"]["enum"] == ["review", "research"]
    assert "need more facts" in body["tools"][2]["function"]["description"]
    assistant = body["messages"][2]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "read_file",
        "arguments": '{"path": "notes.md"}',
    }
    assert all(s.path == "/v1/chat/completions" for s in server.seen)
    assert server.seen[0].headers["authorization"] == f"Bearer {KEY}"
    p.close()


def test_no_tools_and_no_edges_sends_no_tools(model_server: Any) -> None:
    model_server.reply = lambda seen: model_server.Reply(body=model_server.completion("hello"))
    turn = ask(provider(model_server), tools=())
    assert turn.text == "hello" and turn.finish_reason == "stop"
    assert "tools" not in model_server.seen[0].body
    assert "tool_choice" not in model_server.seen[0].body


def test_malformed_tool_call_json_becomes_an_error_not_a_crash(model_server: Any) -> None:
    server = model_server
    server.reply = lambda seen: server.Reply(
        body=server.completion(
            None,
            [
                ("bad", "read_file", '{"path": "a.md"'),
                ("list", "read_file", '["a.md"]'),
                ("empty", "read_file", ""),
            ],
        )
    )
    p = provider(server)
    turn = ask(p)
    bad, listed, empty = turn.tool_calls
    assert bad.arguments is None and bad.raw_arguments == '{"path": "a.md"'
    assert bad.error is not None and "not valid JSON" in bad.error
    assert listed.arguments is None and listed.error is not None and "an array" in listed.error
    assert empty.arguments == {} and empty.error is None

    # The loop answers the broken call with its error; the raw text goes back
    # unchanged so the model sees what it wrote.
    history = [Message.user("go"), turn.message(), Message.tool(bad, bad.error)]
    ask(p, history)
    sent = server.seen[-1].body["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == '{"path": "a.md"'
    assert sent[2]["content"] == bad.error


def test_a_bad_edge_choice_is_returned_to_the_model(model_server: Any) -> None:
    server = model_server
    server.reply = lambda seen: server.Reply(
        body=server.completion(
            None,
            [
                ("e1", CHOOSE_EDGE_TOOL, {"edge": "publish"}),
                ("e2", CHOOSE_EDGE_TOOL, {"edge": "research"}),
                ("e3", CHOOSE_EDGE_TOOL, {"edge": "review"}),
            ],
        )
    )
    turn = ask(provider(server), edges=EDGES)
    assert turn.edge == "research"
    assert [(c.id, c.error is not None) for c in turn.tool_calls] == [("e1", True), ("e3", True)]
    assert "no edge to 'publish'" in (turn.tool_calls[0].error or "")
    assert "already chosen" in (turn.tool_calls[1].error or "")


def test_a_stage_tool_named_choose_edge_is_refused_when_edges_are_offered(
    model_server: Any,
) -> None:
    clash = ToolSpec(CHOOSE_EDGE_TOOL, "mine", {"type": "object"})
    with pytest.raises(ModelError, match="reserved"):
        ask(provider(model_server), tools=[clash], edges=EDGES)
    assert model_server.seen == []


# --------------------------------------------------------------------------- failures and retries


def test_500_then_success_is_retried(model_server: Any) -> None:
    server = model_server
    answers = iter(
        [
            server.Reply(500, {"error": {"message": "overloaded"}}),
            server.Reply(body=server.completion("ok")),
        ]
    )
    server.reply = lambda seen: next(answers)
    sleeps = Sleeps()
    turn = ask(provider(server, sleep=sleeps, rng=random.Random(1)))
    assert turn.text == "ok"
    assert len(server.seen) == 2 and len(sleeps.delays) == 1
    assert 0.005 <= sleeps.delays[0] <= 0.01  # base 0.01 with jitter in [0.5, 1]


def test_backoff_grows_with_jitter_and_gives_up(model_server: Any) -> None:
    server = model_server
    server.reply = lambda seen: server.Reply(503, "upstream down")
    sleeps = Sleeps()
    policy = RetryPolicy(attempts=5, base_s=1.0, max_s=4.0)
    with pytest.raises(ModelRequestError) as info:
        ask(provider(server, retry=policy, sleep=sleeps, rng=random.Random(7)))
    assert len(server.seen) == 5
    assert info.value.status == 503 and info.value.attempts == 5
    assert "upstream down" in str(info.value) and "after 5 attempts" in str(info.value)
    caps = [1.0, 2.0, 4.0, 4.0]
    assert len(sleeps.delays) == 4
    assert all(cap / 2 <= d <= cap for d, cap in zip(sleeps.delays, caps, strict=True))


@pytest.mark.parametrize(
    ("header", "expected"),
    [("2", 2.0), ("120", 30.0), ("soon", None)],
)
def test_429_honours_retry_after_up_to_the_cap(
    model_server: Any, header: str, expected: float | None
) -> None:
    server = model_server
    answers = iter(
        [
            server.Reply(429, {"error": {"message": "rate limited"}}, {"Retry-After": header}),
            server.Reply(body=server.completion("ok")),
        ]
    )
    server.reply = lambda seen: next(answers)
    sleeps = Sleeps()
    policy = RetryPolicy(attempts=3, base_s=0.5, max_s=1.0, retry_after_cap_s=30.0)
    assert ask(provider(server, retry=policy, sleep=sleeps)).text == "ok"
    if expected is None:  # unreadable: ordinary backoff
        assert 0.25 <= sleeps.delays[0] <= 0.5
    else:
        assert sleeps.delays == [expected]


def test_429_retry_after_as_an_http_date(model_server: Any) -> None:
    server = model_server
    when = email.utils.formatdate(time.time() + 10, usegmt=True)
    answers = iter(
        [
            server.Reply(429, "slow down", {"Retry-After": when}),
            server.Reply(body=server.completion("ok")),
        ]
    )
    server.reply = lambda seen: next(answers)
    sleeps = Sleeps()
    ask(provider(server, sleep=sleeps))
    assert 8.0 <= sleeps.delays[0] <= 10.0


def test_a_real_retry_waits_for_real(model_server: Any) -> None:
    """With the default sleep, a 429 with Retry-After is actually waited for."""
    server = model_server
    answers = iter(
        [
            server.Reply(429, "busy", {"Retry-After": "0.2"}),
            server.Reply(body=server.completion("ok")),
        ]
    )
    server.reply = lambda seen: next(answers)
    p = OpenAIProvider("m", base_url=server.base_url, retry=RetryPolicy(attempts=2))
    started = time.monotonic()
    assert ask(p).text == "ok"
    assert time.monotonic() - started >= 0.2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_fail_at_once_with_the_servers_message(model_server: Any, status: int) -> None:
    server = model_server
    server.reply = lambda seen: server.Reply(
        status, {"error": {"message": f"tools[0].function.name is invalid ({status})", "type": "x"}}
    )
    sleeps = Sleeps()
    with pytest.raises(ModelRequestError) as info:
        ask(provider(server, sleep=sleeps))
    assert len(server.seen) == 1 and sleeps.delays == []
    assert info.value.status == status and info.value.attempts == 1
    assert f"tools[0].function.name is invalid ({status})" in str(info.value)


def test_timeouts_are_retried_then_reported(model_server: Any) -> None:
    server = model_server
    server.reply = lambda seen: server.Reply(body=server.completion("late"), delay_s=0.6)
    p = provider(server, timeout_s=0.15, retry=RetryPolicy(attempts=2, base_s=0.0))
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError) as info:
        ask(p)
    assert time.monotonic() - started < 0.55
    assert len(server.seen) == 2 and info.value.attempts == 2 and info.value.status is None
    assert info.value.__context__ is None  # the httpx error (and its request) is not kept
    assert "did not answer within 0.15 s (ReadTimeout)" in str(info.value)


def test_a_trickling_answer_hits_the_overall_deadline(model_server: Any) -> None:
    """Each chunk arrives well within the read timeout, the whole does not."""
    server = model_server
    server.reply = lambda seen: server.Reply(
        body=server.completion("x" * 200), chunk_delay_s=0.05, chunks=20
    )
    p = provider(server, timeout_s=0.3, retry=RetryPolicy(attempts=1))
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match="the answer arrived too slowly"):
        ask(p)
    assert time.monotonic() - started < 0.9


def test_an_oversized_answer_is_refused(model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from charter.runtime.models import openai as openai_module

    monkeypatch.setattr(openai_module, "_MAX_RESPONSE_BYTES", 1000)
    server = model_server
    server.reply = lambda seen: server.Reply(body=server.completion("x" * 2000))
    with pytest.raises(ModelResponseError, match="sent more than 1000 bytes"):
        ask(provider(server))
    assert len(server.seen) == 1  # not retried: it would only happen again


def test_connection_refused_is_retried_then_reported() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the request
    sleeps = Sleeps()
    p = OpenAIProvider(
        "m",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=KEY,
        retry=RetryPolicy(attempts=3, base_s=0.01),
        sleep=sleeps,
    )
    with pytest.raises(ModelRequestError) as info:
        ask(p)
    assert "cannot reach the model endpoint" in str(info.value)
    assert info.value.attempts == 3 and len(sleeps.delays) == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<html>gateway</html>", "not JSON"),
        ({"choices": []}, "no choices"),
        ({"error": {"message": "model not loaded"}}, "model not loaded"),
        ({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}, "no function name"),
        ({"choices": [{"message": {"content": 5}}]}, "not text"),
    ],
)
def test_unreadable_answers_are_clear_errors(model_server: Any, body: Any, message: str) -> None:
    model_server.reply = lambda seen: model_server.Reply(body=body)
    with pytest.raises(ModelResponseError, match=message):
        ask(provider(model_server))


# --------------------------------------------------------------------------- the API key


def test_no_key_sends_no_authorization_header(model_server: Any) -> None:
    model_server.reply = lambda seen: model_server.Reply(body=model_server.completion("hi"))
    ask(provider(model_server, key=None))
    assert "authorization" not in model_server.seen[0].headers
    assert "not set" in repr(provider(model_server, key=None))


def test_load_provider_reads_the_named_variable(model_server: Any) -> None:
    model_server.reply = lambda seen: model_server.Reply(body=model_server.completion("hi"))
    env = {"LOCAL_LLM_KEY": KEY, "OPENAI_API_KEY": "sk-wrong-one-0000"}
    p = load_provider(
        "openai:fake-model",
        base_url=model_server.base_url,
        api_key_env="LOCAL_LLM_KEY",
        environ=env,
    )
    ask(p)  # type: ignore[arg-type]
    assert model_server.seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert "LOCAL_LLM_KEY" in repr(p) and KEY not in repr(p)
    p.close()

    empty = load_provider(
        "openai:m", base_url=model_server.base_url, environ={"OPENAI_API_KEY": ""}
    )
    ask(empty)  # type: ignore[arg-type]
    assert "authorization" not in model_server.seen[1].headers


def test_a_redirect_is_not_followed_with_the_key(model_server: Any, other_server: Any) -> None:
    target = f"{other_server.base_url}/chat/completions"
    model_server.reply = lambda seen: model_server.Reply(307, "", {"Location": target})
    other_server.reply = lambda seen: other_server.Reply(body=other_server.completion("stolen"))
    with pytest.raises(ModelRequestError) as info:
        ask(provider(model_server))
    assert other_server.seen == []
    assert (
        info.value.status == 307 and "redirected" in str(info.value) and target in str(info.value)
    )

    # Also when the caller's own client would follow redirects.
    client = httpx.Client(follow_redirects=True)
    with pytest.raises(ModelRequestError):
        ask(provider(model_server, client=client))
    assert other_server.seen == []
    client.close()


def test_the_key_never_appears_in_errors_reprs_or_logs(
    model_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Servers echo keys back ("Incorrect API key provided: sk-..."); none of
    it may reach an exception, a repr or a log record."""
    server = model_server
    bodies = iter(
        [
            server.Reply(500, f"internal error for key {KEY}"),
            server.Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        ]
    )
    server.reply = lambda seen: next(bodies)
    caplog.set_level(logging.DEBUG)
    p = provider(server)
    with pytest.raises(ModelRequestError) as info:
        ask(p)
    error = info.value
    assert info.value.status == 401
    assert "Incorrect API key provided: <redacted>" in str(error)
    for text in (str(error), repr(error), repr(p), caplog.text):
        assert KEY not in text
    # Nothing chained either: httpx's exceptions hold the request and its headers.
    assert error.__cause__ is None and error.__context__ is None

    # A long echo is trimmed after redaction, so no fragment of the key leaks.
    long_body = "x" * 480 + KEY + "y" * 100
    server.reply = lambda seen: server.Reply(400, long_body)
    with pytest.raises(ModelRequestError) as info:
        ask(p)
    assert KEY[:8] not in str(info.value)

    # A password in the base URL is treated the same way.
    secret_url = server.base_url.replace("http://", "http://user:hunter2-pass@")
    q = OpenAIProvider("m", base_url=secret_url, retry=RetryPolicy(attempts=1))
    server.reply = lambda seen: server.Reply(400, "nope")
    with pytest.raises(ModelRequestError) as info:
        ask(q)
    assert "hunter2-pass" not in str(info.value) and "hunter2-pass" not in repr(q)


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "ftp://example.com/v1"}, "http:// or https://"),
        ({"base_url": "http:///v1"}, "with a host"),
        ({"base_url": "https://example.com/v1?x=1"}, "query"),
        ({"timeout_s": 0}, "positive"),
        ({"extra_body": {"model": "other"}}, "cannot set 'model'"),
        ({"api_key": "sk-abc def"}, "contains spaces, control or non-ASCII"),
        ({"api_key": "sk-abc\ndef"}, "contains spaces"),
        ({"api_key": "sk-abcé"}, "non-ASCII"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        OpenAIProvider("m", **kwargs)
    assert "sk-abc" not in str(info.value)  # a bad key is described, never shown


def test_a_key_with_surrounding_whitespace_is_trimmed(model_server: Any) -> None:
    model_server.reply = lambda seen: model_server.Reply(body=model_server.completion("hi"))
    ask(provider(model_server, key=f"  {KEY}\r\n"))
    assert model_server.seen[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_refusal_is_the_answer_text(model_server: Any) -> None:
    body = model_server.completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    model_server.reply = lambda seen: model_server.Reply(body=body)
    assert ask(provider(model_server)).text == "I can't help with that."


def test_extra_body_is_merged_and_closing_is_idempotent(model_server: Any) -> None:
    model_server.reply = lambda seen: model_server.Reply(body=model_server.completion("hi"))
    p = provider(model_server, extra_body={"temperature": 0})
    assert p.for_agent("child") is p
    ask(p)
    assert model_server.seen[0].body["temperature"] == 0
    p.close()
    p.close()
    with pytest.raises(ModelError, match="closed"):
        ask(p)


def test_retry_policy_bounds() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_s=-1)
    policy = RetryPolicy(base_s=1, max_s=3, retry_after_cap_s=5)
    rng = random.Random(3)
    assert policy.delay(1, 99.0, rng) == 5
    assert all(1.5 <= policy.delay(n, None, rng) <= 3 for n in range(3, 10))


def test_content_parts_and_object_arguments_are_accepted(model_server: Any) -> None:
    """Some compatible servers send content as parts and arguments as an object."""
    model_server.reply = lambda seen: model_server.Reply(
        body={
            "choices": [
                {
                    "message": {
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                        "tool_calls": [
                            {"function": {"name": "read_file", "arguments": {"path": "x"}}}
                        ],
                    },
                }
            ]
        }
    )
    turn = ask(provider(model_server))
    assert turn.text == "ab" and turn.finish_reason is None
    assert turn.tool_calls[0].id == "call_0" and turn.tool_calls[0].arguments == {"path": "x"}
