"""Connecting to MCP servers, discovering their tools, and calling them.

The order of events for one server is fixed and each step fails closed:

1. :func:`authorize_connect`: the agent must hold ``mcp.connect:<server>``
   and the connect decision must allow it (an ``ask`` goes to the approver
   with a :class:`~charter.runtime.mcp.launch.ConnectPreview`, which never
   shows a secret). Nothing is read from the environment before this.
2. :class:`McpPool` resolves the launch (``${VAR}`` expansion, the child's
   allowlisted environment, ``cwd`` inside the workspace, the URL policy for
   HTTP servers), starts the server, and lists its tools, the whole of it
   bounded by ``connect_timeout_seconds``. A server that times out or fails
   is closed and reported; the others carry on.
3. The listing is filtered (``tools.include``/``exclude``) and compared with
   the plan's pins: on a pinned server only tools listed exactly as reviewed
   are offered; a changed or new tool is reported, never offered. On a
   server without pins every filtered tool is offered with the default
   permission ``ask``, and a name that collides with another tool is refused.
4. Each call needs the server's call capability and is bounded by
   ``timeout_seconds``; a server that fails or dies mid-call yields an error
   result, not an exception.

Errors and stderr pass through a redactor that knows every expanded value
(and the values of a call's credential-looking arguments).
Streamable HTTP goes through the pinned httpx2 client of
:mod:`charter.runtime.net.transport`, so every request and redirect is judged
by the URL policy and the connection is pinned to a validated address; each
of those decisions is handed to the pool's ``record`` callback as an
``mcp_url_decision`` event (origin, host, verdict; never a path, query,
userinfo or header).

At most :data:`DISCOVERY_CONCURRENCY` servers are started and listed at once
per limiter; :class:`~charter.runtime.mcp.session.McpRuntime` gives every pool
of a run the same limiter, so the bound holds for the whole run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from charter.runtime.errors import CharterError
from charter.runtime.mcp.filters import select_tools
from charter.runtime.mcp.launch import (
    ConnectPreview,
    Launch,
    LaunchError,
    preview,
    resolve_launch,
)
from charter.runtime.mcp.lock import Change, ListedTool, compare
from charter.runtime.mcp.naming import mcp_safe_names
from charter.runtime.mcp.stderr import StderrCapture
from charter.runtime.net.urlpolicy import UrlPolicy, audit_origin
from charter.runtime.plan import AgentPlan, McpServerPlan, McpToolPin
from charter.runtime.policy.capabilities import is_granted
from charter.runtime.redact import Redactor
from charter.runtime.results import ToolResult, refusal

if TYPE_CHECKING:
    from mcp import Client

    from charter.runtime.net.resolve import Resolver

__all__ = [
    "DISCOVERY_CONCURRENCY",
    "MAX_RESULT_CHARS",
    "ConnectAuthorization",
    "ConnectRefused",
    "DiscoveredTool",
    "McpConnection",
    "McpHost",
    "McpPool",
    "Recorder",
    "ServerReport",
    "ServerRequest",
    "authorize_connect",
    "plan_pins",
    "plan_tool_names",
    "requests_for",
    "to_listed",
]

Approver = Callable[[ConnectPreview], bool]
ConnectStatus = Literal["ok", "refused", "failed", "timeout"]
# Receives an event name and its fields (already free of secrets).
Recorder = Callable[[str, dict[str, Any]], None]

# What one call may hand the model; the rest is cut with a note.
MAX_RESULT_CHARS = 100_000
# At most this many tools/list pages: a server that pages forever is broken.
_MAX_PAGES = 100
# Servers being started or listed at the same time, per limiter (one per run).
DISCOVERY_CONCURRENCY = 4


class ConnectRefused(CharterError):
    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


@dataclass(frozen=True, slots=True)
class ConnectAuthorization:
    """Proof that connecting to ``server`` was allowed; only
    :func:`authorize_connect` makes one in normal use."""

    server: str
    by: Literal["policy", "approval"]


def authorize_connect(
    plan: McpServerPlan, grants: Iterable[str], approve: Approver | None
) -> ConnectAuthorization:
    """Check the connect capability and decision; ask the approver when the
    decision is ``ask``. Raises :class:`ConnectRefused`."""
    if not is_granted(plan.connect_capability, grants):
        raise ConnectRefused(
            "capability-not-granted",
            f"connecting to MCP server '{plan.server}' needs '{plan.connect_capability}', "
            "which is not granted",
        )
    permission = plan.connect_decision.permission
    if permission == "deny":
        raise ConnectRefused(
            "mcp-connect-denied", f"connecting to MCP server '{plan.server}' is denied"
        )
    if permission == "ask":
        if approve is None or not approve(preview(plan)):
            raise ConnectRefused(
                "mcp-connect-not-approved",
                f"connecting to MCP server '{plan.server}' was not approved",
            )
        return ConnectAuthorization(plan.server, "approval")
    return ConnectAuthorization(plan.server, "policy")


@dataclass(frozen=True, slots=True)
class McpHost:
    """Where servers run and what they may reach."""

    agent_dir: Path  # manifest cwd values are relative to it
    workspace: Path  # cwd must resolve inside it ...
    home: Path  # HOME of stdio children (a runtime-owned directory)
    log_dir: Path  # mcp-stderr.log goes here (0700 dir, 0600 file)
    environ: Mapping[str, str]  # the allowlist and ${VAR} values are read from here
    url_policy: UrlPolicy = field(default_factory=UrlPolicy)
    resolver: Resolver | None = None  # None: the system resolver
    # ... or inside agent_dir, when the run compiled it (see resolve_cwd).
    agent_dir_trusted: bool = False
    # Rewrites a stdio server's launch to start it inside the agent's sandbox
    # (charter run with a sandbox in force); None starts it as declared.
    contain: Callable[[Launch], Launch] | None = None


@dataclass(frozen=True, slots=True)
class DiscoveredTool:
    server: str
    tool: str  # the server's own name
    name: str  # the model-visible name
    description: str
    input_schema: Mapping[str, Any]
    pinned: bool  # listed exactly as the lock recorded it
    # The permission to use when no stage decision exists for the name:
    # tools of servers without pins are asked about.
    default_permission: Literal["ask"] | None


@dataclass(frozen=True, slots=True)
class ServerReport:
    server: str
    status: ConnectStatus
    rule: str | None = None
    message: str = ""
    pinned: bool = False
    offered: tuple[DiscoveredTool, ...] = ()
    changed: tuple[Change, ...] = ()  # pinned but different now: not offered
    new: tuple[str, ...] = ()  # listed but not pinned: not offered
    missing: tuple[str, ...] = ()  # pinned but not listed
    collisions: tuple[str, ...] = ()  # refused because the name is taken
    filtered_out: tuple[str, ...] = ()
    # For the operator only (console and audit, never the model): what a
    # server that failed to start wrote to stderr, and where its log is.
    operator_detail: str = ""

    def lines(self) -> list[str]:
        """Human-readable findings, one a line (for the operator)."""
        out: list[str] = []
        if self.status != "ok":
            out.append(f"{self.server}: {self.status}: {self.message}{self.operator_detail}")
        for c in self.changed:
            out.append(
                f"{self.server}: tool '{c.name}' changed since it was locked "
                f"({', '.join(c.what)}); not offered until re-locked after review"
            )
        for n in self.new:
            out.append(f"{self.server}: tool '{n}' is not pinned by this plan; not offered")
        for n in self.missing:
            out.append(f"{self.server}: pinned tool '{n}' is no longer listed")
        for n in self.collisions:
            out.append(f"{self.server}: '{n}' collides with another tool's name; not offered")
        return out


def to_listed(tool: Any) -> ListedTool:
    """The parts of an SDK ``Tool`` that are pinned."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    return ListedTool(str(tool.name), tool.description or "", schema)


