"""``charter serve PLAN_OR_PROJECT``: a long-running decision server for hooks.

Answers Claude Code and Gemini CLI hook events over HTTP with exactly what
``charter hook`` prints, without a process start per tool call (see
docs/clients.md). Given a plan file, the file is checked on every request and
reloaded when it changed; given a project directory, the project is compiled
first (as ``charter run`` does) and compiled again when one of its files
changes. A plan that fails to load or compile is refused and the last good
one stays in use.

Exit codes: 0 when stopped by SIGTERM or Ctrl-C; 2 when it cannot start (no
usable plan, a --listen value it cannot use, a missing token for a
non-loopback address).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import signal
import sys
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from charter.runtime.plan.prepared import PreparedPlan
    from charter.runtime.serve import PlanHolder, ServeOptions

__all__ = ["TOKEN_FILE", "ProjectSource", "add_arguments", "read_token", "run", "token_files"]

_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", "build", "target"})
_MAX_FILES = 20_000
_DECISION_THREADS = 16


def add_arguments(p: argparse.ArgumentParser) -> None:
    from charter.compiler.cli._plan_arg import add_hook_scope_options, add_plan_operand

    add_plan_operand(p, "target")
    add_hook_scope_options(p)
    p.add_argument(
        "--listen",
        default="127.0.0.1:8787",
        metavar="HOST:PORT",
        help="address to listen on (default 127.0.0.1:8787; port 0 picks a free one); an "
        "address that is not loopback needs a token",
    )
    p.add_argument(
        "--port-file", type=Path, metavar="FILE", help="write the port here once listening"
    )
    p.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="file holding the bearer token every request must carry (default: "
        ".charter/serve/token of the workspace or of the plan's .charter folder, which "
        "`charter init` writes, when it exists; else CHARTER_SERVE_TOKEN)",
    )
    p.add_argument(
        "--log",
        type=Path,
        metavar="FILE",
        help="decision log, JSON lines (default: .charter/serve/decisions.jsonl in the "
        "workspace, or in the current directory)",
    )
    p.add_argument(
        "--log-max-mb",
        type=int,
        default=64,
        metavar="MB",
        help="rotate the decision log past this size; five older files are kept (default 64)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="answer deny when a decision takes longer (default 5; keep it below the "
        "client's hook timeout)",
    )
    p.add_argument(
        "--gemini-ask",
        choices=("deny", "ask", "defer"),
        default="deny",
        help="what the plan's ask becomes for Gemini CLI, as `charter hook gemini-cli --ask` "
        "(default deny; a hook URL's ?ask= overrides it)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=1024,
        metavar="N",
        help="connections open at once (default 1024); past it, the connection that has sent "
        "least of a request for longest is closed to make room",
    )
    p.add_argument(
        "--max-per-peer",
        type=int,
        default=None,
        metavar="N",
        help="connections open at once from one address (default: --max-connections; every "
        "local process shares 127.0.0.1)",
    )
    p.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="a whole request must arrive within this (default 10); a hook request that does "
        "not is answered deny",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="close a keep-alive connection idle this long (default 30)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes deciding on one listening socket (default: one per core, at "
        "most 8; 1 serves from this process)",
    )
    p.add_argument(
        "--reload-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how often a project's files are checked for changes (default 1)",
    )
    p.add_argument("--config", type=Path, help="the user config.toml used to compile a project")
    p.add_argument("--no-user-config", action="store_true", help="ignore the user's config")


def _refuse(message: str) -> int:
    print(f"charter serve: {message}", file=sys.stderr)
    return 2


class ProjectSource:
    """A project directory, compiled into a plan as ``charter run`` compiles it."""

    cheap = False

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root: Path = args.target

    def describe(self) -> str:
        return str(self.root)

    def signature(self) -> Hashable:
        """A digest of every file's name, size and modification time (and the
        config's): any edit changes it. Capped, so a huge tree costs bounded work."""
        h = hashlib.sha256()
        seen = 0
        for top, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                seen += 1
                if seen > _MAX_FILES:
                    return h.hexdigest(), seen
                path = os.path.join(top, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "replace"))
        config: Path | None = self.args.config
        if config is not None:
            try:
                h.update(f"config\0{os.stat(config).st_mtime_ns}".encode())
            except OSError:
                h.update(b"config missing")
        return h.hexdigest(), seen

    def load(self) -> PreparedPlan:
        from charter.compiler.cli._plan_arg import load_plan_or_project
        from charter.runtime.plan.prepared import prepare
        from charter.runtime.serve import PlanLoadError

        loaded = load_plan_or_project(
            self.args.target,
            config=self.args.config,
            use_user_config=not self.args.no_user_config,
        )
        if isinstance(loaded, str):
            raise PlanLoadError(loaded)
        return prepare(loaded.plan, eager=True)


