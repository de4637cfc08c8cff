"""A scripted model: a YAML file that says what the model does, turn by turn.

Runs driven by a script need no network and give the same result every time,
which is what the README demo and the end-to-end tests need. A script can also
check what the run offered the model at each turn (the stage, the tools, the
edges, what a refused call told it) and stops the run with
:class:`ScriptExpectationError` when the run does something else.

The file is either a list of turns or a mapping::

    turns:                      # the agent the run starts with
      - stage: explore          # the stage this turn expects to be in
        expect:
          offered: [read_file, list_directory]   # exactly these tools
        text: Looking around first.
        tool_calls:
          - name: read_file
            arguments: {path: README.md}
          - name: write_file
            raw_arguments: '{"path": '           # malformed JSON, on purpose
        edge: plan                                # the hinted edge to take
    agents:                     # turns for sub-agents, by agent name
      summarizer:
        - tool_calls: [{name: submit_output, arguments: {answer: done}}]

A turn may also wait before answering (``delay_s: 2``, to watch a spinner or
cancel a run while the model "thinks") or fail like an endpoint would
(``fail: rate limited``), which raises :class:`ModelRequestError`.

Every spawned sub-agent of a name replays that name's turns from the start,
so concurrent workers of one agent behave alike and the run stays
deterministic.

A provider made with ``record=True`` keeps every request it receives (the
stage, the messages, the tool definitions, the edges) as a
:class:`ScriptRequest`, and so do the copies :meth:`ScriptProvider.for_agent`
makes for sub-agents, into the same list. Tests read :attr:`ScriptProvider.
requests` to check exactly what a run sent the model, such as the system
prompt of a later turn.
"""

from __future__ import annotations

import difflib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from charter.runtime.capped import read_text_capped
from charter.runtime.models.base import (
    EdgeChoice,
    Message,
    ModelError,
    ModelRequestError,
    ModelToolCall,
    ModelTurn,
    RetryObserver,
    ScriptError,
    ScriptExhaustedError,
    ScriptExpectationError,
    ToolSpec,
)

__all__ = [
    "MAX_SCRIPT_BYTES",
    "Script",
    "ScriptExpect",
    "ScriptProvider",
    "ScriptRequest",
    "ScriptToolCall",
    "ScriptTurn",
    "load_script",
]

MAX_SCRIPT_BYTES = 4 * 1024 * 1024

Name = Annotated[str, Field(min_length=1)]
Names = tuple[Name, ...]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ScriptToolCall(_Model):
    """A tool call the scripted model makes. ``raw_arguments`` is sent as the
    model's text verbatim (use it to write JSON that does not parse);
    otherwise ``arguments`` is encoded as JSON (absent means ``{}``)."""

    name: Name
    id: Name | None = None
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ScriptToolCall:
        if self.arguments is not None and self.raw_arguments is not None:
            raise ValueError("give either arguments or raw_arguments, not both")
        if self.arguments is not None:
            try:
                json.dumps(self.arguments, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"arguments must be plain JSON data (quote dates and times): {exc}"
                ) from None
        return self

    def raw_text(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments or {}, ensure_ascii=False)


class ScriptExpect(_Model):
    """What the run must offer for a turn to proceed."""

    stage: Name | None = None
    offered: Names | None = None  # exactly these tool names (in any order)
    offered_includes: Names = ()
    not_offered: Names = ()
    edges: Names | None = None  # exactly these hinted edge targets
    tool_results_include: tuple[str, ...] = ()  # in the results since the previous turn
    prompt_includes: tuple[str, ...] = ()  # anywhere in the conversation


class ScriptTurn(_Model):
    stage: Name | None = None
    text: str | None = None
    tool_calls: tuple[ScriptToolCall, ...] = ()
    edge: Name | None = None
    expect: ScriptExpect | None = None
    # How long the model "thinks" before answering (spinners, cancellation).
    delay_s: Annotated[float, Field(ge=0, le=300)] = 0.0
    # The provider fails this turn with this message, like an endpoint would.
    fail: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _does_something(self) -> ScriptTurn:
        acts = self.text is not None or bool(self.tool_calls) or self.edge is not None
        if self.fail is not None and acts:
            raise ValueError("a turn that fails cannot also have text, tool_calls or edge")
        if not acts and self.fail is None:
            raise ValueError(
                "a turn needs text, tool_calls, edge or fail (write text: '' for silence)"
            )
        if (
            self.stage is not None
            and self.expect is not None
            and self.expect.stage is not None
            and self.expect.stage != self.stage
        ):
            raise ValueError(
                f"stage {self.stage!r} and expect.stage {self.expect.stage!r} disagree"
            )
        return self

    def expected_stage(self) -> str | None:
        if self.stage is not None:
            return self.stage
        return self.expect.stage if self.expect is not None else None


