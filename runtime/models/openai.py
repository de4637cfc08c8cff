"""A model behind any OpenAI-compatible chat-completions endpoint.

One non-streaming ``POST {base_url}/chat/completions`` per turn, with the
stage's tools as function tools. Hinted edges are offered as one more tool,
``choose_edge``; the provider takes that call out of the model's tool calls
and reports the choice as :attr:`ModelTurn.edge`.

The API key is handled with care:

* it is read by the caller from the environment and given to the provider,
  which puts it on each request itself (never on a shared client);
* redirects are never followed, so the key cannot travel to another origin
  (a redirect is an error that says where the endpoint pointed);
* ambient proxy and netrc settings are ignored unless the caller passes its
  own client;
* the key is removed from every error message and from ``repr``;
* without a key no ``Authorization`` header is sent at all, which is what
  local servers expect.

Failures: 429, 5xx, timeouts and connection errors are retried a bounded
number of times with exponential backoff and jitter (``Retry-After`` is
honoured up to a cap); any other 4xx fails at once with the server's own
message.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from charter.runtime.models.base import (
    CHOOSE_EDGE_TOOL,
    EdgeChoice,
    Message,
    ModelError,
    ModelRequestError,
    ModelResponseError,
    ModelTimeoutError,
    ModelToolCall,
    ModelTurn,
    RetryNotice,
    RetryObserver,
    ToolSpec,
    Usage,
    edge_tool_spec,
    split_edge_calls,
)

__all__ = ["DEFAULT_BASE_URL", "OpenAIProvider", "RetryPolicy"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_REDACTED = "<redacted>"
_MAX_ERROR_TEXT = 500
_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class RetryPolicy:
    """How often and how patiently to retry.

    The delay before retry *n* (1-based) is ``base_s * 2**(n-1)`` capped at
    ``max_s``, then scaled by a random factor in [0.5, 1] so that many
    clients do not retry in step. A ``Retry-After`` from the server replaces
    that delay, capped at ``retry_after_cap_s``.
    """

    __slots__ = ("attempts", "base_s", "max_s", "retry_after_cap_s")

    def __init__(
        self,
        attempts: int = 4,
        base_s: float = 0.5,
        max_s: float = 8.0,
        retry_after_cap_s: float = 30.0,
    ) -> None:
        if attempts < 1:
            raise ValueError("retry attempts must be at least 1")
        if min(base_s, max_s, retry_after_cap_s) < 0:
            raise ValueError("retry delays cannot be negative")
        self.attempts = attempts
        self.base_s = base_s
        self.max_s = max_s
        self.retry_after_cap_s = retry_after_cap_s

    def __repr__(self) -> str:
        return (
            f"RetryPolicy(attempts={self.attempts}, base_s={self.base_s}, max_s={self.max_s}, "
            f"retry_after_cap_s={self.retry_after_cap_s})"
        )

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap_s)
        backoff = min(self.base_s * 2.0 ** (retry - 1), self.max_s)
        return backoff * (0.5 + 0.5 * rng.random())


class _Retry(Exception):
    """One failed attempt that may be retried."""

    def __init__(self, error: ModelRequestError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class OpenAIProvider:
    """Chat completions with tool calling against ``base_url``.

    ``client`` lets the caller share or configure an ``httpx.Client`` (it is
    then not closed by :meth:`close`); otherwise the provider owns one, built
    with ``transport`` when given (tests pass an in-process one).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        extra_body: Mapping[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not model.strip():
            raise ValueError("the model name is empty")
        if timeout_s <= 0:
            raise ValueError("the model timeout must be positive")
        self._model = model
        self._base_url = _check_base_url(base_url)
        self._url = self._base_url.rstrip("/") + "/chat/completions"
        # Surrounding whitespace is a copy-paste accident (a trailing CR from
        # a .env file); anything else a header cannot carry is refused here,
        # without echoing the key, rather than failing deep in the HTTP stack.
        self._api_key = api_key.strip() if api_key and api_key.strip() else None
        if self._api_key and not all("!" <= ch <= "~" for ch in self._api_key):
            raise ValueError(
                f"the API key in {api_key_env} contains spaces, control or non-ASCII "
                "characters, which an HTTP header cannot carry"
            )
        self._api_key_env = api_key_env
        self._timeout_s = timeout_s
        self._timeout = httpx.Timeout(timeout_s)
        self._retry = retry or RetryPolicy()
        self._extra_body = dict(extra_body or {})
        for reserved in ("model", "messages", "tools", "tool_choice", "stream"):
            if reserved in self._extra_body:
                raise ValueError(f"extra_body cannot set {reserved!r}")
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._owns_client = client is None
        if client is None:
            client = httpx.Client(
                timeout=self._timeout,
                follow_redirects=False,
                trust_env=False,
                transport=transport,
            )
        self._client = client
        self._closed = False

    # ------------------------------------------------------------------ public

    @property
    def model(self) -> str:
        return self._model

    @property
    def url(self) -> str:
        return self._url

    def __repr__(self) -> str:
        key = f"set from {self._api_key_env}" if self._api_key else "not set"
        return (
            f"OpenAIProvider(model={self._model!r}, base_url={self._redact(self._base_url)!r}, "
            f"api_key=<{key}>)"
        )

    def for_agent(self, name: str) -> OpenAIProvider:
        """Sub-agents share this provider: its client is thread-safe and the
        provider keeps no per-conversation state."""
        return self

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owns_client:
                self._client.close()

    def complete(
        self,
        *,
        stage: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        edges: Sequence[EdgeChoice],
        on_retry: RetryObserver | None = None,
        model: str | None = None,
    ) -> ModelTurn:
        if self._closed:
            raise ModelError("the model provider was already closed")
        offered = list(tools)
        if edges:
            if any(tool.name == CHOOSE_EDGE_TOOL for tool in offered):
                raise ModelError(
                    f"stage {stage!r} offers a tool named {CHOOSE_EDGE_TOOL!r}, the name "
                    "reserved for choosing an edge; rename that tool"
                )
            offered.append(edge_tool_spec(edges))
        body: dict[str, Any] = {
            **self._extra_body,
            "model": model or self._model,
            "messages": [_message_json(m) for m in messages],
        }
        if offered:
            body["tools"] = [_tool_json(tool) for tool in offered]
            body["tool_choice"] = "auto"
        data = self._post(body, on_retry)
        turn = _parse_completion(data, self._redact)
        calls, edge = split_edge_calls(turn.tool_calls, edges)
        return ModelTurn(turn.text, calls, edge, turn.finish_reason, turn.usage)

    # ------------------------------------------------------------------ HTTP

    def _post(self, body: dict[str, Any], on_retry: RetryObserver | None = None) -> Any:
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(payload, headers, attempt)
            except _Retry as retry:
                failure = retry
            # Raised out here, not in the handler, so that the error chains to
            # nothing: httpx's exceptions hold the request with its headers.
            if attempt >= self._retry.attempts:
                error = failure.error
                error.attempts = attempt
                if attempt > 1:
                    error.args = (f"{error} (gave up after {attempt} attempts)",)
                raise error
            delay = self._retry.delay(attempt, failure.retry_after, self._rng)
            if on_retry is not None:
                on_retry(
                    RetryNotice(
                        attempt=attempt,
                        attempts=self._retry.attempts,
                        delay_s=delay,
                        reason=str(failure.error),
                        status=failure.error.status,
                    )
                )
            self._sleep(delay)

    def _attempt(self, payload: bytes, headers: dict[str, str], attempt: int) -> Any:
        try:
            with self._client.stream(
                "POST",
                self._url,
                content=payload,
                headers=headers,
                timeout=self._timeout,
                follow_redirects=False,
            ) as response:
                status = response.status_code
                response_headers = response.headers
                reason = response.reason_phrase
                body = self._read(response, attempt)
        except httpx.TimeoutException as exc:
            raise _Retry(self._timed_out(attempt, type(exc).__name__)) from None
        except httpx.TransportError as exc:
            raise _Retry(
                ModelRequestError(
                    f"cannot reach the model endpoint {self._where()}: "
                    f"{self._redact(str(exc)) or type(exc).__name__}",
                    attempts=attempt,
                )
            ) from None
        if status == 429 or status >= 500:
            raise _Retry(
                ModelRequestError(
                    f"the model endpoint {self._where()} answered {status}: "
                    f"{self._error_text(body, reason)}",
                    status=status,
                    attempts=attempt,
                ),
                _retry_after(response_headers.get("Retry-After")),
            )
        if 300 <= status < 400:
            location = self._redact(response_headers.get("Location", "nowhere"))
            raise ModelRequestError(
                f"the model endpoint {self._where()} redirected ({status}) to {location}; "
                "redirects are not followed so that the API key stays with the configured "
                "endpoint: set the base URL to the final address",
                status=status,
                attempts=attempt,
            )
        if status >= 400 or status < 200:
            raise ModelRequestError(
                f"the model endpoint {self._where()} refused the request ({status}): "
                f"{self._error_text(body, reason)}",
                status=status,
                attempts=attempt,
            )
        try:
            return json.loads(body)
        except ValueError:
            text = body.decode("utf-8", "replace")
            raise ModelResponseError(
                f"the model endpoint {self._where()} answered {status} with something that is "
                f"not JSON: {_trim(self._redact(text))!r}"
            ) from None

    def _read(self, response: httpx.Response, attempt: int) -> bytes:
        """The body, within the size cap and the attempt's overall deadline:
        httpx's timeouts bound each read, not a server that trickles."""
        deadline = time.monotonic() + self._timeout_s
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > _MAX_RESPONSE_BYTES:
                raise ModelResponseError(
                    f"the model endpoint {self._where()} sent more than {_MAX_RESPONSE_BYTES} bytes"
                )
            if time.monotonic() > deadline:
                raise _Retry(self._timed_out(attempt, "the answer arrived too slowly"))
            chunks.append(chunk)
        return b"".join(chunks)

    def _timed_out(self, attempt: int, what: str) -> ModelTimeoutError:
        return ModelTimeoutError(
            f"the model endpoint {self._where()} did not answer within "
            f"{self._timeout_s:g} s ({what})",
            attempts=attempt,
        )

    def _where(self) -> str:
        return self._redact(self._url)

    def _error_text(self, body: bytes, reason: str) -> str:
        """The server's own explanation: OpenAI-style ``error.message`` when
        present, else the start of the body."""
        text = body.decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        message: Any = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                message = error.get("message")
            elif isinstance(error, str):
                message = error
            if message is None and isinstance(data.get("message"), str):
                message = data["message"]
        if not isinstance(message, str) or not message.strip():
            message = text.strip() or reason or "no explanation given"
        return _trim(self._redact(message))

    def _redact(self, text: str) -> str:
        """Remove the API key, and any password written into the base URL,
        from text that may be shown or logged."""
        secrets = [s for s in (self._api_key, urlsplit(self._base_url).password) if s]
        for secret in sorted(secrets, key=len, reverse=True):
            text = text.replace(secret, _REDACTED)
        return text


# --------------------------------------------------------------------------- wire format


def _check_base_url(base_url: str) -> str:
    try:
        parts = urlsplit(base_url)
        _ = parts.port  # raises on a malformed port
    except ValueError as exc:
        raise ValueError(f"the model base URL is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "the model base URL must be an http:// or https:// URL with a host, "
            f"like {DEFAULT_BASE_URL}"
        )
    if parts.query or parts.fragment:
        raise ValueError("the model base URL cannot carry a query or a fragment")
    return base_url


def _tool_json(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        },
    }