def plan_pins(agent: AgentPlan, server: str) -> dict[str, McpToolPin] | None:
    """The plan's pins for one server, keyed by the server's tool name; None
    when the plan pins none of its tools (the server was not locked)."""
    pins = {pin.tool: pin for s in agent.mcp_servers if s.server == server for pin in s.pins}
    pins.update(
        {
            t.mcp.tool: t.mcp
            for t in agent.tools
            if t.mcp is not None
            and t.mcp.server == server
            and t.mcp.description_sha256 is not None
            and t.mcp.schema_sha256 is not None
        }
    )
    return pins or None


def plan_tool_names(agent: AgentPlan, server: str) -> dict[str, str]:
    """The names the plan gives one server's tools, keyed by the server's own
    tool name, so a listed tool is offered under its planned name."""
    return {t.mcp.tool: t.name for t in agent.tools if t.mcp is not None and t.mcp.server == server}


def _connection_closed(exc: BaseException) -> bool:
    """Whether ``exc`` (or what a task group wrapped it in) says the
    transport is gone."""
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, BaseExceptionGroup):
        return any(_connection_closed(e) for e in exc.exceptions)
    return getattr(exc, "code", None) == CONNECTION_CLOSED


def _stderr_detail(conn: McpConnection) -> str:
    """What a server that failed to start wrote, and where the rest is: a
    person at the console should not have to open the log to learn why."""
    detail = ""
    if conn.stderr_tail:
        detail += f"; the server wrote: {conn.stderr_tail}"
    if conn.stderr_log is not None:
        detail += f" (its stderr is in {conn.stderr_log})"
    return detail


