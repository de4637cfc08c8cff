"""The contract between the run loop and a model provider.

A provider answers one question per turn: given the conversation so far, the
tools this stage offers and the edges the model may choose, what does the
model say and do next? Everything here is plain frozen data so that the loop
can log, redact and replay it without knowing which provider produced it.

Exceptions::

    ModelError                      anything a provider could not do
    ├── ModelRequestError           the endpoint failed or refused (status, retryable)
    │   └── ModelTimeoutError       no answer within the timeout, after the retries
    ├── ModelResponseError          an answer arrived but could not be understood
    ├── ScriptError                 a script file that cannot be used (ValueError too)
    ├── ScriptExpectationError      a scripted turn's expectations were not met
    └── ScriptExhaustedError        the run asked for more turns than the script has

Model-made mistakes are *not* exceptions: a tool call whose arguments are not
a JSON object arrives as a :class:`ModelToolCall` with ``error`` set, and the
loop hands that error back to the model as the call's result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from charter.runtime.errors import CharterError

if TYPE_CHECKING:
    # Only the type: the plan module pulls in the shell grammar, which a
    # provider never needs.
    from charter.runtime.plan import ToolEntry

__all__ = [
    "CHOOSE_EDGE_TOOL",
    "EdgeChoice",
    "Message",
    "ModelError",
    "ModelProvider",
    "ModelRequestError",
    "ModelResponseError",
    "ModelTimeoutError",
    "ModelToolCall",
    "ModelTurn",
    "RetryNotice",
    "RetryObserver",
    "Role",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptExpectationError",
    "ToolSpec",
    "Usage",
    "edge_tool_spec",
    "parse_arguments",
    "split_edge_calls",
]

Role = Literal["system", "user", "assistant", "tool"]

# The synthetic tool through which a model names the next stage. Providers
# that speak a tool-calling API offer it when a stage has hinted edges and
# move the choice into ModelTurn.edge; the loop never sees it as a call.
CHOOSE_EDGE_TOOL = "choose_edge"

_EMPTY_OBJECT_SCHEMA = '{"type": "object"}'


# --------------------------------------------------------------------------- errors


class ModelError(CharterError):
    """A provider could not produce a turn. The message is safe to show:
    providers remove credentials before raising."""


class ModelRequestError(ModelError):
    """The endpoint failed or refused the request.

    ``status`` is the HTTP status (None when no response arrived) and
    ``attempts`` how many requests were made before giving up.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class ModelTimeoutError(ModelRequestError):
    """No answer arrived within the configured timeout, on any attempt."""


class ModelResponseError(ModelError):
    """The endpoint answered, but not with a chat completion we can read."""


class ScriptError(ModelError, ValueError):
    """A script file that cannot be read or does not validate. The message
    names the file, and the line and key path of each problem."""


class ScriptExpectationError(ModelError):
    """A scripted turn expected something the run did not offer.

    ``turn_index`` is the 0-based position in the script's list of turns (the
    message spells it ``turns[i]`` like a key path); ``differences`` lists each
    unmet expectation in words.
    """

    def __init__(
        self,
        message: str,
        *,
        turn_index: int,
        stage: str,
        differences: Sequence[str],
    ) -> None:
        super().__init__(message)
        self.turn_index = turn_index
        self.stage = stage
        self.differences = tuple(differences)


class ScriptExhaustedError(ModelError):
    """The run asked for a turn after the script's last one."""

    def __init__(self, message: str, *, turns: int, stage: str) -> None:
        super().__init__(message)
        self.turns = turns
        self.stage = stage


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model is told about it."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # a JSON Schema for the arguments object

    @classmethod
    def from_entry(cls, entry: ToolEntry) -> ToolSpec:
        """The definition the plan compiled for ``entry``. A tool without an
        input schema still takes an arguments *object*, so the model is told
        exactly that rather than nothing."""
        schema = json.loads(entry.input_schema or _EMPTY_OBJECT_SCHEMA)
        if not isinstance(schema, dict):
            raise ValueError(f"tool {entry.name!r}: its input schema is not a JSON object")
        return cls(entry.name, entry.description, schema)