def _message_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments},
            }
            for call in message.tool_calls
        ]
    elif message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["content"] = message.content or ""
    elif message.content is None:
        out["content"] = ""
    return out


def _parse_completion(data: Any, redact: Callable[[str], str]) -> ModelTurn:
    def bad(what: str) -> ModelResponseError:
        return ModelResponseError(f"the model endpoint's answer is not a chat completion: {what}")

    if not isinstance(data, dict):
        raise bad("the body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            raise ModelResponseError(
                f"the model endpoint reported: {_trim(redact(error['message']))}"
            )
        raise bad("no choices")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise bad("choices[0] has no message")
    message = choice["message"]
    text = _content_text(message.get("content"))
    if text is None and isinstance(message.get("refusal"), str):
        text = message["refusal"]  # the model declined; its words are its answer
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise bad("message.tool_calls is not a list")
    calls: list[ModelToolCall] = []
    for index, raw in enumerate(raw_calls):
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise bad(f"tool_calls[{index}] has no function name")
        call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            # Some servers send the object itself rather than its JSON text.
            raw_arguments = json.dumps(arguments, ensure_ascii=False)
        elif isinstance(arguments, str):
            raw_arguments = arguments
        elif arguments is None:
            raw_arguments = ""
        else:
            raw_arguments = json.dumps(arguments)
        calls.append(
            ModelToolCall.parse(call_id or f"call_{index}", function["name"], raw_arguments)
        )
    finish = choice.get("finish_reason")
    usage = data.get("usage")
    return ModelTurn(
        text=text,
        tool_calls=tuple(calls),
        finish_reason=finish if isinstance(finish, str) else None,
        usage=Usage(
            _int_or_none(usage.get("prompt_tokens")),
            _int_or_none(usage.get("completion_tokens")),
        )
        if isinstance(usage, dict)
        else Usage(),
    )


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        # Content as parts: keep the text ones.
        parts = [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "".join(parts)
    raise ModelResponseError("the model endpoint's answer has content that is not text")


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _trim(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_ERROR_TEXT else text[: _MAX_ERROR_TEXT - 1] + "…"
