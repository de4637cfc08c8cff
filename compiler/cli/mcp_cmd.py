"""``charter mcp lock PROJECT [--server NAME] [--yes]``: review and pin MCP tools.

Locking starts the project's MCP servers (or connects to their URLs), so it
is an explicit user action: the command first shows every command line or
URL origin it will reach and asks for confirmation. ``--yes`` answers for
the user; without ``--yes`` and without a terminal to ask on, it refuses, so
a CI job never launches a repository's servers by accident.

For each server it lists the tools and writes ``<agent dir>/charter.lock.json``
with every tool's name, safe name, description and input schema and their
sha256 digests; when a previous lock exists it shows what changed, so the
person re-locking reviews exactly that. With ``--server`` only that server's
entry is replaced; otherwise entries of servers no longer declared are
dropped.

Exit codes: 0 every server locked; 1 some server could not be reached or
listed (the others are still written); 2 usage, refusal, or a project whose
MCP manifests do not load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

# The front doors load nothing until a name is used.
import charter.compiler as compiler
import charter.runtime as runtime
from charter.compiler.render import render
from charter.compiler.resolve.mcp_lock import lock_display, lock_path

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="mcp_command", metavar="COMMAND")
    lock = sub.add_parser(
        "lock",
        help="start the declared MCP servers, list their tools and pin them",
        description="Start the declared MCP servers, list their tools and write "
        "charter.lock.json next to each agent.",
    )
    lock.add_argument("project", type=Path, help="project directory")
    lock.add_argument("--server", action="append", metavar="NAME", help="lock only this server")
    lock.add_argument(
        "--yes", action="store_true", help="do not ask before starting or contacting servers"
    )
    lock.add_argument("--config", type=Path, help="the user config.toml (default: the user's own)")
    lock.add_argument("--no-user-config", action="store_true", help="ignore the user's config")


def _confirm(out: TextIO, yes: bool) -> bool | None:
    """True to go ahead, False when declined, None when nobody can be asked."""
    if yes:
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    out.write("Start or contact these servers now? [y/N] ")
    out.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    if args.mcp_command != "lock":
        print("charter mcp: choose a command: lock", file=sys.stderr)
        return 2
    return _lock(args)


def _lock(args: argparse.Namespace) -> int:
    if not args.project.is_dir():
        print(f"charter mcp lock: {args.project}: no such directory", file=sys.stderr)
        return 2
    project = compiler.load_project(
        args.project, config=args.config, use_default_config=not args.no_user_config
    )
    targets, bad = compiler.mcp_lock_targets(project, args.server)
    if bad:
        sys.stderr.write(render(bad, "concise", sources=project.sources))
        print("charter mcp lock: fix the manifests above first", file=sys.stderr)
        return 2
    if args.server:
        unknown = sorted(set(args.server) - {t.server for t in targets})
        if unknown:
            print(
                f"charter mcp lock: no enabled MCP server named {', '.join(unknown)}",
                file=sys.stderr,
            )
            return 2
    if not targets:
        print("charter mcp lock: the project declares no enabled MCP servers", file=sys.stderr)
        return 0
    out = sys.stdout
    runtime.announce_servers(out, [(lock_display(t.directory), t.plan) for t in targets])
    decision = _confirm(out, args.yes)
    if decision is None:
        print(
            "charter mcp lock: refusing to start servers without confirmation; there is no "
            "terminal to ask on, so pass --yes to confirm",
            file=sys.stderr,
        )
        return 2
    if not decision:
        print("charter mcp lock: nothing started", file=sys.stderr)
        return 2

    allow_local = bool(
        project.config is not None
        and project.config.model is not None
        and project.config.model.security.allow_local_network
    )
    failures = 0
    for directory in dict.fromkeys(t.directory for t in targets):
        servers = [(t.server, t.digest, t.plan) for t in targets if t.directory == directory]
        try:
            failures += runtime.relock_agent(
                lock_path(project.root, directory),
                project.root / directory,
                servers,
                allow_local=allow_local,
                only_these=bool(args.server),
                shown=lock_display(directory),
                out=out,
            )
        except runtime.LockWriteError as exc:
            print(f"charter mcp lock: {exc}", file=sys.stderr)
            return 2
    return 1 if failures else 0
