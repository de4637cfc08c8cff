"""The MCP lock file: what each server offered when a person last reviewed it.

``charter mcp lock`` connects to the declared servers, lists their tools and
writes one record per tool: its name, its model-visible safe name, its
description and input schema, and a sha256 of each. The compiler reads the
records so pinned tools are checked like any other tool; the runtime compares
what a server lists with the pins, and a tool whose description or schema
changed since review, or that did not exist then, is not offered (a server
can otherwise rewrite a reviewed tool's instructions to the model at will).

Each server record also holds the launch identity (the command and arguments
of a stdio server, the origin of an HTTP one) and the sha256 of its manifest
file, so a lock written for one program is never applied to another.

The format is plain JSON (this module imports neither the MCP SDK nor an HTTP
stack, so ``charter validate`` stays light) written canonically: sorted keys,
two-space indent, UTF-8, tools sorted by name, one trailing newline. Writing
the same lock twice gives the same bytes, so it diffs cleanly in review.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from charter.runtime.atomic import write_atomic
from charter.runtime.capped import read_text_capped
from charter.runtime.errors import CharterError
from charter.runtime.mcp.naming import mcp_safe_names
from charter.runtime.records import field_values

__all__ = [
    "LOCK_FILE",
    "LOCK_VERSION",
    "Change",
    "Comparison",
    "ListedTool",
    "Lock",
    "LockError",
    "PinLike",
    "ServerLock",
    "ToolPin",
    "canonical",
    "compare",
    "description_digest",
    "dumps",
    "loads",
    "pin_tools",
    "read_lock",
    "schema_digest",
    "sha256_text",
    "write_lock",
]

LOCK_FILE = "charter.lock.json"
LOCK_VERSION = 1
# A lock is reviewed by people and read on every compile; anything larger is
# not a lock somebody looked at.
MAX_LOCK_BYTES = 8 * 1024 * 1024

Transport = Literal["stdio", "streamable_http"]


class LockError(CharterError, ValueError):
    """The lock file cannot be read or does not have the expected shape."""


def canonical(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, non-ASCII kept as is.

    Unlike the plan's canonical form this accepts floats: servers put them in
    schemas (``"default": 1.5``) and Python prints a float the same way on
    every platform, so the digest is still stable."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def description_digest(description: str | None) -> str:
    """A missing description and an empty one are the same to the model."""
    return sha256_text(description or "")


def schema_digest(schema: Any) -> str:
    return sha256_text(canonical(schema))


@dataclass(frozen=True, slots=True)
class ListedTool:
    """One tool as a server lists it, reduced to what is pinned."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolPin:
    name: str
    safe_name: str
    description: str
    input_schema: Mapping[str, Any]
    description_sha256: str
    schema_sha256: str

    def to_json(self) -> dict[str, Any]:
        return field_values(self)  # dumps() sorts the keys