class Script(_Model):
    turns: tuple[ScriptTurn, ...]
    agents: dict[Name, tuple[ScriptTurn, ...]] = {}


# Which keys each part of the file allows, for did-you-mean on a misspelt key.
_KEYS: dict[str, tuple[str, ...]] = {
    "script": tuple(Script.model_fields),
    "turn": tuple(ScriptTurn.model_fields),
    "tool_call": tuple(ScriptToolCall.model_fields),
    "expect": tuple(ScriptExpect.model_fields),
}

Loc = tuple[int | str, ...]


# --------------------------------------------------------------------------- loading


class _Loaded:
    """A validated script with the line of each turn, for messages."""

    def __init__(self, script: Script, display: str, lines: Mapping[Loc, int]) -> None:
        self.script = script
        self.display = display
        self.lines = lines


def load_script(path: str | Path) -> Script:
    """Read and validate a script file; raise :class:`ScriptError` naming
    the file, line and key path of every problem."""
    return _load(Path(path)).script


def _load(path: Path) -> _Loaded:
    display = str(path)
    try:
        text = read_text_capped(path, MAX_SCRIPT_BYTES)
    except OSError as exc:
        raise ScriptError(f"cannot read script {display}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ScriptError(f"script {display} is {exc}") from None
    return _parse(text, display)


def _parse(text: str, display: str) -> _Loaded:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{display}:{mark.line + 1}:{mark.column + 1}" if mark else display
        what = exc.problem or exc.context or "unreadable"
        if exc.problem and exc.context and exc.context_mark is not None:
            # Where the construct began helps more than where reading stopped.
            start = exc.context_mark
            what += f" ({exc.context} at {start.line + 1}:{start.column + 1})"
        raise ScriptError(f"{where}: not valid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise ScriptError(f"{display}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    if node is None:
        raise ScriptError(f"{display}: the script is empty; it needs a list of turns")

    positions: dict[Loc, tuple[int, int]] = {}
    key_positions: dict[Loc, tuple[int, int]] = {}
    duplicates: list[str] = []
    _walk(node, (), positions, key_positions, duplicates, display)
    if duplicates:
        raise ScriptError("\n".join(duplicates))

    prefix: Loc = ()
    if isinstance(value, list):
        # A bare list is the turns of the main agent.
        value, prefix = {"turns": value}, ("turns",)
    elif not isinstance(value, dict):
        raise ScriptError(
            f"{display}:1:1: a script is a list of turns or a mapping with 'turns', "
            f"not {type(value).__name__}"
        )

    def file_loc(loc: Loc) -> Loc:
        return loc[len(prefix) :] if prefix and loc[: len(prefix)] == prefix else loc

    try:
        script = Script.model_validate(value)
    except ValidationError as exc:
        problems = [
            _describe(err, tuple(err["loc"]), display, file_loc, positions, key_positions)
            for err in exc.errors()
        ]
        problems.sort(key=lambda p: p[0])
        raise ScriptError(
            f"script {display} is not valid:\n" + "\n".join(text for _, text in problems)
        ) from None

    lines = {
        loc: positions[file_loc(loc)][0] for loc in _turn_locs(script) if file_loc(loc) in positions
    }
    return _Loaded(script, display, lines)


def _turn_locs(script: Script) -> list[Loc]:
    locs: list[Loc] = [("turns", i) for i in range(len(script.turns))]
    for name, turns in script.agents.items():
        locs.extend(("agents", name, i) for i in range(len(turns)))
    return locs


def _walk(
    node: yaml.Node,
    loc: Loc,
    positions: dict[Loc, tuple[int, int]],
    key_positions: dict[Loc, tuple[int, int]],
    duplicates: list[str],
    display: str,
) -> None:
    positions[loc] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[object] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node)
            where = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key in seen:
                duplicates.append(
                    f"{display}:{where[0]}:{where[1]}: key {key!r} appears twice in one mapping"
                )
            seen.add(key)
            key_positions[(*loc, key)] = where
            _walk(value_node, (*loc, key), positions, key_positions, duplicates, display)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*loc, index), positions, key_positions, duplicates, display)