def _describe(exc: BaseException) -> str:
    """One line for an exception, unwrapping task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class McpConnection:
    """One live server. Runs in its own task of the pool's task group, so the
    SDK's internal tasks are entered and left by the same task."""

    def __init__(
        self,
        plan: McpServerPlan,
        launch: Launch | None,
        target: Any,
        host: McpHost,
        record: Recorder | None = None,
    ):
        self.plan = plan
        self.server = plan.server
        self._launch = launch
        self._target = target  # an in-process server object, or None to launch
        self._host = host
        self._record = record
        self.redactor = launch.redactor if launch is not None else Redactor()
        self._client: Client | None = None
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._stderr: StderrCapture | None = None
        self.error: str | None = None
        self._lost = False  # the server closed the connection under a call
        self.stderr_log: Path | None = None
        self.stderr_tail = ""  # the last lines the server wrote to stderr, redacted
        self.offered: dict[str, DiscoveredTool] = {}  # model-visible name -> tool

    @property
    def alive(self) -> bool:
        return self._client is not None and not self._done.is_set() and not self._lost

    def _redact(self, text: str) -> str:
        return self.redactor.redact(text, "model")

    def _url_decision(self, event: dict[str, Any]) -> None:
        """Record one URL decision of this server's HTTP client. The event
        holds no path, query or userinfo; the redactor still runs over it,
        because an expanded ``${VAR}`` could sit in the host name."""
        if self._record is not None:
            fields = {"server": self.server, **event}
            self._record(
                "mcp_url_decision",
                cast(dict[str, Any], self.redactor.redact_value(fields, "event")),
            )

    async def _transport(self, stack: AsyncExitStack) -> Any:
        if self._target is not None:
            return self._target
        launch = self._launch
        assert launch is not None
        if launch.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            self._stderr = StderrCapture(self.server)
            params = StdioServerParameters(
                command=launch.command or "",
                args=list(launch.args),
                env=dict(launch.env),
                cwd=launch.cwd,
            )
            return stdio_client(params, errlog=self._stderr.writer)
        from mcp.client.streamable_http import streamable_http_client

        from charter.runtime.net.transport import mcp_http_client_factory

        factory = mcp_http_client_factory(
            self._host.url_policy, resolver=self._host.resolver, on_decision=self._url_decision
        )
        http = await stack.enter_async_context(factory(headers=dict(launch.headers)))
        return streamable_http_client(launch.url or "", http_client=http)

    async def run(self) -> None:
        from mcp import Client

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                try:
                    async with AsyncExitStack() as stack:
                        transport = await self._transport(stack)
                        # No response cache: a cached listing would hide a
                        # tool that changed since the last one.
                        client = Client(transport, cache=None)
                        await stack.enter_async_context(client)
                        if self._stderr is not None:
                            self._stderr.release_writer()
                        self._client = client
                        self._settled.set()
                        await self._stop.wait()
                except Exception as exc:
                    self.error = self._redact(_describe(exc))
        finally:
            self._client = None
            self._settled.set()
            try:
                if self._stderr is not None:
                    capture, log_dir, redactor = self._stderr, self._host.log_dir, self.redactor
                    with anyio.CancelScope(shield=True):
                        self.stderr_log = await anyio.to_thread.run_sync(
                            capture.flush_to, log_dir, redactor
                        )
                    self.stderr_tail = capture.last_lines(redactor)
            finally:
                # After the log is written, so that a failed start can say
                # what the server printed and where the rest is.
                self._done.set()

    async def wait_started(self) -> None:
        await self._settled.wait()
        if self._client is None:
            raise ConnectRefused("mcp-connect-failed", self.error or "the server closed")

    async def list_tools(self) -> list[ListedTool]:
        client = self._client
        if client is None:
            raise ConnectRefused("mcp-connect-failed", self.error or "the server closed")
        tools: list[ListedTool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools.extend(to_listed(t) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise ConnectRefused("mcp-list-failed", f"more than {_MAX_PAGES} pages of tools")

    async def aclose(self) -> None:
        self._stop.set()
        if self._scope is not None and self._client is None:
            self._scope.cancel()  # still starting: abandon the handshake
        with anyio.move_on_after(10) as late:
            await self._done.wait()
        if late.cancelled_caught and self._scope is not None:
            self._scope.cancel()
            await self._done.wait()

    def kill(self) -> None:
        """Abandon the connection now (timeouts); :meth:`aclose` still waits."""
        self._stop.set()
        if self._scope is not None:
            self._scope.cancel()

    async def call_tool(
        self, name: str, args: Mapping[str, Any], *, grants: Iterable[str]
    ) -> ToolResult:
        """Call the offered tool ``name`` (its model-visible name)."""
        tool = self.offered.get(name)
        if tool is None:
            return refusal(
                "unavailable",
                "visibility",
                "mcp-tool-not-offered",
                f"'{name}' is not a tool MCP server '{self.server}' offers",
            )
        if not is_granted(self.plan.call_capability, grants):
            return refusal(
                "denied",
                "capability",
                "capability-not-granted",
                f"calling '{name}' needs '{self.plan.call_capability}', which is not granted",
            )
        # A credential the model passes (a field named like one) is known from
        # now on, so an error or result that echoes it is redacted too.
        self.redactor.discover_value(dict(args))
        client = self._client
        if client is None or self._done.is_set() or self._lost:
            return refusal(
                "unavailable",
                "dispatch",
                "mcp-server-unavailable",
                f"MCP server '{self.server}' is not connected"
                + (f" ({self.error})" if self.error else ""),
            )
        died = False
        try:
            # The SDK wakes a pending request with CONNECTION_CLOSED when the
            # transport ends, and the deadline covers everything else.
            with anyio.fail_after(self.plan.timeout_seconds):
                result = await client.call_tool(tool.tool, dict(args))
        except TimeoutError:
            return ToolResult(
                "timeout",
                f"[timed out] '{name}' did not answer within {self.plan.timeout_seconds} s",
                rule="mcp-call-timeout",
            )
        except Exception as exc:
            if _connection_closed(exc):
                # The server is gone (crashed or exited): later calls are
                # refused at once, and the connection is wound down so its
                # stderr reaches the log.
                self._lost = True
                self.error = "the server closed the connection"
                self._stop.set()
                died = True
            else:
                return ToolResult(
                    "error",
                    "[error] "
                    + self._redact(f"MCP server '{self.server}' failed: {_describe(exc)}"),
                    rule="mcp-call-failed",
                )
        if died:
            return ToolResult(
                "error",
                "[error] "
                + self._redact(
                    f"MCP server '{self.server}' closed the connection during the call; "
                    "its tools are unavailable until it is connected again"
                ),
                rule="mcp-server-died",
            )
        return self._result(result)

    def _result(self, result: Any) -> ToolResult:
        parts: list[str] = []
        for block in result.content:
            kind = getattr(block, "type", "")
            if kind == "text":
                parts.append(str(block.text))
            elif kind == "resource_link":
                parts.append(f"[resource {getattr(block, 'uri', '')}]")
            else:
                parts.append(f"[{kind or 'unknown'} content]")
        text = "\n".join(parts)
        data: dict[str, Any] = {"server": self.server}
        if not text and result.structured_content is not None:
            try:
                text = json.dumps(result.structured_content, ensure_ascii=False)
            except (TypeError, ValueError):
                text = "[structured content]"
        if len(text) > MAX_RESULT_CHARS:
            data["truncated_from"] = len(text)
            text = text[:MAX_RESULT_CHARS] + "\n[... cut]"
        text = self._redact(text)
        if result.is_error:
            return ToolResult("error", "[error] " + text, rule="mcp-tool-error", data=data)
        return ToolResult("ok", text, data=data)


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """One server to discover."""

    plan: McpServerPlan
    authorization: ConnectAuthorization
    pins: Mapping[str, McpToolPin] | None = None  # None: not locked
    names: Mapping[str, str] = field(default_factory=dict)  # server tool -> plan name
    target: Any = None  # an in-process server instead of launching (tests, embedding)


class McpPool:
    """Owns every connection of a run; leaving it closes them all.

    ``async with McpPool(host) as pool: reports = await pool.discover(...)``
    """

    def __init__(
        self,
        host: McpHost,
        *,
        limiter: anyio.CapacityLimiter | None = None,
        record: Recorder | None = None,
    ) -> None:
        self.host = host
        self.connections: dict[str, McpConnection] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        # Shared between pools when given, so the bound covers all of them.
        self._limit = (
            limiter if limiter is not None else anyio.CapacityLimiter(DISCOVERY_CONCURRENCY)
        )
        self._record = record

    async def __aenter__(self) -> McpPool:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        for conn in list(self.connections.values()):
            conn._stop.set()
        assert self._tg is not None
        return await self._tg.__aexit__(*exc)

    def _launch(self, plan: McpServerPlan) -> Launch:
        launch = resolve_launch(
            plan,
            environ=self.host.environ,
            home=self.host.home,
            agent_dir=self.host.agent_dir,
            workspace=self.host.workspace,
            agent_dir_trusted=self.host.agent_dir_trusted,
        )
        if self.host.contain is not None and launch.transport == "stdio":
            launch = self.host.contain(launch)
        if launch.url is not None:
            decision = self.host.url_policy.check(launch.url)
            if self._record is not None:
                # Imported here: the HTTP stacks load only for HTTP servers.
                from charter.runtime.net.transport import url_decision_event

                event = {"server": plan.server, **url_decision_event("launch", decision)}
                self._record(
                    "mcp_url_decision",
                    cast(dict[str, Any], launch.redactor.redact_value(event, "event")),
                )
            if decision.verdict == "deny":
                raise LaunchError(
                    "mcp-url-refused",
                    launch.redactor.redact(
                        f"the URL policy refuses {audit_origin(decision)}: {decision.reason}",
                        "model",
                    ),
                )
        return launch

    async def _discover_one(self, req: ServerRequest) -> tuple[ServerReport, list[ListedTool]]:
        plan = req.plan
        if req.authorization.server != plan.server:
            return ServerReport(
                plan.server,
                "refused",
                "mcp-connect-not-approved",
                "the authorization is for another server",
            ), []
        try:
            launch = None if req.target is not None else self._launch(plan)
        except LaunchError as exc:
            return ServerReport(plan.server, "failed", exc.rule, exc.message), []
        assert self._tg is not None
        conn = McpConnection(plan, launch, req.target, self.host, self._record)
        async with self._limit:
            self._tg.start_soon(conn.run)
            listed: list[ListedTool] | None = None
            failure: ConnectRefused | None = None
            with anyio.move_on_after(plan.connect_timeout_seconds) as scope:
                try:
                    await conn.wait_started()
                    listed = await conn.list_tools()
                except ConnectRefused as exc:
                    failure = exc
                except Exception as exc:
                    failure = ConnectRefused("mcp-list-failed", conn._redact(_describe(exc)))
        if listed is None:
            conn.kill()
            await conn.aclose()
            if scope.cancelled_caught:
                return ServerReport(
                    plan.server,
                    "timeout",
                    "mcp-connect-timeout",
                    f"no tool list within {plan.connect_timeout_seconds} s; the server was closed",
                ), []
            assert failure is not None
            return ServerReport(
                plan.server,
                "failed",
                failure.rule,
                failure.message,
                operator_detail=_stderr_detail(conn),
            ), []
        self.connections[plan.server] = conn
        return ServerReport(plan.server, "ok", pinned=req.pins is not None), listed

    async def discover(
        self, requests: Sequence[ServerRequest], taken: Iterable[str] = ()
    ) -> list[ServerReport]:
        """Connect to and list every server concurrently; decide what each
        offers. ``taken`` are the agent's other model-visible names."""
        results: dict[str, tuple[ServerReport, list[ListedTool]]] = {}

        async def one(req: ServerRequest) -> None:
            try:
                results[req.plan.server] = await self._discover_one(req)
            except Exception as exc:
                # Something this module did not foresee: that server fails,
                # the others go on. Only the type is shown, since no redactor
                # may know what the text holds.
                results[req.plan.server] = (
                    ServerReport(
                        req.plan.server,
                        "failed",
                        "mcp-list-failed",
                        f"discovery broke ({type(exc).__name__})",
                    ),
                    [],
                )

        async with anyio.create_task_group() as tg:
            for req in requests:
                tg.start_soon(one, req)
        used = {n.lower() for n in taken}
        reports: list[ServerReport] = []
        # Names are settled in server order, so the outcome of a collision
        # never depends on which server answered first.
        for req in sorted(requests, key=lambda r: r.plan.server):
            report, listed = results[req.plan.server]
            if report.status == "ok":
                report = self._offer(req, report, listed, used)
            reports.append(report)
        return reports

    def _offer(
        self, req: ServerRequest, report: ServerReport, listed: list[ListedTool], used: set[str]
    ) -> ServerReport:
        plan, conn = req.plan, self.connections[req.plan.server]
        keep = set(select_tools([t.name for t in listed], plan.include, plan.exclude))
        kept = [t for t in listed if t.name in keep]
        filtered_out = tuple(sorted(t.name for t in listed if t.name not in keep))
        offered: list[DiscoveredTool] = []
        collisions: list[str] = []
        if req.pins is not None:
            cmp = compare(req.pins, kept)
            for t in cmp.offered:
                name = req.names.get(t.name)
                if name is None:
                    continue  # pinned, but no stage of this plan offers it
                offered.append(
                    DiscoveredTool(
                        plan.server, t.name, name, t.description, t.input_schema, True, None
                    )
                )
            changed, new = cmp.changed, cmp.new
            missing = cmp.missing
        else:
            changed, new, missing = (), (), ()
            safe = mcp_safe_names(plan.server, [t.name for t in kept])
            for t in sorted(kept, key=lambda t: t.name):
                planned = req.names.get(t.name)
                name = planned or safe[t.name]
                if planned is None and name.lower() in used:
                    collisions.append(name)
                    continue
                used.add(name.lower())
                offered.append(
                    DiscoveredTool(
                        plan.server,
                        t.name,
                        name,
                        t.description,
                        t.input_schema,
                        False,
                        None if planned else "ask",
                    )
                )
        conn.offered = {t.name: t for t in offered}
        return ServerReport(
            plan.server,
            "ok",
            pinned=req.pins is not None,
            offered=tuple(offered),
            changed=changed,
            new=new,
            missing=missing,
            collisions=tuple(collisions),
            filtered_out=filtered_out,
        )

    async def close_server(self, server: str) -> bool:
        """Close one server's connection (its declaration changed or went
        away); False when it had none. Its stderr reaches the log."""
        conn = self.connections.pop(server, None)
        if conn is None:
            return False
        conn.offered = {}  # nothing is routed to it while it winds down
        await conn.aclose()
        return True

    async def list_only(self, req: ServerRequest) -> tuple[ServerReport, list[ListedTool]]:
        """Connect and list without deciding anything (``charter mcp lock``)."""
        return await self._discover_one(req)

    async def call(
        self, name: str, args: Mapping[str, Any], *, grants: Iterable[str]
    ) -> ToolResult:
        """Route a call by model-visible name to the server offering it."""
        for conn in self.connections.values():
            if name in conn.offered:
                return await conn.call_tool(name, args, grants=grants)
        return refusal(
            "unavailable",
            "visibility",
            "mcp-tool-not-offered",
            f"no connected MCP server offers '{name}'",
        )


def requests_for(
    agent: AgentPlan,
    grants: Iterable[str],
    approve: Approver | None,
    targets: Mapping[str, Any] | None = None,
) -> tuple[list[ServerRequest], list[ServerReport]]:
    """Authorize each of the agent's servers and build its request; a refused
    server becomes a report and is never started."""
    grant_list = list(grants)
    requests: list[ServerRequest] = []
    refused: list[ServerReport] = []
    for plan in agent.mcp_servers:
        try:
            auth = authorize_connect(plan, grant_list, approve)
        except ConnectRefused as exc:
            refused.append(ServerReport(plan.server, "refused", exc.rule, exc.message))
            continue
        requests.append(
            ServerRequest(
                plan,
                auth,
                pins=plan_pins(agent, plan.server),
                names=plan_tool_names(agent, plan.server),
                target=(targets or {}).get(plan.server),
            )
        )
    return requests, refused