# Where `charter init` keeps the workspace's token (private: .charter/serve/
# is in the .gitignore init writes).
TOKEN_FILE = Path(".charter") / "serve" / "token"


def token_files(args: argparse.Namespace) -> list[Path]:
    """The token files that apply when no --token-file is given: the
    workspace's (``--workspace`` or the current directory), and the one of
    the ``.charter`` folder the plan or project is in."""
    out = [Path(args.workspace or ".") / TOKEN_FILE]
    target: Path = args.target
    for parent in (target.resolve(), *target.resolve().parents):
        if parent.name == ".charter":
            out.append(parent / "serve" / "token")
            break
    return out


def read_token(path: Path) -> str:
    """The token in ``path``: the token alone, or the header line
    ``Authorization: Bearer TOKEN`` (the form init writes, which a curl hook
    sends with ``-H @FILE``). Raises ValueError with the reason it cannot be used."""
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from exc
    if st.st_mode & 0o077:
        raise ValueError(
            f"{path}: the token file can be read by other users (mode "
            f"{st.st_mode & 0o777:o}); make it private: chmod 600 {path}"
        )
    value = text.strip()
    name, sep, rest = value.partition(":")
    if sep and name.strip().lower() == "authorization":
        value = rest.strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() == "bearer":
        value = rest.strip()
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{path}: expected a token, or the line 'Authorization: Bearer TOKEN'")
    return value


def _token(args: argparse.Namespace) -> tuple[str | None, str] | int:
    """The token every request must carry and where it came from, or the
    exit code of a refusal. A token file that exists is always used: a
    server never quietly answers without the token its hooks send."""
    token_file: Path | None = args.token_file
    candidates = [token_file] if token_file is not None else token_files(args)
    for path in candidates:
        if token_file is None and not path.exists():
            continue
        try:
            return read_token(path), str(path)
        except ValueError as exc:
            return _refuse(str(exc))
    env = os.environ.get("CHARTER_SERVE_TOKEN")
    return (env, "CHARTER_SERVE_TOKEN") if env else (None, "")