@dataclass(frozen=True, slots=True)
class EdgeChoice:
    """An edge the model may choose this turn: its target stage and the hint
    the blueprint wrote for it."""

    target: str
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """One tool call as the model wrote it.

    ``raw_arguments`` is the model's text verbatim (it goes back into the
    history unchanged). ``arguments`` is its parsed form, or None with
    ``error`` saying why when the text is not a JSON object.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    error: str | None = None

    @classmethod
    def parse(cls, id: str, name: str, raw_arguments: str) -> ModelToolCall:
        arguments, error = parse_arguments(raw_arguments)
        return cls(id, name, arguments, raw_arguments, error)


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the conversation.

    Assistant messages may carry ``tool_calls``; tool messages answer one call
    and name it by ``tool_call_id`` (and the tool by ``name``).
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ModelToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown message role {self.role!r}")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool calls")
        if self.role == "tool":
            if not self.tool_call_id:
                raise ValueError("a tool message needs the tool_call_id it answers")
        elif self.tool_call_id is not None:
            raise ValueError("only tool messages carry a tool_call_id")

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str | None, tool_calls: Sequence[ModelToolCall] = ()) -> Message:
        return cls("assistant", content, tuple(tool_calls))

    @classmethod
    def tool(cls, call: ModelToolCall, content: str) -> Message:
        """The result of ``call``, as the model will read it."""
        return cls("tool", content, tool_call_id=call.id, name=call.name)


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """What the model did in one turn.

    ``edge`` is the target of the hinted edge the model chose, or None. It is
    always one of the targets offered this turn: a choice of anything else
    comes back as a tool call with ``error`` set instead.
    ``finish_reason`` is the provider's word (``stop``, ``tool_calls``,
    ``length``, ...), or None when it gave none.
    """

    text: str | None = None
    tool_calls: tuple[ModelToolCall, ...] = ()
    edge: str | None = None
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)

    def message(self) -> Message:
        """The assistant message to append to the history for this turn."""
        return Message.assistant(self.text, self.tool_calls)


@dataclass(frozen=True, slots=True)
class RetryNotice:
    """One failed request that the provider is about to retry.

    ``attempt`` is the attempt that failed (1-based) out of ``attempts``
    allowed; ``delay_s`` the wait before the next one; ``reason`` why it
    failed, safe to show (credentials removed); ``status`` the HTTP status,
    None when no response arrived (a timeout, a refused connection).
    """

    attempt: int
    attempts: int
    delay_s: float
    reason: str
    status: int | None = None


# Called from the thread running ``complete``, before each wait.
RetryObserver = Callable[[RetryNotice], None]


@runtime_checkable
class ModelProvider(Protocol):
    """What the run loop needs from a model.

    ``complete`` may block (it is plain synchronous code; the loop runs it in
    a worker thread when it must stay responsive) and is safe to call from
    several threads. A provider that retries failed requests tells
    ``on_retry`` about each retry before waiting for it, so that a person
    watching sees why nothing is happening. ``model`` names the model to ask
    for this turn (a stage's own, from its list) instead of the provider's
    own. ``for_agent`` returns the provider a sub-agent of that name talks
    to; ``close`` releases what the provider owns and is idempotent.
    """

    def complete(
        self,
        *,
        stage: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        edges: Sequence[EdgeChoice],
        on_retry: RetryObserver | None = None,
        model: str | None = None,
    ) -> ModelTurn: ...

    def for_agent(self, name: str) -> ModelProvider: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- helpers


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a model's arguments text into ``(object, None)`` or
    ``(None, error)``. Empty text means "no arguments": some servers send it
    for tools without parameters."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, json.JSONDecodeError):
            detail = exc.msg
        elif isinstance(exc, RecursionError):
            detail = "nested too deeply"
        else:  # an integer of thousands of digits, which Python refuses to convert
            detail = "a number too long to read"
        where = f" at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        return None, f"the arguments are not valid JSON ({detail}{where}); send one JSON object"
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        return None, f"the arguments must be a JSON object, not {_json_kind(kind)}"
    return value, None


def _json_kind(python_name: str) -> str:
    return {
        "list": "an array",
        "str": "a string",
        "int": "a number",
        "float": "a number",
        "bool": "a boolean",
        "null": "null",
    }.get(python_name, python_name)


def edge_tool_spec(edges: Sequence[EdgeChoice]) -> ToolSpec:
    """The synthetic tool offered when a stage has hinted edges: one required
    ``edge`` argument, restricted to the offered targets."""
    lines = [
        "Finish this stage and move on to the next one. Call it once, when the "
        "work of this stage is done; choose the edge whose description fits."
    ]
    for edge in edges:
        lines.append(f"- {edge.target}: {edge.hint}" if edge.hint else f"- {edge.target}")
    return ToolSpec(
        CHOOSE_EDGE_TOOL,
        "\n".join(lines),
        {
            "type": "object",
            "properties": {
                "edge": {
                    "type": "string",
                    "enum": [edge.target for edge in edges],
                    "description": "The stage to move to.",
                }
            },
            "required": ["edge"],
        },
    )


def split_edge_calls(
    calls: Sequence[ModelToolCall], edges: Sequence[EdgeChoice]
) -> tuple[tuple[ModelToolCall, ...], str | None]:
    """Take the model's edge choice out of its tool calls.

    The first valid ``choose_edge`` call becomes the chosen edge and leaves
    the list; an invalid or repeated one stays, with ``error`` set, so the
    loop answers it like any failed call and the model can correct itself.
    Without offered edges nothing is taken out: a ``choose_edge`` call then is
    an ordinary call to a tool the stage does not offer.
    """
    if not edges:
        return tuple(calls), None
    targets = [edge.target for edge in edges]
    kept: list[ModelToolCall] = []
    chosen: str | None = None
    for call in calls:
        if call.name != CHOOSE_EDGE_TOOL or call.error is not None:
            kept.append(call)
            continue
        args = call.arguments or {}
        target = args.get("edge")
        problem: str | None = None
        if chosen is not None:
            problem = f"an edge was already chosen this turn ({chosen!r}); choose only one"
        elif not isinstance(target, str):
            problem = "choose_edge needs an 'edge' argument naming one of: " + ", ".join(targets)
        elif target not in targets:
            problem = f"there is no edge to {target!r} here; choose one of: " + ", ".join(targets)
        if problem is None:
            chosen = target
        else:
            kept.append(
                ModelToolCall(call.id, call.name, call.arguments, call.raw_arguments, problem)
            )
    return tuple(kept), chosen
