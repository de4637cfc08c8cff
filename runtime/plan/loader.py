"""Loading a compiled plan: the only way the runtime accepts one.

One verification story, told in one of two modes. A plan is accepted only
when, in this order:

1. the file is at most :data:`MAX_PLAN_BYTES`;
2. it is UTF-8 JSON, and an object;
3. its ``schema_version`` is the one this runtime speaks (any other: compile
   the plan again with this Charter);
4. its body's canonical JSON hashes to its ``digest`` (a plan edited by
   hand, truncated or corrupted is refused);
5. the plan model reads it, and reads it exactly as written.

**Whole** (the default): the file is parsed, its version checked, the plan
model validates it, and the body is hashed as re-serialised canonically.

**Selective** (``agents=`` names some agents): a one-shot decision needs one
agent of a plan that may hold a hundred. A file in the compiler's own
canonical layout holds its body as exactly the bytes the digest covers, so
steps 3 and 4 are checked on the bytes as they are, and only the named
agents' parts are parsed and validated (step 5), then re-serialised to prove
the models read them exactly as written: a plan written by other models (a
field added since) matches its own digest but not what these models make of
it. The :class:`~charter.runtime.plan.Plan` returned then holds only those
agents, under the verified digest of the whole file. A file in any other
layout, one that names an agent it does not hold, or one that fails any step
is read in the whole mode instead, which refuses it with the problem named.

The loader never resolves anything.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from charter.runtime.errors import CharterError
from charter.runtime.plan import (
    SCHEMA_VERSION,
    AgentPlan,
    Plan,
    PlanBody,
    canonical_json,
    dumps_canonical,
)

__all__ = ["MAX_PLAN_BYTES", "PlanError", "load_plan", "load_plan_bytes"]

MAX_PLAN_BYTES = 64 * 1024 * 1024


class PlanError(CharterError):
    """The plan cannot be used; the message says why."""


def load_plan(path: str | Path, *, agents: Iterable[str] | None = None) -> Plan:
    """The plan in the file at ``path``, verified; with ``agents``, possibly
    only those agents of it (the selective mode, see the module docstring)."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_PLAN_BYTES:
            raise PlanError(f"{p}: plan is {size} bytes, over the {MAX_PLAN_BYTES} byte limit")
        data = p.read_bytes()
    except OSError as exc:
        raise PlanError(f"{p}: cannot read plan: {exc.strerror or exc}") from None
    return load_plan_bytes(data, str(p), agents=agents)


def load_plan_bytes(
    data: bytes, name: str = "<plan>", *, agents: Iterable[str] | None = None
) -> Plan:
    """The plan ``data`` holds, verified (``name`` labels messages)."""
    wanted = None if agents is None else set(agents)
    if wanted and len(data) <= MAX_PLAN_BYTES:
        selected = _selective(data, wanted)
        if selected is not None:
            return selected
    return _whole(data, name)


# -- the whole mode --------------------------------------------------------------