def _describe(
    err: Any,
    loc: Loc,
    display: str,
    file_loc: Any,
    positions: Mapping[Loc, tuple[int, int]],
    key_positions: Mapping[Loc, tuple[int, int]],
) -> tuple[tuple[int, int], str]:
    """One problem as ``(position, text)``; the position orders the list."""
    floc: Loc = file_loc(loc)
    if err["type"] == "extra_forbidden":
        key = str(loc[-1])
        message = f"unknown key {key!r}"
        close = difflib.get_close_matches(key, _KEYS[_part(loc[:-1])], n=1, cutoff=0.6)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        where = key_positions.get(floc)
    else:
        message = err["msg"].removeprefix("Value error, ")
        where = None
    probe = floc
    while where is None:
        where = positions.get(probe)
        if not probe:
            break
        probe = probe[:-1]
    prefix = f"{display}:{where[0]}:{where[1]}" if where else display
    path = _key_path(loc)
    return (where or (0, 0)), (f"{prefix}: {path}: {message}" if path else f"{prefix}: {message}")


def _part(parent: Loc) -> str:
    """Which part of the file a parent key path points into."""
    if not parent:
        return "script"
    if parent[-1] == "expect":
        return "expect"
    if isinstance(parent[-1], int) and len(parent) >= 2 and parent[-2] == "tool_calls":
        return "tool_call"
    return "turn"