def run(args: argparse.Namespace) -> int:
    from charter.runtime.serve import (
        Decider,
        DecisionLog,
        DecisionServer,
        FileSource,
        ListenError,
        PlanHolder,
        PlanLoadError,
        ServeOptions,
        parse_listen,
    )
    from charter.runtime.serve.decisions import LineLog
    from charter.runtime.serve.loglink import LogLink
    from charter.runtime.serve.plans import PlanSource
    from charter.runtime.serve.server import is_loopback, listen_socket
    from charter.runtime.serve.workers import default_count, prefork

    try:
        host, port = parse_listen(args.listen)
    except ListenError as exc:
        return _refuse(str(exc))
    found = _token(args)
    if isinstance(found, int):
        return found
    token, token_source = found
    target: Path = args.target
    if args.config is not None and not args.config.is_file():
        return _refuse(f"{args.config}: config file not found")
    source: PlanSource
    if target.is_file():
        source = FileSource(target)
    elif target.is_dir():
        source = ProjectSource(args)
    else:
        return _refuse(f"{target}: no such plan file or project directory")

    log_path: Path = (
        args.log or Path(args.workspace or ".") / ".charter" / "serve" / "decisions.jsonl"
    )
    try:
        # the writer starts once the workers are forked (see workers.py)
        log = DecisionLog(log_path, max_bytes=max(1, args.log_max_mb) * 1024 * 1024, start=False)
    except OSError as exc:
        return _refuse(f"cannot open the decision log {log_path}: {exc.strerror or exc}")

    def note(event: str, fields: dict[str, Any]) -> None:
        log.record(event, dict(fields))
        shown = ", ".join(f"{k}={v}" for k, v in fields.items())
        print(f"charter serve: {event.replace('_', ' ')}: {shown}", file=sys.stderr, flush=True)

    try:
        holder = PlanHolder(source, on_event=note)
    except PlanLoadError as exc:
        log.close()
        return _refuse(f"no usable plan: {exc}")
    options = ServeOptions(
        agent=args.agent,
        stage=args.stage,
        workspace=args.workspace,
        allow=tuple(args.allow),
        time_limit=args.time_limit,
        gemini_ask=args.gemini_ask,
    )
    problem = _check_agent(holder, options)
    if problem:
        log.close()
        return _refuse(problem)
    workers = args.workers if args.workers is not None else default_count()
    if not is_loopback(host) and not token:
        log.close()
        return _refuse(
            f"cannot listen on {args.listen}: {host} is not a loopback address, so it needs a "
            "bearer token (--token-file FILE or CHARTER_SERVE_TOKEN)"
        )
    try:
        listener = listen_socket(host, port)
    except OSError as exc:
        log.close()
        return _refuse(f"cannot listen on {args.listen}: {exc.strerror or exc}")
    # Decide once here, before any fork: the workers inherit the imports.
    Decider(holder, options).warm(os.path.abspath(args.workspace or "."))
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

    def serve(decide_log: LineLog, number: int | None) -> int:
        """Serve on ``listener`` until SIGTERM or SIGINT (in this process)."""
        if number is not None:

            def worker_note(event: str, fields: dict[str, Any]) -> None:
                decide_log.record(event, {**fields, "worker": number})
                shown = ", ".join(f"{k}={v}" for k, v in fields.items())
                print(f"charter serve: worker {number}: {event.replace('_', ' ')}: {shown}",
                      file=sys.stderr, flush=True)  # fmt: skip

            holder.on_event = worker_note
        # Threads that run decisions (CPU-bound: more would not decide
        # faster; enough that a few decisions hanging until the time limit
        # leave room).
        decider = Decider(holder, options, log=decide_log, workers=_DECISION_THREADS)
        server = DecisionServer(
            decider,
            host,
            port,
            token=token,
            max_connections=max(1, args.max_connections),
            max_per_peer=args.max_per_peer,
            read_timeout=max(0.1, args.read_timeout),
            idle_timeout=max(0.1, args.idle_timeout),
            sock=listener,
        )
        stop = threading.Event()
        if not source.cheap:
            holder.watch(max(0.1, args.reload_interval), stop)

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

    if workers <= 1:
        log.start()
        if args.port_file is not None:
            _write_port(args.port_file, bound_port)
        log.record("serve_started", started)
        try:
            serve(log, None)
        finally:
            log.record("serve_stopped", {"url": url})
            log.close()
            if args.port_file is not None:
                args.port_file.unlink(missing_ok=True)
        return 0

    def worker(number: int, link: LogLink) -> int:
        try:
            return serve(link, number)
        finally:
            link.close()

    running = prefork(workers, log, listener, worker)

    def stop_workers(signum: int, frame: Any) -> None:
        running.stop()

    signal.signal(signal.SIGTERM, stop_workers)
    signal.signal(signal.SIGINT, stop_workers)
    log.record("serve_started", started)
    if args.port_file is not None:
        _write_port(args.port_file, bound_port)
    try:
        code = running.wait()
    finally:
        log.record("serve_stopped", {"url": url})
        log.close()
        if args.port_file is not None:
            args.port_file.unlink(missing_ok=True)
    return code


def _check_agent(holder: PlanHolder, options: ServeOptions) -> str:
    """Why the server could never decide with this plan and --agent, or ""."""
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
