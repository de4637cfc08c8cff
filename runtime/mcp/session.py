"""MCP servers inside a session: connect, offer what was found, dispatch calls.

The gates are synchronous and run wherever their caller is (a worker thread of
``charter run``, a test, the hook), while the MCP SDK needs an event loop that
outlives single calls. :class:`McpRuntime` therefore keeps its connections on
an event loop of its own (an anyio blocking portal in a private thread), and
offers a blocking API: :meth:`McpRuntime.attach` connects an agent's servers
and installs what they offer into a :class:`~charter.runtime.policy.session.Session`;
the gates' dispatch step calls :meth:`McpBinding.call`.

``attach`` is meant to run at the start of every turn. Healthy connections
are kept; a refused connect is decided (asked) again; a failed discovery is
retried only after :data:`NEGATIVE_CACHE_SECONDS`; a changed declaration
closes its connection and needs a new approval, and a server no longer
declared is closed. Every pool of a run shares one limiter, so at most
:data:`~charter.runtime.mcp.client.DISCOVERY_CONCURRENCY` servers are started
or listed at once in the whole run.

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
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import CancelledError
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import anyio

from charter.runtime.mcp.client import (
    DISCOVERY_CONCURRENCY,
    ConnectAuthorization,
    ConnectRefused,
    DiscoveredTool,
    McpHost,
    McpPool,
    Recorder,
    ServerReport,
    ServerRequest,
    authorize_connect,
    plan_pins,
    plan_tool_names,
)
from charter.runtime.mcp.filters import pattern_matches
from charter.runtime.mcp.launch import ConnectPreview
from charter.runtime.mcp.lock import canonical
from charter.runtime.mcp.naming import mcp_safe_name
from charter.runtime.net.urlpolicy import UrlPolicy
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
from charter.runtime.plan.prepared import PreparedAgent, PreparedStage
from charter.runtime.policy.approval import ApprovalRequest
from charter.runtime.policy.arguments import SchemaCheck
from charter.runtime.policy.capabilities import is_granted
from charter.runtime.results import ToolResult, refusal

if TYPE_CHECKING:
    from anyio import CapacityLimiter
    from anyio.from_thread import BlockingPortal

    from charter.runtime.audit import AuditLog
    from charter.runtime.policy.approval import ApprovalProvider
    from charter.runtime.policy.session import Session

__all__ = [
    "NEGATIVE_CACHE_SECONDS",
    "McpBinding",
    "McpRuntime",
    "connect_key",
    "overlay",
    "run_host",
]

HostFor = Callable[[AgentPlan], McpHost]

# How often a waiting call looks at the run's cancel event.
_CANCEL_POLL_S = 0.1
# How long a failed or timed-out discovery is remembered before that server
# is tried again.
NEGATIVE_CACHE_SECONDS = 30.0
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
    contain: Any = None,
) -> McpHost:
    """Where ``charter run`` starts an agent's servers. A manifest's ``cwd``
    is relative to the agent's directory in the compiled project (the
    workspace when the run started from a plan file) and must resolve inside
    the workspace, or inside that agent directory when the run compiled it;
    HOME and the stderr log are in the run's own directory."""
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
        agent_dir_trusted=project_root is not None,
        contain=contain,
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
class _ServerState:
    """What the runtime knows about one declared server of one agent."""

    key: tuple[Any, ...]  # the declaration it was decided for (see _declaration_key)
    report: ServerReport
    authorization: ConnectAuthorization | None  # None: refused
    failed_at: float | None = None  # the clock when discovery failed or timed out


@dataclass(slots=True)
class McpBinding:
    """One agent's connected servers, as the gates see them."""

    runtime: McpRuntime
    agent: str
    pool: McpPool | None
    reports: tuple[ServerReport, ...]
    prepared: PreparedAgent | None = None  # the overlay, rebuilt when reports change
    base: PreparedAgent | None = None  # what it was built from
    # The servers whose outcome the latest attach decided (connected, refused,
    # failed, retried); the others kept what they had.
    decided: tuple[ServerReport, ...] = ()
    servers: dict[str, _ServerState] = field(default_factory=dict)
    version: int = 0  # bumped whenever ``reports`` changes
    built: int = -1  # the version ``prepared`` was built from
    lock: threading.Lock = field(default_factory=threading.Lock)

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


