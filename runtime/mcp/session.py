"""MCP servers inside a session: connect once, offer what was found, dispatch calls.

The gates are synchronous and run wherever their caller is (a worker thread of
``charter run``, a test, the hook), while the MCP SDK needs an event loop that
outlives single calls. :class:`McpRuntime` therefore keeps its connections on
an event loop of its own (an anyio blocking portal in a private thread), and
offers a blocking API: :meth:`McpRuntime.attach` connects an agent's servers
and installs what they offer into a :class:`~charter.runtime.session.Session`;
the gates' dispatch step calls :meth:`McpBinding.call`.

What a session sees after attaching is decided by :func:`overlay`, which
rebuilds the prepared agent (tool entries, schema checks, stage tool sets and
decisions) from the discovery reports:

* a pinned tool stays offered only when its server listed it exactly as
  locked; otherwise it disappears from every stage and a call names why;
* a tool of an unlocked server (or an include name planned without a pin)
  gets the description and schema the server gave, and its decision is at
  least ``ask``: nobody reviewed what it says about itself;
* a stage that offers ``<server>__*`` (the compiler allows that pattern for
  an unlocked server) offers each discovered tool the pattern matches, with
  the pattern's decision; an exact dynamic name is offered when discovered.

Nothing else in the plan changes. Every server's outcome (connected, refused,
failed, timed out; changed, new, missing and colliding tools) is written to
the audit log and returned, so the caller can show it.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import CancelledError
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from charter.runtime.approval import ApprovalRequest
from charter.runtime.mcp.client import (
    ConnectRefused,
    DiscoveredTool,
    McpHost,
    McpPool,
    ServerReport,
    ServerRequest,
    authorize_connect,
    plan_pins,
    plan_tool_names,
)
from charter.runtime.mcp.filters import pattern_matches
from charter.runtime.mcp.launch import ConnectPreview
from charter.runtime.mcp.lock import canonical
from charter.runtime.naming import mcp_safe_name
from charter.runtime.plan import (
    AgentPlan,
    Clamp,
    Decision,
    McpServerPlan,
    McpToolPin,
    Stage,
    StageTool,
    ToolEntry,
)
from charter.runtime.results import ToolResult, refusal
from charter.runtime.session import PreparedAgent, PreparedStage, SchemaCheck

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

    from charter.runtime.approval import ApprovalProvider
    from charter.runtime.audit import AuditLog
    from charter.runtime.session import Session

__all__ = [
    "McpBinding",
    "McpRuntime",
    "connect_key",
    "overlay",
    "run_host",
]

HostFor = Callable[[AgentPlan], McpHost]

# How often a waiting call looks at the run's cancel event.
_CANCEL_POLL_S = 0.1
# The clamp an unreviewed tool's allow receives.
_UNPINNED_RULE = "mcp-unpinned-ask"


def connect_key(server: str) -> str:
    """The name ``--allow`` takes to lift a liftable connect ask."""
    return f"mcp.connect:{server}"


def run_host(
    agent: AgentPlan,
    *,
    workspace: Path,
    run_dir: Path,
    environ: Mapping[str, str],
    project_root: Path | None = None,
) -> McpHost:
    """Where ``charter run`` starts an agent's servers. A manifest's ``cwd``
    is relative to the agent's directory in the compiled project (the
    workspace when the run started from a plan file) and must resolve inside
    the workspace; HOME and the stderr log are in the run's own directory."""
    from charter.runtime.net.urlpolicy import UrlPolicy

    home = run_dir / "mcp-home"
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    base = project_root if project_root is not None else workspace
    return McpHost(
        agent_dir=base / agent.root if agent.root not in ("", ".") else base,
        workspace=workspace,
        home=home,
        log_dir=run_dir / "logs",
        environ=environ,
        url_policy=UrlPolicy(allow_local_network=agent.allow_local_network),
    )


# --------------------------------------------------------------------------- the overlay


def _at_least_ask(decision: Decision) -> Decision:
    if decision.permission != "allow":
        return decision
    clamp = Clamp(
        rule=_UNPINNED_RULE,
        before="allow",
        after="ask",
        reason="the MCP server is not locked, so nobody reviewed this tool",
    )
    return Decision(
        permission="ask",
        liftable=True,
        scopes=decision.scopes,
        clamps=(*decision.clamps, clamp),
    )