@dataclass(frozen=True, slots=True)
class ServerLock:
    server: str
    transport: Transport
    # stdio: ("command", "args"); streamable_http: ("origin",)
    launch: Mapping[str, Any]
    manifest_sha256: str
    tools: tuple[ToolPin, ...] = ()

    def tool(self, name: str) -> ToolPin | None:
        return next((t for t in self.tools if t.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "transport": self.transport,
            "launch": dict(self.launch),
            "manifest_sha256": self.manifest_sha256,
            "tools": [t.to_json() for t in sorted(self.tools, key=lambda t: t.name)],
        }


@dataclass(frozen=True, slots=True)
class Lock:
    servers: Mapping[str, ServerLock] = field(default_factory=dict)

    def with_server(self, entry: ServerLock) -> Lock:
        return Lock({**self.servers, entry.server: entry})


def pin_tools(server: str, listed: Iterable[ListedTool]) -> tuple[ToolPin, ...]:
    """Pins for every listed tool; safe names are assigned over the whole
    listing, as :func:`charter.runtime.mcp.naming.mcp_safe_names` does."""
    tools = list(listed)
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise LockError(f"server '{server}' lists the tool(s) {', '.join(dup)} more than once")
    safe = mcp_safe_names(server, names)
    return tuple(
        ToolPin(
            name=t.name,
            safe_name=safe[t.name],
            description=t.description,
            input_schema=t.input_schema,
            description_sha256=description_digest(t.description),
            schema_sha256=schema_digest(t.input_schema),
        )
        for t in sorted(tools, key=lambda t: t.name)
    )


def dumps(lock: Lock) -> str:
    body = {
        "version": LOCK_VERSION,
        "servers": {name: lock.servers[name].to_json() for name in sorted(lock.servers)},
    }
    return json.dumps(body, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _need(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise LockError(f"{where}: {message}")


def _text(value: Any, where: str) -> str:
    _need(isinstance(value, str), where, "must be a string")
    return str(value)


def _digest(value: Any, where: str) -> str:
    text = _text(value, where)
    _need(
        len(text) == 64 and all(c in "0123456789abcdef" for c in text),
        where,
        "must be a lowercase sha256 hex digest",
    )
    return text


def _tool(server: str, i: int, raw: Any) -> ToolPin:
    where = f"servers.{server}.tools[{i}]"
    _need(isinstance(raw, dict), where, "must be an object")
    keys = {"name", "safe_name", "description", "description_sha256", "input_schema"}
    keys.add("schema_sha256")
    _need(set(raw) == keys, where, f"must have exactly the keys {', '.join(sorted(keys))}")
    pin = ToolPin(
        name=_text(raw["name"], f"{where}.name"),
        safe_name=_text(raw["safe_name"], f"{where}.safe_name"),
        description=_text(raw["description"], f"{where}.description"),
        input_schema=raw["input_schema"],
        description_sha256=_digest(raw["description_sha256"], f"{where}.description_sha256"),
        schema_sha256=_digest(raw["schema_sha256"], f"{where}.schema_sha256"),
    )
    _need(isinstance(pin.input_schema, dict), f"{where}.input_schema", "must be an object")
    # The digests are what the runtime compares; the text is what the
    # compiler shows the model. They must agree, or an edited lock could
    # offer one description while pinning another.
    _need(
        description_digest(pin.description) == pin.description_sha256,
        f"{where}.description_sha256",
        "does not match the description (the lock was edited by hand; run charter mcp lock)",
    )
    _need(
        schema_digest(pin.input_schema) == pin.schema_sha256,
        f"{where}.schema_sha256",
        "does not match the input_schema (the lock was edited by hand; run charter mcp lock)",
    )
    return pin


def _server(name: str, raw: Any) -> ServerLock:
    where = f"servers.{name}"
    _need(isinstance(raw, dict), where, "must be an object")
    keys = {"transport", "launch", "manifest_sha256", "tools"}
    _need(set(raw) == keys, where, f"must have exactly the keys {', '.join(sorted(keys))}")
    transport = raw["transport"]
    _need(transport in ("stdio", "streamable_http"), f"{where}.transport", "unknown transport")
    launch = raw["launch"]
    _need(isinstance(launch, dict), f"{where}.launch", "must be an object")
    tools_raw = raw["tools"]
    _need(isinstance(tools_raw, list), f"{where}.tools", "must be a list")
    tools = tuple(_tool(name, i, t) for i, t in enumerate(tools_raw))
    names = [t.name for t in tools]
    _need(len(set(names)) == len(names), f"{where}.tools", "names a tool twice")
    return ServerLock(
        server=name,
        transport=transport,
        launch=launch,
        manifest_sha256=_digest(raw["manifest_sha256"], f"{where}.manifest_sha256"),
        tools=tools,
    )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise LockError(f"the key '{key}' appears twice in one object")
        out[key] = value
    return out


def _no_constants(value: str) -> Any:
    raise LockError(f"'{value}' is not a JSON number")


def loads(text: str) -> Lock:
    """Parse and check a lock; raises :class:`LockError` with a path-like
    location for anything unexpected."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise LockError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    _need(isinstance(data, dict), "top level", "must be an object")
    _need(set(data) == {"version", "servers"}, "top level", "must have exactly version, servers")
    _need(
        data["version"] == LOCK_VERSION and type(data["version"]) is int,
        "version",
        f"this Charter reads lock version {LOCK_VERSION}",
    )
    servers = data["servers"]
    _need(isinstance(servers, dict), "servers", "must be an object")
    return Lock({name: _server(name, raw) for name, raw in servers.items()})


def read_lock(path: Path) -> Lock | None:
    """The lock at ``path``; None when there is no file."""
    try:
        text = read_text_capped(path, MAX_LOCK_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockError(f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise LockError(str(exc)) from None
    return loads(text)


def write_lock(path: Path, lock: Lock) -> None:
    """Replace the lock atomically: a reader never sees half a file."""
    write_atomic(path, dumps(lock), prefix=".charter-lock-", newline="\n")


# --------------------------------------------------------------------------- comparison


class PinLike(Protocol):
    """What a comparison needs from a pin: the lock's ToolPin and the plan's
    McpToolPin both qualify. A digest of None never matches."""

    @property
    def description_sha256(self) -> str | None: ...

    @property
    def schema_sha256(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Change:
    name: str
    what: tuple[str, ...]  # "description", "input_schema", "listed-twice"


@dataclass(frozen=True, slots=True)
class Comparison:
    offered: tuple[ListedTool, ...]  # listed exactly as pinned
    changed: tuple[Change, ...]  # pinned, but listed differently: not offered
    new: tuple[str, ...]  # listed, never pinned: not offered
    missing: tuple[str, ...]  # pinned, no longer listed

    @property
    def clean(self) -> bool:
        return not (self.changed or self.new or self.missing)


def compare(pins: Mapping[str, PinLike], listed: Sequence[ListedTool]) -> Comparison:
    """Split a server's listing against its pins. Only a tool whose name,
    description digest and schema digest all match is offered."""
    counts: dict[str, int] = {}
    for t in listed:
        counts[t.name] = counts.get(t.name, 0) + 1
    offered: list[ListedTool] = []
    changed: list[Change] = []
    new: list[str] = []
    for t in sorted(listed, key=lambda t: t.name):
        pin = pins.get(t.name)
        if counts[t.name] > 1:
            # Which of the two would be called is up to the server: neither.
            if not any(c.name == t.name for c in changed):
                changed.append(Change(t.name, ("listed-twice",)))
            continue
        if pin is None:
            new.append(t.name)
            continue
        what: list[str] = []
        if pin.description_sha256 is None or pin.description_sha256 != description_digest(
            t.description
        ):
            what.append("description")
        if pin.schema_sha256 is None or pin.schema_sha256 != schema_digest(t.input_schema):
            what.append("input_schema")
        if what:
            changed.append(Change(t.name, tuple(what)))
        else:
            offered.append(t)
    missing = sorted(set(pins) - set(counts))
    return Comparison(tuple(offered), tuple(changed), tuple(new), tuple(missing))
