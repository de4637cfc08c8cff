"""What each endpoint of the decision server answers, apart from HTTP.

The hook endpoints answer exactly the bytes ``charter hook claude-code`` and
``charter hook gemini-cli`` print for the same event and plan: the same
adapter decides, with the plan the server holds instead of one read from the
file for the call. Like the commands they never fail open: an event that
cannot be read, an unforeseen error, or a decision that takes longer than the
time limit is answered with the adapter's deny (the same text the command's
watchdog prints).

Decisions run on a pool of worker threads, so the time limit holds even for
a decision that never returns; such a worker stays busy, and once every
worker is, each new request waits out its limit and is denied: the server
slows down, it never lets a call through.

Each endpoint has three forms: ``*_job`` returns the decision as a
:class:`Job` not yet started (the HTTP side queues it in its
:class:`~charter.runtime.serve.handoff.DecisionQueue`, whose pool threads
drain it, and waits holding no thread); ``begin_*`` hands it to the pool at
once; and the blocking form (:meth:`Decider.hook`, :meth:`Decider.check`)
waits for it in the caller's thread.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

# (the server decides from its first request: nothing here is worth
# importing late)
from charter.runtime import deadline, jsonbound
from charter.runtime.gates import decide
from charter.runtime.hooks import claude_code, gemini_cli
from charter.runtime.hooks.common import HookOptions
from charter.runtime.policy.session import SessionError, open_session
from charter.runtime.results import ToolCall
from charter.runtime.serve.plans import PlanHolder
from charter.runtime.version import VERSION

if TYPE_CHECKING:
    from charter.runtime.serve.log import LineWork, _Line


class LineLog(Protocol):
    """Where decisions are logged: the :class:`~.log.DecisionLog` itself, or
    a worker's link to the process that owns it (:mod:`.loglink`)."""

    def record(self, event: str, fields: dict[str, Any], *, args: Any = None) -> _Line: ...

    def record_later(
        self, event: str, work: LineWork, *, block: bool = True, size: int = 0
    ) -> _Line: ...

    def close(self) -> None: ...


__all__ = ["Answer", "Decider", "HookKind", "Job", "LineLog", "ServeOptions", "hook_deny"]

HookKind = Literal["claude-code", "gemini-cli"]
AskMode = Literal["deny", "ask", "defer"]
# How long an answer waits for its decision to reach the disk before it is
# sent as a deny instead (a healthy disk takes milliseconds).
LOG_WAIT_S = 2.0
_ABANDON_AFTER_S = 0.25


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What ``charter serve`` says about how to decide, as ``charter hook`` takes it."""

    agent: str | None = None
    stage: str | None = None
    workspace: str | None = None  # default: each event's cwd
    allow: tuple[str, ...] = ()
    time_limit: float = 5.0
    gemini_ask: AskMode = "deny"
    # Where /v1/check decides (it has no event cwd): --workspace, else the
    # directory the server started in.
    check_workspace: str = field(default_factory=os.getcwd)


@dataclass(frozen=True, slots=True)
class Answer:
    """One endpoint's answer: HTTP status, the body, and what to log."""

    status: int
    body: bytes
    decision: str
    reason: str
    ms: float
    plan: str = ""  # the digest of the plan that decided