def _unavailable_reasons(agent: AgentPlan, reports: Iterable[ServerReport]) -> dict[str, str]:
    """Why each of the plan's MCP tools is not offered, by plan name."""
    by_server = {r.server: r for r in reports}
    out: dict[str, str] = {}
    for entry in agent.tools:
        pin = entry.mcp
        if entry.source != "mcp" or pin is None:
            continue
        report = by_server.get(pin.server)
        if report is None:
            why = f"MCP server '{pin.server}' was not connected"
        elif report.status != "ok":
            why = f"MCP server '{pin.server}' is not connected ({report.status}: {report.message})"
        elif any(t.name == entry.name for t in report.offered):
            continue
        else:
            change = next((c for c in report.changed if c.name == pin.tool), None)
            if change is not None:
                why = (
                    f"MCP server '{pin.server}' changed this tool since it was locked "
                    f"({', '.join(change.what)}); it is offered again once it is re-locked "
                    "after review"
                )
            elif entry.name in report.collisions:
                why = "its name collides with another tool of this agent"
            elif pin.tool in report.filtered_out:
                why = f"the manifest's tools filters exclude it on server '{pin.server}'"
            elif report.pinned:
                why = f"MCP server '{pin.server}' no longer lists '{pin.tool}'"
            else:
                why = f"MCP server '{pin.server}' does not list '{pin.tool}'"
        out[entry.name] = why
    return out


def _dynamic(raw: str, planned: Mapping[str, ToolEntry], prefixes: tuple[str, ...]) -> bool:
    """A stage name the compiler let through for an unlocked server: no plan
    entry, and the safe-name prefix of one of the agent's servers."""
    return raw not in planned and raw.startswith(prefixes)


def overlay(prepared: PreparedAgent, reports: Iterable[ServerReport]) -> PreparedAgent:
    """The prepared agent as the connected servers leave it (see the module
    docstring). Pure: the same reports always give the same agent."""
    reports = list(reports)
    agent = prepared.agent
    offered: dict[str, DiscoveredTool] = {
        t.name: t for r in reports if r.status == "ok" for t in r.offered
    }
    servers = {s.server: s for s in agent.mcp_servers}
    planned = dict(prepared.tools)
    unavailable = _unavailable_reasons(agent, reports)
    tools: dict[str, ToolEntry] = {}
    checks: dict[str, SchemaCheck] = {}
    for name, entry in planned.items():
        if entry.source != "mcp":
            tools[name] = entry
            checks[name] = prepared.checks[name]
            continue
        found = offered.get(name)
        if found is None:
            continue
        if found.pinned:
            tools[name] = entry
            checks[name] = prepared.checks[name]
        else:
            # Planned without a pin: what the server said is all there is.
            tools[name], checks[name] = _entry(found, servers[found.server], base=entry)

    dynamic = {n: t for n, t in offered.items() if n not in planned}
    prefixes = tuple(mcp_safe_name(s.server, "x")[:-1] for s in agent.mcp_servers)

    def expand(
        names: tuple[str, ...], decisions: Mapping[str, Decision], out: dict[str, Decision]
    ) -> list[str]:
        kept: list[str] = []
        for raw in names:
            entry = planned.get(raw)
            if entry is not None and entry.source == "mcp":
                if raw in tools:
                    kept.append(raw)
                    decision = decisions[raw]
                    out[raw] = decision if offered[raw].pinned else _at_least_ask(decision)
                continue
            if not _dynamic(raw, planned, prefixes):
                kept.append(raw)
                if raw in decisions:
                    out[raw] = decisions[raw]
                continue
            if "*" in raw:
                matches = sorted(n for n in dynamic if pattern_matches(raw, n))
            else:
                matches = [raw] if raw in dynamic else []
                if not matches:
                    unavailable.setdefault(raw, "no connected MCP server offers it")
            for name in matches:
                kept.append(name)
                # A name the stage also lists exactly keeps its own decision.
                out[name] = _at_least_ask(decisions.get(name, decisions[raw]))
                if name not in tools:
                    tools[name], checks[name] = _entry(dynamic[name], servers[dynamic[name].server])
        return list(dict.fromkeys(kept))

    stages: dict[str, PreparedStage] = {}
    plan_stages: list[Stage] = []
    for sname, ps in prepared.stages.items():
        decisions: dict[str, Decision] = {}
        attended = expand(ps.stage.attended, ps.decisions, decisions)
        unattended = expand(ps.stage.unattended, ps.decisions, decisions)
        required = tuple(n for n in ps.stage.required_tools if n in decisions)
        stage = ps.stage.model_copy(
            update={
                "attended": tuple(attended),
                "unattended": tuple(unattended),
                "required_tools": required,
                "tools": tuple(StageTool(name=n, decision=d) for n, d in decisions.items()),
            }
        )
        plan_stages.append(stage)
        stages[sname] = PreparedStage(
            stage=stage,
            attended=frozenset(attended),
            unattended=frozenset(unattended),
            decisions=MappingProxyType(decisions),
        )
    used = {n for s in plan_stages for n in s.attended}
    tools = {n: e for n, e in tools.items() if e.source != "mcp" or n in used}
    new_agent = agent.model_copy(
        update={"tools": tuple(tools[n] for n in sorted(tools)), "stages": tuple(plan_stages)}
    )
    return replace(
        prepared,
        agent=new_agent,
        tools=MappingProxyType(tools),
        checks=MappingProxyType({n: c for n, c in checks.items() if n in tools}),
        stages=MappingProxyType(stages),
        provenance_cache={},
        unavailable=MappingProxyType(unavailable),
    )


