"""Starting ``charter serve``: from a request to a server answering until stopped.

:func:`run_server` is what the ``serve`` verb calls once its options are
parsed. It finds the bearer token, opens the decision log, loads the first
plan (a plan file, or a project compiled by the caller's ``compile``: the
runtime never compiles), checks that the plan can answer, binds the socket,
and serves, from this process or from forked workers, until SIGTERM or
SIGINT. A server that cannot start raises :class:`ServeRefused`; one that
served returns its exit code (0 when stopped). What it does as it goes (the
address, reloads, a worker's events) is written to stderr and to the log.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from charter.runtime.errors import CharterError
from charter.runtime.plan import Plan
from charter.runtime.serve.balance import Balance
from charter.runtime.serve.decisions import Decider, LineLog, ServeOptions
from charter.runtime.serve.log import DecisionLog
from charter.runtime.serve.loglink import LogLink
from charter.runtime.serve.plans import (
    FileSource,
    PlanHolder,
    PlanLoadError,
    PlanSource,
    ProjectSource,
)
from charter.runtime.serve.server import (
    DecisionServer,
    ListenError,
    is_loopback,
    listen_socket,
    parse_listen,
)
from charter.runtime.serve.tokens import read_token, token_files
from charter.runtime.serve.workers import default_count, prefork

__all__ = ["ServeRefused", "ServeRequest", "run_server"]

# Threads that run decisions (CPU-bound: more would not decide faster;
# enough that a few decisions hanging until the time limit leave room).
_DECISION_THREADS = 16


class ServeRefused(CharterError):
    """The server did not start; the message says why (``charter serve``
    exits 2)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeRequest:
    """What ``charter serve``'s options ask for, as data (see its ``--help``)."""

    target: Path  # a plan file or a project directory
    agent: str | None = None
    stage: str | None = None
    workspace: str | None = None
    allow: Sequence[str] = ()
    listen: str = "127.0.0.1:8787"
    port_file: Path | None = None
    token_file: Path | None = None
    log: Path | None = None
    log_max_mb: int = 64
    time_limit: float = 5.0
    gemini_ask: Literal["deny", "ask", "defer"] = "deny"
    max_connections: int = 1024
    max_per_peer: int | None = None
    read_timeout: float = 10.0
    idle_timeout: float = 30.0
    workers: int | None = None  # None: one per core, at most 8
    reload_interval: float = 1.0
    config: Path | None = None  # the user config a project is compiled with