def _whole(data: bytes, name: str) -> Plan:
    if len(data) > MAX_PLAN_BYTES:
        raise PlanError(f"{name}: plan is {len(data)} bytes, over the {MAX_PLAN_BYTES} byte limit")
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise PlanError(f"{name}: plan is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise PlanError(
            f"{name}: plan is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "was it truncated?"
        ) from None
    except RecursionError:
        # The compiler never nests a plan this deep; only a crafted file does.
        raise PlanError(f"{name}: plan nests arrays or objects too deeply to be a plan") from None
    except ValueError:
        # The only other refusal of json.loads: an integer of thousands of
        # digits (the standard library's guard against quadratic conversion).
        # No plan field holds one.
        raise PlanError(
            f"{name}: plan holds an integer too long to read (over "
            f"{sys.get_int_max_str_digits()} digits); no plan field holds one"
        ) from None
    if not isinstance(raw, dict):
        raise PlanError(f"{name}: a plan is a JSON object")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise PlanError(
            f"{name}: plan schema version {version!r} is not supported by this runtime "
            f"(it reads version {SCHEMA_VERSION}); recompile the plan with this Charter "
            "(charter compile)"
        )
    try:
        # strict=False: JSON arrays arrive as lists, and the plan's frozen
        # models hold tuples; the types are otherwise checked as declared.
        plan = Plan.model_validate(raw, strict=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PlanError(
            f"{name}: plan does not match the plan schema at {where}: {first['msg']} "
            f"({exc.error_count()} problem(s))"
        ) from None
    # Hash the body exactly as the file holds it (re-serialised canonically):
    # that is what the compiler hashed, and it avoids dumping every model of
    # a large plan again.
    body_text = dumps_canonical(raw.get("body"))
    actual = "sha256:" + hashlib.sha256(body_text.encode("utf-8")).hexdigest()
    if actual != plan.digest:
        raise PlanError(
            f"{name}: plan digest mismatch: the file says {plan.digest} but its body hashes to "
            f"{actual}; the plan was modified after it was compiled. Recompile it."
        )
    return plan


# -- the selective mode ------------------------------------------------------------
#
# A plan file as the compiler writes it: canonical JSON, so the body's text is
# exactly what the digest was computed over, followed by this tail.
_HEAD = b'{"body":'
_TAIL = re.compile(rb',"digest":"(sha256:[0-9a-f]{64})","schema_version":(\d{1,9})\}\n?\Z')
_AGENTS_OPEN = b'{"agents":['
_AGENTS_CLOSE = b'],"compiler_version":'


def _selective(data: bytes, wanted: set[str]) -> Plan | None:
    """The plan with only the wanted agents, or None when the file is not
    in the canonical layout or fails a check (the whole mode then decides)."""
    tail = _TAIL.search(data) if data.startswith(_HEAD) else None
    if tail is None or int(tail.group(2)) != SCHEMA_VERSION:
        return None
    body = data[len(_HEAD) : tail.start()]
    digest = tail.group(1).decode("ascii")
    if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
        return None
    picked = _pick_agents(body, wanted)
    if picked is None:
        return None
    # The plan object holds only these agents; its digest is the verified
    # digest of the whole file.
    return Plan.model_construct(schema_version=SCHEMA_VERSION, digest=digest, body=picked)


@functools.cache
def _agent_start() -> re.Pattern[bytes] | None:
    """Where an agent object starts in canonical JSON: ``{"`` and the first of
    its field names in sorted order. A JSON string cannot hold an unescaped
    quote, so the sequence marks only a real object start, and only an agent
    when no model nested in an agent has a field of that name (checked here,
    so a change to the plan models can never make the split wrong: without a
    usable marker the whole body is parsed)."""
    first = min(AgentPlan.model_fields)
    seen: set[type] = set()
    todo: list[Any] = [f.annotation for f in AgentPlan.model_fields.values()]
    while todo:
        tp = todo.pop()
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp in seen:
                continue
            seen.add(tp)
            if first in tp.model_fields:
                return None
            todo.extend(f.annotation for f in tp.model_fields.values())
        else:
            todo.extend(typing.get_args(tp))
    return re.compile(re.escape(b'{"' + first.encode("ascii") + b'":'))


def _pick_agents(body: bytes, wanted: set[str]) -> PlanBody | None:
    """The body with only the wanted agents, parsing none of the others; None
    when the bytes are not laid out as expected."""
    if not body.startswith(_AGENTS_OPEN) or body.count(_AGENTS_CLOSE) != 1:
        return None
    end = body.index(_AGENTS_CLOSE)
    agents = body[len(_AGENTS_OPEN) : end]
    marker = _agent_start()
    if marker is None:
        return None
    starts = [m.start() for m in marker.finditer(agents)]
    if not starts or starts[0] != 0:
        return None
    bounds = [*starts, len(agents) + 1]
    chosen: list[Any] = []
    chunks: dict[str, bytes] = {}
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b <= len(agents) and agents[b - 1 : b] != b",":
            return None
        chunk = agents[a : b - 1]
        if not any(
            b'"name":' + json.dumps(n, ensure_ascii=False).encode("utf-8") in chunk for n in wanted
        ):
            continue
        try:
            obj = json.loads(chunk)
        except (ValueError, RecursionError):
            return None
        if isinstance(obj, dict) and obj.get("name") in wanted:
            chosen.append(obj)
            chunks[obj["name"]] = chunk
    if {c["name"] for c in chosen} != wanted:
        return None  # an agent is missing: the whole mode reports it with every name
    rest_bytes = b"{" + body[end + 2 :]
    try:
        rest = json.loads(rest_bytes)
        partial = PlanBody.model_validate({**rest, "agents": chosen})
    except (ValueError, TypeError, RecursionError, ValidationError):
        return None
    # Step 5: re-serialising the parts read must give back the bytes the
    # digest covered, or these models read them differently from the writer.
    dumped = partial.model_dump(mode="json")
    agents_out = dumped.pop("agents")
    if canonical_json(dumped).encode("utf-8") != rest_bytes:
        return None
    for model in agents_out:
        if canonical_json(model).encode("utf-8") != chunks[model["name"]]:
            return None
    return partial