def _entry(
    tool: DiscoveredTool, server: McpServerPlan, base: ToolEntry | None = None
) -> tuple[ToolEntry, SchemaCheck]:
    """A tool entry for what a server offered without a pin. The schema is
    checked against its meta-schema when built: one that does not compile
    makes every call a refusal, never an unchecked call."""
    try:
        text: str | None = canonical(dict(tool.input_schema))
    except (TypeError, ValueError):
        text = None
    if text is None:
        check = SchemaCheck("null")  # not an object: every call is refused as unusable
    else:
        check = SchemaCheck(text)
    entry = ToolEntry(
        name=tool.name,
        source="mcp",
        impl=server.server,
        description=tool.description,
        input_schema=text if text is not None else "null",
        validation_note="",
        capability=server.call_capability,
        risk=base.risk if base is not None else "medium",
        origin=base.origin if base is not None else server.origin,
        mcp=McpToolPin(server=server.server, tool=tool.tool),
    )
    return entry, check


# --------------------------------------------------------------------------- the runtime


@dataclass(slots=True)
class McpBinding:
    """One agent's connected servers, as the gates see them."""

    runtime: McpRuntime
    agent: str
    pool: McpPool | None
    reports: tuple[ServerReport, ...]
    prepared: PreparedAgent | None = None  # the overlay, built once per agent
    base: PreparedAgent | None = None  # what it was built from

    def call(
        self,
        name: str,
        args: Mapping[str, Any],
        *,
        grants: Iterable[str],
        cancel: threading.Event | None = None,
    ) -> ToolResult:
        """Call the offered tool ``name``; blocks until the server answers,
        the call's timeout passes, or ``cancel`` is set (the run is being
        stopped). Never raises for anything the server does."""
        if self.pool is None:
            return refusal(
                "unavailable", "dispatch", "mcp-server-unavailable", "no MCP server is connected"
            )
        return self.runtime._call(self.pool, name, args, list(grants), cancel)