def _declaration_key(
    agent: AgentPlan, plan: McpServerPlan, grants: frozenset[str]
) -> tuple[Any, ...]:
    """Everything a connection was made for: the server's declaration, the
    pins and names the plan gives its tools, and whether connecting is
    granted. Any difference closes the connection and asks again."""
    pins = plan_pins(agent, plan.server)
    return (
        plan,
        None if pins is None else tuple(sorted(pins.items())),
        tuple(sorted(plan_tool_names(agent, plan.server).items())),
        is_granted(plan.connect_capability, grants),
    )


def _new_limiter() -> CapacityLimiter:
    return anyio.CapacityLimiter(DISCOVERY_CONCURRENCY)


@dataclass(slots=True)
class McpRuntime:
    """Every MCP connection of one run, on an event loop of their own.

    ``host`` says where an agent's servers run (an :class:`McpHost`, or a
    function of the agent for runs with several). ``targets`` maps server
    names to in-process server objects used instead of launching (tests,
    embedding). ``clock`` (seconds, monotonic) times the negative cache of
    failed discoveries. Close it (or use it as a context manager) to stop
    every server it started."""

    host: McpHost | HostFor
    targets: Mapping[str, Any] = field(default_factory=dict)
    audit: AuditLog | None = None
    clock: Callable[[], float] = time.monotonic
    _bindings: dict[str, McpBinding] = field(default_factory=dict)
    _stack: ExitStack | None = None
    _portal: BlockingPortal | None = None
    _limiter: CapacityLimiter | None = None  # one for every pool of the run
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def __enter__(self) -> McpRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_portal(self) -> BlockingPortal:
        with self._lock:
            if self._closed:
                raise RuntimeError("the MCP runtime is closed")
            if self._portal is None:
                from anyio.from_thread import start_blocking_portal

                stack = ExitStack()
                self._portal = stack.enter_context(start_blocking_portal())
                self._stack = stack
                # Made on the loop it serves; shared by every agent's pool.
                self._limiter = self._portal.call(_new_limiter)
            return self._portal

    def _new_pool(self, portal: BlockingPortal, agent: AgentPlan) -> McpPool:
        pool = McpPool(self._host(agent), limiter=self._limiter, record=self._recorder(agent.name))
        with self._lock:
            if self._stack is None:
                raise RuntimeError("the MCP runtime is closed")
            entered: McpPool = self._stack.enter_context(portal.wrap_async_context_manager(pool))
        return entered

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
        """Bring the session's agent's servers up to date and install what
        they offer into ``session``; returns one report per declared server.

        Connections belong to the runtime and the agent, so later sessions of
        the same agent share them. Calling it again (at the start of each
        turn) is cheap when nothing is due, and otherwise:

        * a server whose connect was refused is decided again: a refused
          approval is asked again, per server;
        * a server whose discovery failed or timed out is retried once
          :data:`NEGATIVE_CACHE_SECONDS` have passed, and only that server;
          healthy connections are kept as they are;
        * a server whose declaration changed is closed, and connecting to the
          new one needs a fresh approval; a server no longer declared is
          closed, so removing every declaration closes every connection.
        """
        base = session.prepared.agents.get(session.agent.agent.name, session.agent)
        agent = base.agent
        with self._lock:
            binding = self._bindings.get(agent.name)
            if binding is None:
                if not agent.mcp_servers:
                    return ()
                binding = McpBinding(self, agent.name, None, ())
                self._bindings[agent.name] = binding
        with binding.lock:
            self._refresh(binding, session, base, provider)
            if (
                binding.prepared is None
                or binding.base is not base
                or binding.built != binding.version
            ):
                binding.base = base
                binding.prepared = overlay(base, binding.reports)
                binding.built = binding.version
            prepared = binding.prepared
            reports = binding.reports
        session.agent = prepared
        session._stage = None  # the cached stage belongs to the agent just replaced
        session.mcp = binding
        return reports

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
                # Never answered from a cache: a yes covers the connection it
                # was asked for, and a no is asked again on the next turn.
                cache_key=None,
                liftable_by=f"--allow {key}" if plan.connect_decision.liftable else "",
            )
            try:
                return provider.request(req).approved
            except Exception:  # a broken provider is a denial, never a pass
                return False

        return approve

    def _close_stale(
        self, binding: McpBinding, agent: AgentPlan, keys: Mapping[str, tuple[Any, ...]]
    ) -> bool:
        """Forget every server whose declaration changed or went away, closing
        its connection if it has one. True when any was forgotten."""
        stale = sorted(s for s, st in binding.servers.items() if keys.get(s) != st.key)
        for server in stale:
            del binding.servers[server]
            portal = self._portal
            if binding.pool is None or portal is None:
                continue  # nothing was ever started
            try:
                closed = portal.call(binding.pool.close_server, server)
            except Exception:  # the loop is gone, and the connection with it
                closed = False
            if closed and self.audit is not None:
                why = "its declaration changed" if server in keys else "it is no longer declared"
                self.audit.write(
                    "mcp_server", agent=agent.name, server=server, status="closed", reason=why
                )
        return bool(stale)

    def _refresh(
        self,
        binding: McpBinding,
        session: Session,
        base: PreparedAgent,
        provider: ApprovalProvider,
    ) -> None:
        """Decide what is due for each declared server (see :meth:`attach`)."""
        agent, grants = base.agent, base.grants
        keys = {p.server: _declaration_key(agent, p, grants) for p in agent.mcp_servers}
        changed = self._close_stale(binding, agent, keys)
        now = self.clock()
        requests: list[ServerRequest] = []
        decided: list[ServerReport] = []
        authorizations: dict[str, ConnectAuthorization] = {}
        for plan in agent.mcp_servers:
            state = binding.servers.get(plan.server)
            auth: ConnectAuthorization | None = None
            if state is not None:
                status = state.report.status
                if status == "ok":
                    continue  # healthy: kept as it is
                if status in ("failed", "timeout"):
                    assert state.failed_at is not None
                    if now - state.failed_at < NEGATIVE_CACHE_SECONDS:
                        continue  # failed recently: not retried yet
                    # The same declaration was approved: retrying asks nobody.
                    auth = state.authorization
            if auth is None:
                # The grant is checked before anyone is asked: without it the
                # approver never hears of the server.
                try:
                    auth = authorize_connect(plan, grants, self._approver(session, provider, plan))
                except ConnectRefused as exc:
                    report = ServerReport(plan.server, "refused", exc.rule, exc.message)
                    binding.servers[plan.server] = _ServerState(keys[plan.server], report, None)
                    decided.append(report)
                    continue
            authorizations[plan.server] = auth
            pins = plan_pins(agent, plan.server)
            if pins is None and plan.locked:
                pins = {}  # locked, but no stage offers a pinned tool: nothing is offered
            requests.append(
                ServerRequest(
                    plan,
                    auth,
                    pins=pins,
                    names=plan_tool_names(agent, plan.server),
                    target=self.targets.get(plan.server),
                )
            )
        if requests:
            decided.extend(self._discover(binding, agent, requests))
            failed_at = self.clock()
            for report in decided:
                if report.server in authorizations:
                    binding.servers[report.server] = _ServerState(
                        keys[report.server],
                        report,
                        authorizations[report.server],
                        failed_at if report.status in ("failed", "timeout") else None,
                    )
        binding.decided = tuple(sorted(decided, key=lambda r: r.server))
        if decided or changed:
            binding.reports = tuple(
                binding.servers[s].report for s in sorted(binding.servers) if s in keys
            )
            binding.version += 1
        self._record(agent.name, binding.decided)

    def _discover(
        self, binding: McpBinding, agent: AgentPlan, requests: list[ServerRequest]
    ) -> list[ServerReport]:
        portal = self._ensure_portal()
        if binding.pool is None:
            binding.pool = self._new_pool(portal, agent)
        pool = binding.pool
        # Every planned name is taken, and so is every name a kept server
        # offers: a discovered tool of an unlocked server may not shadow a
        # built-in, authored, pinned or already offered tool (a server's own
        # planned names are exempt inside discover).
        retried = {r.plan.server for r in requests}
        taken = [t.name for t in agent.tools] + [
            name
            for server, conn in pool.connections.items()
            if server not in retried
            for name in conn.offered
        ]
        try:
            reports: list[ServerReport] = portal.call(
                functools.partial(pool.discover, requests, taken=taken)
            )
        except Exception as exc:  # discovery itself broke: no server is offered
            # Only the type: nothing here knows which values the text may hold.
            return [
                ServerReport(
                    r.plan.server,
                    "failed",
                    "mcp-list-failed",
                    f"discovery broke ({type(exc).__name__})",
                )
                for r in requests
            ]
        return reports

    def _recorder(self, agent: str) -> Recorder | None:
        """Where a pool's events go: the audit log, marked with the agent."""
        audit = self.audit
        if audit is None:
            return None

        def record(event: str, fields: dict[str, Any]) -> None:
            audit.write(event, agent=agent, **fields)

        return record

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
                reason=(r.message + r.operator_detail) or None,
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