def _key_path(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# --------------------------------------------------------------------------- provider


@dataclass(frozen=True, slots=True)
class ScriptRequest:
    """One request a recording provider received, as the run sent it.

    ``agent`` is the sub-agent name the provider plays (None for the agent
    the run started with); ``copy`` tells providers of one name apart: 0 is
    the provider the run was given, and each :meth:`ScriptProvider.for_agent`
    call makes the next number, in the order the run asked for them.
    """

    agent: str | None
    copy: int
    stage: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    edges: tuple[EdgeChoice, ...]
    model: str | None = None  # the stage model the run asked for, if any

    @property
    def system(self) -> str:
        """The system prompt of this request ('' when it had none)."""
        return "\n\n".join(m.content or "" for m in self.messages if m.role == "system")

    def tool(self, name: str) -> ToolSpec | None:
        """The definition of tool ``name`` as this request offered it."""
        return next((t for t in self.tools if t.name == name), None)


class _Recorder:
    """The request list shared by a recording provider and its copies."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[ScriptRequest] = []
        self.copies = 0

    def next_copy(self) -> int:
        with self.lock:
            self.copies += 1
            return self.copies


class ScriptProvider:
    """Plays a script's turns in order, one per :meth:`complete` call."""

    def __init__(
        self,
        script: Script,
        *,
        display: str = "<script>",
        agent: str | None = None,
        record: bool = False,
        _lines: Mapping[Loc, int] | None = None,
        _recorder: _Recorder | None = None,
        _copy: int = 0,
    ) -> None:
        self._script = script
        self._display = display
        self._agent = agent
        self._turns = script.turns if agent is None else script.agents.get(agent, ())
        self._base: Loc = ("turns",) if agent is None else ("agents", agent)
        self._lines: Mapping[Loc, int] = _lines or {}
        self._next = 0
        self._lock = threading.Lock()
        self._closed = False
        # Off by default: a long scripted run would otherwise keep a copy of
        # the conversation for every turn.
        self._recorder = _recorder if _recorder is not None else (_Recorder() if record else None)
        self._copy = _copy

    @classmethod
    def from_file(cls, path: str | Path, *, record: bool = False) -> ScriptProvider:
        loaded = _load(Path(path))
        return cls(loaded.script, display=loaded.display, record=record, _lines=loaded.lines)

    @classmethod
    def from_text(
        cls, text: str, display: str = "<script>", *, record: bool = False
    ) -> ScriptProvider:
        loaded = _parse(text, display)
        return cls(loaded.script, display=display, record=record, _lines=loaded.lines)

    @property
    def requests(self) -> tuple[ScriptRequest, ...]:
        """Every request received so far by this provider and its copies, in
        the order they arrived. Asking a provider made without ``record``
        is a mistake in the test, so it raises rather than answering ()."""
        if self._recorder is None:
            raise RuntimeError("this ScriptProvider does not record; make it with record=True")
        with self._recorder.lock:
            return tuple(self._recorder.requests)

    def __repr__(self) -> str:
        who = f", agent={self._agent!r}" if self._agent else ""
        return f"ScriptProvider({self._display!r}{who}, turn {self._next}/{len(self._turns)})"

    @property
    def turns_used(self) -> int:
        return self._next

    @property
    def turns_left(self) -> int:
        return len(self._turns) - self._next

    def for_agent(self, name: str) -> ScriptProvider:
        recorder = self._recorder
        return ScriptProvider(
            self._script,
            display=self._display,
            agent=name,
            _lines=self._lines,
            _recorder=recorder,
            _copy=recorder.next_copy() if recorder is not None else 0,
        )

    def close(self) -> None:
        self._closed = True

    def complete(
        self,
        *,
        stage: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        edges: Sequence[EdgeChoice],
        on_retry: RetryObserver | None = None,  # a script never retries
        model: str | None = None,
    ) -> ModelTurn:
        with self._lock:
            if self._closed:
                raise ModelError(f"script {self._display} was already closed")
            index = self._next
            if self._recorder is not None:
                # Recorded before the script is consulted, so a request that
                # fails an expectation or finds the script exhausted is kept too.
                request = ScriptRequest(
                    self._agent,
                    self._copy,
                    stage,
                    tuple(messages),
                    tuple(tools),
                    tuple(edges),
                    model,
                )
                with self._recorder.lock:
                    self._recorder.requests.append(request)
            if index >= len(self._turns):
                raise ScriptExhaustedError(self._exhausted(stage), turns=index, stage=stage)
            self._next += 1
        turn = self._turns[index]
        differences = _unmet(turn, stage, messages, tools, edges)
        if differences:
            where = self._where(index)
            raise ScriptExpectationError(
                f"{where} in stage {stage!r}: " + "; ".join(differences),
                turn_index=index,
                stage=stage,
                differences=differences,
            )
        if turn.delay_s:
            time.sleep(turn.delay_s)
        if turn.fail is not None:
            raise ModelRequestError(f"{self._where(index)}: scripted failure: {turn.fail}")
        calls = tuple(
            ModelToolCall.parse(call.id or f"call_{index}_{n}", call.name, call.raw_text())
            for n, call in enumerate(turn.tool_calls)
        )
        return ModelTurn(
            text=turn.text,
            tool_calls=calls,
            edge=turn.edge,
            finish_reason="tool_calls" if calls else "stop",
        )

    def _where(self, index: int) -> str:
        loc = (*self._base, index)
        line = self._lines.get(loc)
        at = f":{line}" if line is not None else ""
        return f"script {self._display}{at}: {_key_path(loc)}"

    def _exhausted(self, stage: str) -> str:
        who = f" for agent {self._agent!r}" if self._agent else ""
        if not self._turns:
            return (
                f"script exhausted: {self._display} has no turns{who} "
                f"(the run asked for one in stage {stage!r})"
            )
        return (
            f"script exhausted: all {len(self._turns)} turns{who} of {self._display} were "
            f"played and the run asked for another in stage {stage!r}"
        )


def _unmet(
    turn: ScriptTurn,
    stage: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    edges: Sequence[EdgeChoice],
) -> list[str]:
    out: list[str] = []
    offered = {tool.name for tool in tools}
    targets = [edge.target for edge in edges]
    expected_stage = turn.expected_stage()
    if expected_stage is not None and expected_stage != stage:
        out.append(f"expected stage {expected_stage!r}")
    expect = turn.expect
    if expect is not None:
        if expect.offered is not None:
            missing = sorted(set(expect.offered) - offered)
            extra = sorted(offered - set(expect.offered))
            if missing or extra:
                parts = []
                if missing:
                    parts.append("missing " + ", ".join(missing))
                if extra:
                    parts.append("unexpected " + ", ".join(extra))
                out.append("offered tools differ: " + "; ".join(parts))
        absent = [name for name in expect.offered_includes if name not in offered]
        if absent:
            out.append("tools not offered: " + ", ".join(absent))
        present = [name for name in expect.not_offered if name in offered]
        if present:
            out.append("tools offered that should not be: " + ", ".join(present))
        if expect.edges is not None and set(expect.edges) != set(targets):
            shown = ", ".join(targets) or "none"
            out.append(f"offered edges differ: expected {', '.join(expect.edges)}; got {shown}")
        recent = _recent_tool_results(messages)
        for needle in expect.tool_results_include:
            if not any(needle in text for text in recent):
                out.append(f"no tool result since the previous turn contains {needle!r}")
        everything = [m.content for m in messages if m.content]
        for needle in expect.prompt_includes:
            if not any(needle in text for text in everything):
                out.append(f"the conversation does not contain {needle!r}")
    if turn.edge is not None and turn.edge not in targets:
        choices = ", ".join(targets) if targets else "none are offered here"
        out.append(f"edge {turn.edge!r} cannot be chosen (hinted edges: {choices})")
    return out


def _recent_tool_results(messages: Sequence[Message]) -> list[str]:
    out: list[str] = []
    for message in reversed(messages):
        if message.role == "assistant":
            break
        if message.role == "tool" and message.content:
            out.append(message.content)
    return out
