"""Loading a compiled plan: the only way the runtime accepts one.

The loader refuses a plan whose schema version it does not speak, whose
digest does not match its body (edited by hand, truncated, corrupted), or
that does not validate against the plan model. It never resolves anything.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from charter.runtime.plan import SCHEMA_VERSION, Plan, dumps_canonical

__all__ = ["MAX_PLAN_BYTES", "PlanError", "load_plan", "load_plan_bytes"]

MAX_PLAN_BYTES = 64 * 1024 * 1024


class PlanError(Exception):
    """The plan cannot be used; the message says why."""


def load_plan(path: str | Path) -> Plan:
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_PLAN_BYTES:
            raise PlanError(f"{p}: plan is {size} bytes, over the {MAX_PLAN_BYTES} byte limit")
        data = p.read_bytes()
    except OSError as exc:
        raise PlanError(f"{p}: cannot read plan: {exc.strerror or exc}") from None
    return load_plan_bytes(data, str(p))


def load_plan_bytes(data: bytes, name: str = "<plan>") -> Plan:
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
            f"(it reads version {SCHEMA_VERSION}); recompile the plan with this Charter"
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