class Job:
    """One decision: the work (under the time limit), and how its outcome
    (the work's result, the time limit passing, a failure, the server
    stopping) becomes the :class:`Answer`. Whoever runs it calls exactly one
    of :meth:`done`, :meth:`timed_out`, :meth:`failed`, :meth:`stopping`:
    the HTTP side through its :class:`~.handoff.DecisionQueue`, a blocking
    caller through :meth:`wait` once :meth:`Decider.begin_hook` has handed
    the job to the pool (:attr:`future`)."""

    __slots__ = ("_deny", "_finish", "_work", "future", "limit", "stated")

    def __init__(
        self,
        work: Callable[[], dict[str, Any]],
        limit: float,
        finish: Callable[[dict[str, Any]], Answer],
        deny: Callable[[str], dict[str, Any]],
    ) -> None:
        self._work = work
        self.future: Future[dict[str, Any]] | None = None  # set once handed to the pool
        self.stated = limit
        # how long to wait for the work (a limit of 0 is answered at once)
        self.limit = limit if limit > 0 else 0.01
        self._finish = finish
        self._deny = deny

    def run(self) -> dict[str, Any]:
        """The decision, worked out in this thread."""
        return self._work()

    def done(self, out: dict[str, Any]) -> Answer:
        return self._finish(out)

    def timed_out(self) -> Answer:
        if self.future is not None:
            self.future.cancel()  # a decision still queued never starts
        return self._finish(self._deny(f"no decision within {self.stated:g} s"))

    def failed(self, exc: BaseException) -> Answer:
        # the adapters never raise; fail closed if one does
        return self._finish(self._deny(f"the hook could not decide ({type(exc).__name__}: {exc})"))

    def stopping(self) -> Answer:
        return self._finish(self._deny("the decision server is stopping"))

    def wait(self) -> Answer:
        """The answer, waiting in this thread for the pool."""
        if self.future is None:
            return self.stopping()
        try:
            return self.done(self.future.result(timeout=self.limit))
        except FutureTimeout:
            return self.timed_out()
        except Exception as exc:
            return self.failed(exc)


def hook_deny(kind: HookKind, reason: str) -> dict[str, Any]:
    """The adapter's deny, as a hook command prints it when it cannot decide in time."""
    if kind == "gemini-cli":
        return gemini_cli.deny(reason)
    return claude_code.hook_output("deny", f"charter: {reason}")


def _summary(kind: HookKind, answer: dict[str, Any]) -> tuple[str, str]:
    if kind == "claude-code":
        out = answer.get("hookSpecificOutput") or {}
        return str(out.get("permissionDecision")), str(out.get("permissionDecisionReason", ""))
    if "decision" in answer:
        return str(answer["decision"]), str(answer.get("reason", ""))
    return "defer", str(answer.get("systemMessage", ""))