@dataclass(slots=True)
class McpRuntime:
    """Every MCP connection of one run, on an event loop of their own.

    ``host`` says where an agent's servers run (an :class:`McpHost`, or a
    function of the agent for runs with several). ``targets`` maps server
    names to in-process server objects used instead of launching (tests,
    embedding). Close it (or use it as a context manager) to stop every
    server it started."""

    host: McpHost | HostFor
    targets: Mapping[str, Any] = field(default_factory=dict)
    audit: AuditLog | None = None
    _bindings: dict[str, McpBinding] = field(default_factory=dict)
    _stack: ExitStack | None = None
    _portal: BlockingPortal | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def __enter__(self) -> McpRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_portal(self) -> BlockingPortal:
        if self._closed:
            raise RuntimeError("the MCP runtime is closed")
        if self._portal is None:
            from anyio.from_thread import start_blocking_portal

            stack = ExitStack()
            self._portal = stack.enter_context(start_blocking_portal())
            self._stack = stack
        return self._portal

    def close(self) -> None:
        """Stop every server (each connection's stderr reaches its log)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            stack, self._stack, self._portal = self._stack, None, None
        if stack is not None:
            stack.close()

    def _host(self, agent: AgentPlan) -> McpHost:
        return self.host if isinstance(self.host, McpHost) else self.host(agent)

    # -- connecting --------------------------------------------------------------

    def attach(self, session: Session, provider: ApprovalProvider) -> tuple[ServerReport, ...]:
        """Connect the session's agent's servers (once per agent and runtime;
        later sessions of the same agent share them) and install what they
        offer into ``session``. Returns one report per declared server."""
        prepared = session.agent
        agent = prepared.agent
        if not agent.mcp_servers:
            return ()
        with self._lock:
            binding = self._bindings.get(agent.name)
            if binding is None:
                binding = self._connect(session, provider)
                self._bindings[agent.name] = binding
            if prepared is binding.prepared:
                pass  # this session already sees the servers
            elif binding.prepared is None or binding.base is not prepared:
                binding.base = prepared
                binding.prepared = overlay(prepared, binding.reports)
        session.agent = binding.prepared
        session._stage = None  # the cached stage belongs to the agent just replaced
        session.mcp = binding
        return binding.reports

    def _approver(
        self, session: Session, provider: ApprovalProvider, plan: McpServerPlan
    ) -> Callable[[ConnectPreview], bool]:
        def approve(preview: ConnectPreview) -> bool:
            key = connect_key(plan.server)
            if plan.connect_decision.liftable and session.lifted(key):
                return True
            req = ApprovalRequest(
                request_id=uuid.uuid4().hex,
                agent=session.agent.agent.name,
                stage=session.stage_name,
                tool=key,
                args_preview=str(preview),
                reason=(
                    f"connect to MCP server '{plan.server}' ({plan.connect_decision.explain()}); "
                    "this starts or contacts the server shown"
                ),
                rule="mcp-connect-ask",
                cache_key=None,  # asked once per run and agent anyway
                liftable_by=f"--allow {key}" if plan.connect_decision.liftable else "",
            )
            try:
                return provider.request(req).approved
            except Exception:  # a broken provider is a denial, never a pass
                return False

        return approve

    def _connect(self, session: Session, provider: ApprovalProvider) -> McpBinding:
        prepared = session.agent
        agent = prepared.agent
        grants = prepared.grants
        requests: list[ServerRequest] = []
        refused: list[ServerReport] = []
        for plan in agent.mcp_servers:
            # The grant is checked before anyone is asked: without it the
            # approver never hears of the server.
            try:
                auth = authorize_connect(plan, grants, self._approver(session, provider, plan))
            except ConnectRefused as exc:
                refused.append(ServerReport(plan.server, "refused", exc.rule, exc.message))
                continue
            pins = plan_pins(agent, plan.server)
            if pins is None and plan.locked:
                pins = {}  # locked, but no stage offers a pinned tool: nothing is offered
            names = plan_tool_names(agent, plan.server)
            requests.append(
                ServerRequest(
                    plan, auth, pins=pins, names=names, target=self.targets.get(plan.server)
                )
            )
        pool: McpPool | None = None
        reports: list[ServerReport] = []
        if requests:
            portal = self._ensure_portal()
            assert self._stack is not None
            pool = self._stack.enter_context(
                portal.wrap_async_context_manager(McpPool(self._host(agent)))
            )
            # Every planned name is taken: a discovered tool of an unlocked
            # server may not shadow a built-in, authored or pinned tool
            # (a server's own planned names are exempt inside discover).
            taken = [t.name for t in agent.tools]
            try:
                reports = portal.call(functools.partial(pool.discover, requests, taken=taken))
            except Exception as exc:  # discovery itself broke: no server is offered
                reports = [
                    ServerReport(
                        r.plan.server, "failed", "mcp-list-failed", f"{type(exc).__name__}: {exc}"
                    )
                    for r in requests
                ]
        every = sorted([*refused, *reports], key=lambda r: r.server)
        self._record(agent.name, every)
        return McpBinding(self, agent.name, pool, tuple(every))

    def _record(self, agent: str, reports: Iterable[ServerReport]) -> None:
        if self.audit is None:
            return
        for r in reports:
            self.audit.write(
                "mcp_server",
                agent=agent,
                server=r.server,
                status=r.status,
                rule=r.rule,
                reason=r.message or None,
                pinned=r.pinned,
                offered=[t.name for t in r.offered],
                changed=[{"tool": c.name, "what": list(c.what)} for c in r.changed],
                new=list(r.new),
                missing=list(r.missing),
                collisions=list(r.collisions),
            )

    # -- calling --------------------------------------------------------------------

    def _call(
        self,
        pool: McpPool,
        name: str,
        args: Mapping[str, Any],
        grants: list[str],
        cancel: threading.Event | None,
    ) -> ToolResult:
        portal = self._portal
        if portal is None or self._closed:
            return refusal(
                "unavailable",
                "dispatch",
                "mcp-server-unavailable",
                "the MCP connections of this run are closed",
            )
        try:
            future = portal.start_task_soon(
                functools.partial(pool.call, name, dict(args), grants=grants)
            )
        except Exception as exc:  # the portal is gone: still a result
            return ToolResult(
                "error",
                f"[error] the MCP call to '{name}' failed: {type(exc).__name__}",
                rule="mcp-call-failed",
            )
        while True:
            try:
                result: ToolResult = future.result(timeout=_CANCEL_POLL_S)
                return result
            except TimeoutError:
                if cancel is not None and cancel.is_set():
                    # Cancelling the future cancels the task on the loop; the
                    # server hears of it through the SDK's cancellation.
                    future.cancel()
                    return ToolResult(
                        "error",
                        f"[error] the call to '{name}' was stopped: the run is ending",
                        rule="mcp-call-cancelled",
                    )
            except CancelledError:
                return ToolResult(
                    "error",
                    f"[error] the call to '{name}' was cancelled",
                    rule="mcp-call-cancelled",
                )
            except Exception as exc:  # the connection loop itself failed: still a result
                return ToolResult(
                    "error",
                    f"[error] the MCP call to '{name}' failed: {type(exc).__name__}",
                    rule="mcp-call-failed",
                )
