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
import sys
from pathlib import Path

# The front door loads nothing until a name is used: the other verbs never
# pay for the server.
import charter.runtime as runtime
from charter.compiler.cli._options import from_options
from charter.compiler.cli._plan_arg import (
    add_hook_scope_options,
    add_plan_operand,
    load_plan_or_project,
)

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
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


def run(args: argparse.Namespace) -> int:
    request = from_options(runtime.ServeRequest, args, allow=tuple(args.allow))

    def compile_project() -> runtime.Plan | str:
        # A project directory, compiled as `charter run` compiles it, on
        # start and again whenever one of its files changes.
        loaded = load_plan_or_project(
            args.target, config=args.config, use_user_config=not args.no_user_config
        )
        return loaded if isinstance(loaded, str) else loaded.plan

    try:
        return runtime.run_server(request, compile_project)
    except runtime.ServeRefused as exc:
        print(f"charter serve: {exc}", file=sys.stderr)
        return 2