class Decider:
    """The endpoints' logic over a :class:`PlanHolder`."""

    def __init__(
        self,
        holder: PlanHolder,
        options: ServeOptions,
        *,
        log: LineLog | None = None,
        workers: int = 16,
    ) -> None:
        self.holder = holder
        self.options = options
        self.log = log
        self.threads = workers  # how many threads the pool may run at once
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="charter-decide")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def warm(self, workspace: str) -> None:
        """Decide a read and a shell command once, unlogged, so the first real
        request does not pay for importing the gates and the shell guard."""
        for kind, tool, args in (
            ("claude-code", "Read", {"file_path": "README.md"}),
            ("claude-code", "Bash", {"command": "ls"}),
            ("gemini-cli", "run_shell_command", {"command": "ls"}),
        ):
            event = {"cwd": workspace, "tool_name": tool, "tool_input": args}
            # in this thread, not the pool's: a server that forks warms up
            # first, and no thread may run in a process that forks
            work = self._hook_work(kind, json.dumps(event).encode(), None, [])  # type: ignore[arg-type]
            try:
                work()
            except Exception:  # noqa: BLE001 - warming is best effort; requests fail closed
                pass

    # -- running one decision under the time limit ------------------------------

    def _job(
        self,
        work: Callable[[], dict[str, Any]],
        finish: Callable[[dict[str, Any]], Answer],
        deny: Callable[[str], dict[str, Any]],
    ) -> Job:
        limit = self.options.time_limit

        def limited() -> dict[str, Any]:
            # past the limit the client has its deny: the work stops too (a
            # moment later, so the deny, never the abandoned work's answer,
            # is what the client gets)
            with deadline.limit(limit + _ABANDON_AFTER_S if limit > 0 else 0):
                return work()

        return Job(limited, limit, finish, deny)

    def _submit(self, job: Job) -> Job:
        """Hand ``job`` to the pool (a blocking caller then waits on it)."""
        try:
            job.future = self._pool.submit(job.run)
        except RuntimeError:  # the pool is shut down: the server is stopping
            job.future = None
        return job

    def spawn(self, fn: Callable[[], None]) -> bool:
        """Run ``fn`` in one of the pool's threads; False when the pool is
        shut down (the server is stopping)."""
        try:
            self._pool.submit(fn)
        except RuntimeError:
            return False
        return True

    # -- the endpoints ------------------------------------------------------------

    def hook(self, kind: HookKind, raw: bytes, *, ask: AskMode | None = None) -> Answer:
        """The answer to one hook event, byte for byte what the command prints."""
        return self.begin_hook(kind, raw, ask=ask).wait()

    def begin_hook(self, kind: HookKind, raw: bytes, *, ask: AskMode | None = None) -> Job:
        """:meth:`hook`, handed to the pool."""
        return self._submit(self.hook_job(kind, raw, ask=ask))

    def hook_job(self, kind: HookKind, raw: bytes, *, ask: AskMode | None = None) -> Job:
        """The decision of one hook event, not yet started."""
        start = time.perf_counter()
        used: list[str] = []
        work = self._hook_work(kind, raw, ask, used)

        def finish(answer: dict[str, Any]) -> Answer:
            decision, reason = _summary(kind, answer)
            body = (json.dumps(answer) + "\n").encode("ascii")
            ms = (time.perf_counter() - start) * 1000
            return Answer(200, body, decision, reason, ms, used[0] if used else "")

        return self._job(work, finish, lambda reason: hook_deny(kind, reason))

    def _hook_work(
        self, kind: HookKind, raw: bytes, ask: AskMode | None, used: list[str]
    ) -> Callable[[], dict[str, Any]]:
        """The decision of one hook event (the digest of the plan it used
        appended to ``used``)."""
        opts = self.options

        def work() -> dict[str, Any]:
            loaded = self.holder.plan()
            used.append(loaded.digest)
            prepared = loaded.prepared
            if kind == "claude-code":
                return claude_code.decide_event(
                    raw,
                    plan_path=self.holder.source.describe(),
                    agent=opts.agent,
                    stage=opts.stage,
                    workspace=opts.workspace,
                    allow=opts.allow,
                    prepared=prepared,
                )
            options = HookOptions(
                self.holder.source.describe(), opts.agent, opts.stage, opts.workspace, opts.allow
            )
            return gemini_cli.decide_event(
                raw, options, ask=ask or opts.gemini_ask, prepared=prepared
            )

        return work

    def refuse_hook(self, kind: HookKind, reason: str) -> Answer:
        """A hook request refused before any decision (too large, not
        authorised): the adapter's deny, since any other answer lets the
        client run the call."""
        answer = hook_deny(kind, reason)
        _, text = _summary(kind, answer)
        return Answer(200, (json.dumps(answer) + "\n").encode("ascii"), "deny", text, 0.0)

    def check(self, raw: bytes) -> Answer:
        """``{"tool", "args", "stage"?, "agent"?}`` in, the object
        ``charter check --format json`` prints out."""
        return self.begin_check(raw).wait()

    def begin_check(self, raw: bytes) -> Job:
        """:meth:`check`, handed to the pool."""
        return self._submit(self.check_job(raw))

    def check_job(self, raw: bytes) -> Job:
        """The decision of one ``/v1/check`` request, not yet started."""
        start = time.perf_counter()

        def bad(reason: str) -> dict[str, Any]:
            return {
                "decision": "deny",
                "gate": "input",
                "rule": "malformed-request",
                "reason": reason,
                "provenance": {},
            }

        holder = self.holder

        def work() -> dict[str, Any]:
            try:
                req = jsonbound.loads(raw.decode("utf-8"))
            except jsonbound.RepeatedKey as exc:
                return bad(f"the request cannot be read: {exc}")
            except (UnicodeDecodeError, ValueError) as exc:
                return bad(f"the request is not JSON ({exc})")
            if not isinstance(req, dict):
                return bad("the request is not a JSON object")
            tool, args = req.get("tool"), req.get("args", {})
            stage, agent = (
                req.get("stage", self.options.stage),
                req.get("agent", self.options.agent),
            )
            if not isinstance(tool, str) or not tool:
                return bad("'tool' must be a non-empty string")
            if not isinstance(args, dict):
                return bad("'args' must be a JSON object")
            if stage is not None and not isinstance(stage, str):
                return bad("'stage' must be a string")
            if agent is not None and not isinstance(agent, str):
                return bad("'agent' must be a string")
            prepared = holder.plan().prepared
            if agent is None:
                names = prepared.agent_names
                if len(names) != 1:
                    return bad(
                        f"the plan holds {len(names)} agents ({', '.join(names)}); name the 'agent'"
                    )
                agent = names[0]
            try:
                session = open_session(
                    prepared,
                    agent,
                    workspace=self.options.workspace or self.options.check_workspace,
                    stage=stage,
                    allow=self.options.allow,
                )
            except SessionError as exc:
                return bad(str(exc))
            return decide(session, ToolCall(tool, args)).to_json()

        def finish(out: dict[str, Any]) -> Answer:
            status = 400 if out.get("gate") == "input" else 200
            body = (json.dumps(out, ensure_ascii=False) + "\n").encode("utf-8")
            ms = (time.perf_counter() - start) * 1000
            return Answer(status, body, str(out.get("decision")), str(out.get("reason", "")), ms)

        return self._job(work, finish, bad)

    def health(self) -> Answer:
        current = self.holder.plan()  # (a plan file that changed is loaded first)
        out = {
            "status": "ok",
            "version": VERSION,
            # which process answered (with --workers, each has its own plan holder)
            "pid": os.getpid(),
            "plan": {
                "digest": current.digest,
                "agents": list(current.agents),
                "source": current.source,
                "loaded_at": current.loaded_at,
            },
            "reloads": self.holder.reloads,
            "last_error": self.holder.last_error or None,
        }
        body = (json.dumps(out) + "\n").encode("ascii")
        return Answer(200, body, "", "", 0.0)

    # -- the log ------------------------------------------------------------------

    def logged(self, endpoint: str, raw: bytes, answer: Answer, peer: str) -> Answer:
        """The answer to send, once its decision is on disk (see
        :mod:`.log`): a server killed after answering has logged what it
        answered. A decision that cannot be logged in time is not given; the
        client is told deny instead. (Blocking; the HTTP side uses
        :meth:`record`, waits on the line, then :meth:`settled`.)"""
        line = self.record(endpoint, raw, answer, peer)
        if not self.must_wait(line, answer):
            return answer
        assert line is not None
        return self.settled(endpoint, answer, line.durable(LOG_WAIT_S))

    @staticmethod
    def must_wait(line: _Line | None, answer: Answer) -> bool:
        """Whether ``answer`` may be sent only once ``line`` is on disk: every
        decision but a deny (a deny lets nothing run, whatever the log holds)."""
        return line is not None and answer.decision != "deny"

    def settled(self, endpoint: str, answer: Answer, durable: bool) -> Answer:
        """``answer`` when its log line is on disk, else the deny that says why not."""
        if durable:
            return answer
        reason = "the decision could not be written to the decision log"
        if endpoint == "check":
            out = {"decision": "deny", "gate": "log", "rule": "log-failed", "reason": reason}
            body = (json.dumps(out) + "\n").encode("utf-8")
        else:
            denied = hook_deny(endpoint, reason)  # type: ignore[arg-type]
            body = (json.dumps(denied) + "\n").encode("ascii")
        return Answer(answer.status, body, "deny", reason, answer.ms, answer.plan)

    def record(
        self, endpoint: str, raw: bytes, answer: Answer, peer: str, *, droppable: bool = False
    ) -> _Line | None:
        """Queue the log line for one request, before its answer is sent. The
        event is read for its fields by the log's writer thread, never by the
        caller (the HTTP side's event loop). ``droppable``: a request refused
        before any decision, whose line is dropped rather than waited for when
        the log is behind."""
        if self.log is None:
            return None
        plan = answer.plan or self.holder.current.digest

        def fields() -> tuple[dict[str, Any], dict[str, Any] | None]:
            event: Any = None
            try:
                event = json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                event = None
            event = event if isinstance(event, dict) else {}
            tool = event.get("tool_name", event.get("tool"))
            args = event.get("tool_input", event.get("args"))
            out: dict[str, Any] = {
                "endpoint": endpoint,
                "peer": peer,
                "session": event.get("session_id"),
                "mode": event.get("permission_mode"),
                "tool": tool if isinstance(tool, str) else None,
                "decision": answer.decision,
                "reason": answer.reason,
                "status": answer.status,
                "plan": plan,
                # microseconds as an integer: the audit chain hashes canonical
                # JSON, which holds no floating-point numbers
                "us": round(answer.ms * 1000),
            }
            return out, args if isinstance(args, dict) else None

        return self.log.record_later("decision", fields, block=not droppable, size=len(raw))
