"""The remaining seed-000 tools: tools_list, session_search, schedule_manage,
and the host-only core tools evolve_core and rollback_core.

* **tools_list** reports the tools the current stage offers, each with the
  decision a call would meet right now (the plan's permission, a launch flag
  lifting an ask, a capability the agent lacks, host-only tools).
* **session_search** searches or browses the current run's message history.
  The only session a run can read is its own: any other id, existing or
  not, gets the same "no such session" answer.
* **schedule_manage** keeps the agent's cron schedules in
  ``<workspace>/.charter/schedules/<agent>.json``. Charter stores and
  validates them; it runs no scheduler daemon. A host (cron, CI) starts
  ``charter run`` for each enabled entry.
* **evolve_core** and **rollback_core** change a live agent core through a
  version store that only a hosting service has. They reach this module
  only after their capability and a person's approval (each action is
  approved on its own: the approval cache keys on the full arguments, so
  approving ``promote`` never covers ``discard``). Here they check the
  request and answer that it is not available in this runtime; nothing is
  changed. The plan and ``charter show`` mark both as host-only.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.atomic import write_atomic
from charter.runtime.policy.capabilities import is_granted
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.base import current_session

if TYPE_CHECKING:
    from charter.runtime.policy.session import Session
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "CRON_FIELDS",
    "cron_problem",
    "run_evolve",
    "run_rollback",
    "run_schedules",
    "run_session_search",
    "run_tools_list",
]


def _err(rule: str, message: str, status: Any = "error") -> ToolResult:
    return refusal(status, "dispatch", rule, message)


# -- tools_list ------------------------------------------------------------------------


def _effective(session: Session, name: str) -> str:
    agent = session.agent
    entry = agent.tools.get(name)
    decision = session.stage.decisions.get(name)
    if entry is None or decision is None:
        return "deny (no plan entry)"
    if entry.host_only:
        return "not available in this runtime (host-only)"
    if agent.checks_capabilities and entry.capability is not None:
        from charter.runtime.plan.prepared import usable_grants

        if not is_granted(entry.capability, usable_grants(agent, entry)):
            return f"deny (capability {entry.capability} not granted)"
    if decision.permission == "ask" and decision.liftable and session.lifted(name):
        flag = "--yolo" if session.yolo else f"--allow {name}"
        return f"allow ({flag} lifts the ask)"
    return str(decision.permission)


def run_tools_list(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool
) -> ToolResult:
    session = current_session()
    if session is None:
        return _err("no-session", "tools_list answers only inside a gated call", "unavailable")
    stage = session.stage
    offered = session.offered()
    order = [n for n in stage.stage.attended if n in offered]
    order += sorted(n for n in offered if n not in order)
    rows = []
    for name in order:
        entry = session.agent.tools.get(name)
        text = (entry.description if entry is not None else "").strip().split("\n")[0]
        first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0][:160]
        rows.append(
            {
                "name": name,
                "decision": _effective(session, name),
                "source": entry.source if entry is not None else "unknown",
                "summary": first,
            }
        )
    lines = [f"{r['name']} [{r['decision']}]: {r['summary']}" for r in rows]
    head = f"{len(rows)} tools in stage '{session.stage_name}':"
    return ToolResult("ok", "\n".join([head, *lines]), data={"tools": rows})


# -- session_search -------------------------------------------------------------------------

_SNIPPET = 200


def _snippet(text: str, at: int, width: int) -> str:
    start = max(0, at - width // 2)
    end = min(len(text), start + width)
    out = text[start:end].replace("\n", " ")
    return ("..." if start else "") + out + ("..." if end < len(text) else "")


def run_session_search(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool
) -> ToolResult:
    session = current_session()
    current = (session.run_id or "current") if session is not None else "current"
    wanted = args.get("session_id")
    earlier = rt.earlier_sessions
    limit = int(args.get("limit", 10))
    query = args.get("query")
    if wanted is not None and wanted not in (current, "current"):
        # Only this agent's own stored sessions are readable, and saying
        # whether any other exists would already tell something.
        found = [h for h in earlier(query, 10_000) if h[0] == wanted] if earlier else []
        if not found:
            return _err("unknown-session", f"no session '{wanted}' that you can read")
        return _earlier_result(found[:limit])
    history = rt.history
    if history is None:
        return _err(
            "no-history",
            "this runtime keeps no message history for the session, so there is nothing to search",
            "unavailable",
        )
    messages = [
        (n, str(getattr(m, "role", "")), str(getattr(m, "content", "") or ""))
        for n, m in enumerate(history())
    ]
    messages = [m for m in messages if m[1] != "system" and m[2]]
    hits: list[dict[str, Any]] = []
    if query is None:
        for n, role, text in messages[-limit:]:
            hits.append({"index": n, "role": role, "text": _snippet(text, 0, _SNIPPET)})
    else:
        needle = str(query).casefold()
        for n, role, text in reversed(messages):
            at = text.casefold().find(needle)
            if at >= 0:
                hits.append({"index": n, "role": role, "text": _snippet(text, at, _SNIPPET)})
                if len(hits) >= limit:
                    break
        hits.reverse()
    older = earlier(query, limit) if earlier is not None else []
    if not hits and not older:
        what = f" for {query!r}" if query is not None else ""
        return ToolResult("ok", f"(no messages{what} in session {current})", data={"hits": []})
    lines = [f"#{h['index']} {h['role']}: {h['text']}" for h in hits]
    if older:
        lines.append("Earlier sessions of this agent:")
        lines.extend(_earlier_lines(older))
    data: dict[str, Any] = {"session_id": current, "hits": hits}
    if older:
        data["earlier"] = [{"session": s, "index": i, "role": r} for s, i, r, _ in older]
    return ToolResult("ok", "\n".join(lines), data=data)


def _earlier_lines(found: list[tuple[str, int, str, str]]) -> list[str]:
    return [f"[{s}] #{i} {r}: {_snippet(text, 0, _SNIPPET)}" for s, i, r, text in found]


def _earlier_result(found: list[tuple[str, int, str, str]]) -> ToolResult:
    data = {"hits": [{"session": s, "index": i, "role": r} for s, i, r, _ in found]}
    return ToolResult("ok", "\n".join(_earlier_lines(found)), data=data)


# -- schedule_manage --------------------------------------------------------------------------

# (name, low, high, names) of the five standard cron fields.
CRON_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    (
        "month",
        1,
        12,
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
    ),
    ("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)
_MAX_SCHEDULES = 100


def _cron_value(text: str, low: int, high: int, names: tuple[str, ...]) -> int | None:
    lowered = text.lower()
    if lowered in names:
        return names.index(lowered) + (1 if low == 1 else 0)
    if not text.isdigit():
        return None
    value = int(text)
    return value if low <= value <= high else None


def cron_problem(expr: str) -> str | None:
    """Why ``expr`` is not a standard five-field cron expression, or None."""
    fields = expr.split()
    if len(fields) != 5:
        return (
            f"a cron expression has five fields (minute hour day month weekday); got {len(fields)}"
        )
    for text, (name, low, high, names) in zip(fields, CRON_FIELDS, strict=True):
        for part in text.split(","):
            base, _, step = part.partition("/")
            if step and (not step.isdigit() or int(step) < 1 or int(step) > high):
                return f"{name}: bad step {step!r} in {part!r}"
            if base == "*":
                continue
            lo_text, dash, hi_text = base.partition("-")
            lo = _cron_value(lo_text, low, high, names)
            hi = _cron_value(hi_text, low, high, names) if dash else lo
            if lo is None or hi is None:
                return f"{name}: {part!r} is outside {low}-{high}"
            if hi < lo:
                return f"{name}: range {base!r} runs backwards"
            if step and not dash:
                return f"{name}: a step needs '*' or a range, not {part!r}"
    return None


def _schedule_file(rt: ToolRuntime, session: Session | None) -> Path:
    agent = session.agent.agent.name if session is not None else "default"
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", agent)
    return Path(rt.workspace) / ".charter" / "schedules" / f"{safe}.json"


def _load_schedules(path: Path) -> list[dict[str, Any]] | ToolResult:
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _err("schedules-unreadable", f"the schedule file cannot be read ({exc})")
    items = data.get("schedules") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return _err("schedules-unreadable", "the schedule file is not in the expected shape")
    return items


def _save_schedules(path: Path, items: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"schedules": items}, indent=2, sort_keys=True) + "\n"
    write_atomic(path, text, prefix=".schedules-")


def _show(item: dict[str, Any]) -> str:
    state = "enabled" if item.get("enabled") else "disabled"
    prompt = str(item.get("prompt", "")).replace("\n", " ")
    return f"{item.get('id')} [{state}] {item.get('schedule')}: {prompt[:120]}"


def run_schedules(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool
) -> ToolResult:
    path = _schedule_file(rt, current_session())
    items = _load_schedules(path)
    if isinstance(items, ToolResult):
        return items
    action = args.get("action")
    note = " (`charter schedule run` fires them as unattended runs.)"
    if action == "list":
        if not items:
            return ToolResult("ok", "(no schedules)" + note, data={"schedules": []})
        return ToolResult("ok", "\n".join(_show(i) for i in items), data={"schedules": items})
    if "schedule" in args:
        problem = cron_problem(str(args["schedule"]))
        if problem is not None:
            return _err("schedule-bad-cron", problem, "invalid")
    if action == "create":
        if len(items) >= _MAX_SCHEDULES:
            return _err("schedules-full", f"at most {_MAX_SCHEDULES} schedules per agent")
        wanted = args.get("schedule_id")
        if wanted is not None and any(i.get("id") == wanted for i in items):
            return _err("schedule-exists", f"schedule '{wanted}' already exists")
        item = {
            "id": wanted or "sched-" + secrets.token_hex(4),
            "schedule": " ".join(str(args["schedule"]).split()),
            "prompt": str(args["prompt"]),
            "enabled": True,
        }
        items.append(item)
        _save_schedules(path, items)
        return ToolResult("ok", "created " + _show(item) + note, data={"schedule": item})
    found = next((i for i in items if i.get("id") == args.get("schedule_id")), None)
    if found is None:
        return _err("unknown-schedule", f"no schedule '{args.get('schedule_id')}'")
    if action == "update":
        if "schedule" not in args and "prompt" not in args:
            return _err("schedule-no-change", "update needs schedule or prompt", "invalid")
        if "schedule" in args:
            found["schedule"] = " ".join(str(args["schedule"]).split())
        if "prompt" in args:
            found["prompt"] = str(args["prompt"])
    elif action in ("enable", "disable"):
        found["enabled"] = action == "enable"
    elif action == "delete":
        items = [i for i in items if i is not found]
    else:
        return _err("schedule-bad-action", f"unknown action {action!r}", "invalid")
    _save_schedules(path, items)
    verb = {"update": "updated", "enable": "enabled", "disable": "disabled", "delete": "deleted"}
    return ToolResult(
        "ok", f"{verb[str(action)]} schedule '{found['id']}'", data={"schedule": found}
    )


# -- evolve_core / rollback_core ------------------------------------------------------------------


def run_evolve(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    action = args.get("action")
    needs = {"start": "goal", "review": "run_id", "promote": "run_id", "discard": "run_id"}
    if action not in needs:
        return _err("evolve-bad-action", f"unknown action {action!r}", "invalid")
    if not args.get(needs[str(action)]):
        return _err(
            "evolve-missing-field", f"action '{action}' needs {needs[str(action)]}", "invalid"
        )
    return _err(
        "host-only",
        f"evolve_core ({action}) is not available in this runtime: evolving an agent core "
        "needs a host with a version store. Nothing was started or changed; edit the core's "
        "files and recompile instead",
        "unavailable",
    )


def run_rollback(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    target = args.get("target", "previous")
    return _err(
        "host-only",
        f"rollback_core (to {target!r}) is not available in this runtime: rolling a live core "
        "back needs a host with a version store. Nothing was changed",
        "unavailable",
    )