def run_server(request: ServeRequest, compile: Callable[[], Plan | str]) -> int:
    """Serve ``request.target``'s plan until stopped. ``compile`` turns the
    project directory into a plan (or says why it cannot), each time one of
    its files changes; it is not called for a plan file."""
    try:
        host, port = parse_listen(request.listen)
    except ListenError as exc:
        raise ServeRefused(str(exc)) from None
    token, token_source = _token(request)
    target = request.target
    if request.config is not None and not request.config.is_file():
        raise ServeRefused(f"{request.config}: config file not found")
    source: PlanSource
    if target.is_file():
        source = FileSource(target)
    elif target.is_dir():
        source = ProjectSource(target, compile, config=request.config)
    else:
        raise ServeRefused(f"{target}: no such plan file or project directory")

    log_path: Path = (
        request.log or Path(request.workspace or ".") / ".charter" / "serve" / "decisions.jsonl"
    )
    try:
        # the writer starts once the workers are forked (see workers.py)
        log = DecisionLog(log_path, max_bytes=max(1, request.log_max_mb) * 1024 * 1024, start=False)
    except OSError as exc:
        raise ServeRefused(
            f"cannot open the decision log {log_path}: {exc.strerror or exc}"
        ) from None

    def note(event: str, fields: dict[str, Any]) -> None:
        log.record(event, dict(fields))
        shown = ", ".join(f"{k}={v}" for k, v in fields.items())
        print(f"charter serve: {event.replace('_', ' ')}: {shown}", file=sys.stderr, flush=True)

    try:
        holder = PlanHolder(source, on_event=note)
    except PlanLoadError as exc:
        log.close()
        raise ServeRefused(f"no usable plan: {exc}") from None
    options = ServeOptions(
        agent=request.agent,
        stage=request.stage,
        workspace=request.workspace,
        allow=tuple(request.allow),
        time_limit=request.time_limit,
        gemini_ask=request.gemini_ask,
    )
    problem = _check_agent(holder, options)
    if problem:
        log.close()
        raise ServeRefused(problem)
    workers = request.workers if request.workers is not None else default_count()
    if not is_loopback(host) and not token:
        log.close()
        raise ServeRefused(
            f"cannot listen on {request.listen}: {host} is not a loopback address, so it needs a "
            "bearer token (--token-file FILE or CHARTER_SERVE_TOKEN)"
        )
    try:
        listener = listen_socket(host, port)
    except OSError as exc:
        log.close()
        raise ServeRefused(f"cannot listen on {request.listen}: {exc.strerror or exc}") from None
    # Decide once here, before any fork: the workers inherit the imports.
    Decider(holder, options).warm(os.path.abspath(request.workspace or "."))
    # The plan and the modules live as long as the server: frozen, the
    # collector never walks them again (nor writes to their pages, which
    # the forked workers then keep sharing with this process).
    gc.collect()
    gc.freeze()
    bound_host, bound_port = listener.getsockname()[:2]
    url = f"http://[{bound_host}]:{bound_port}" if ":" in bound_host else (
        f"http://{bound_host}:{bound_port}")  # fmt: skip
    current = holder.current
    access = f"token from {token_source}" if token else "no token: any local process may ask"
    print(
        f"charter serve: listening on {url} (plan {current.digest}, agents: "
        f"{', '.join(current.agents)}; log: {log_path}; {access}; workers: {workers})",
        file=sys.stderr,
        flush=True,
    )
    started = {"url": url, "plan": current.digest, "source": current.source, "workers": workers}

    balance = Balance(workers) if workers > 1 else None

    def serve(decide_log: LineLog, number: int | None) -> int:
        """Serve on ``listener`` until SIGTERM or SIGINT (in this process)."""
        if number is not None and balance is not None:
            balance.join(number)
        if number is not None:

            def worker_note(event: str, fields: dict[str, Any]) -> None:
                decide_log.record(event, {**fields, "worker": number})
                shown = ", ".join(f"{k}={v}" for k, v in fields.items())
                print(f"charter serve: worker {number}: {event.replace('_', ' ')}: {shown}",
                      file=sys.stderr, flush=True)  # fmt: skip

            holder.on_event = worker_note
        decider = Decider(holder, options, log=decide_log, workers=_DECISION_THREADS)
        server = DecisionServer(
            decider,
            host,
            port,
            token=token,
            max_connections=max(1, request.max_connections),
            max_per_peer=request.max_per_peer,
            read_timeout=max(0.1, request.read_timeout),
            idle_timeout=max(0.1, request.idle_timeout),
            sock=listener,
            balance=balance,
            on_loop=decide_log.attach if isinstance(decide_log, LogLink) else None,
        )
        stop = threading.Event()
        if not source.cheap:
            holder.watch(max(0.1, request.reload_interval), stop)

        def stop_serving(signum: int, frame: Any) -> None:
            threading.Thread(target=server.shutdown, daemon=True).start()

        signal.signal(signal.SIGTERM, stop_serving)
        signal.signal(signal.SIGINT, stop_serving)
        try:
            server.serve_forever()
        finally:
            stop.set()
            server.close()
        return 0

    port_file = request.port_file
    if workers <= 1:
        log.start()
        if port_file is not None:
            _write_port(port_file, bound_port)
        log.record("serve_started", started)
        try:
            serve(log, None)
        finally:
            log.record("serve_stopped", {"url": url})
            log.close()
            if port_file is not None:
                port_file.unlink(missing_ok=True)
        return 0

    def worker(number: int, link: LogLink) -> int:
        try:
            return serve(link, number)
        finally:
            link.close()

    running = prefork(workers, log, listener, worker, balance=balance)

    def stop_workers(signum: int, frame: Any) -> None:
        running.stop()

    signal.signal(signal.SIGTERM, stop_workers)
    signal.signal(signal.SIGINT, stop_workers)
    log.record("serve_started", started)
    if port_file is not None:
        _write_port(port_file, bound_port)
    try:
        code = running.wait()
    finally:
        log.record("serve_stopped", {"url": url})
        log.close()
        if port_file is not None:
            port_file.unlink(missing_ok=True)
    return code


def _token(request: ServeRequest) -> tuple[str | None, str]:
    """The token every request must carry and where it came from. A token
    file that exists is always used: a server never quietly answers without
    the token its hooks send."""
    named = request.token_file
    candidates = [named] if named is not None else token_files(request.workspace, request.target)
    for path in candidates:
        if named is None and not path.exists():
            continue
        try:
            return read_token(path), str(path)
        except ValueError as exc:
            raise ServeRefused(str(exc)) from None
    env = os.environ.get("CHARTER_SERVE_TOKEN")
    return (env, "CHARTER_SERVE_TOKEN") if env else (None, "")


def _check_agent(holder: PlanHolder, options: ServeOptions) -> str:
    """Why the server could never decide with this plan and agent, or ""."""
    names = holder.current.agents
    if options.agent is None:
        if len(names) != 1:
            return f"the plan holds {len(names)} agents ({', '.join(names)}); pass --agent"
        return ""
    if options.agent not in names:
        return f"no agent named {options.agent!r} in the plan (agents: {', '.join(names)})"
    return ""


def _write_port(path: Path, port: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{port}\n", encoding="utf-8")
    os.replace(tmp, path)
