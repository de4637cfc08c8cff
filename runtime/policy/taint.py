"""The data-flow gate: once a session has read something sensitive, calls that
could carry it off the machine need a reason to go through.

Off unless the agent's plan enables it (``plan.agent.taint.enabled``; config
or blueprint can turn it on, never off). What differs from the anchor:

- **Labels come from what was read, not from everything.** A plain source
  file read does not taint the session; a credential path (``.env``,
  ``.ssh/``...), a bound secret, or the result of an MCP tool (external,
  untrusted content: the plan carries no trust marker for a server, so every
  MCP result counts) does. Each label keeps its source: the tool, the path or
  server, and the call id, so a block explains *which* read caused it.
- **The allowlist matches the call's actual target.** ``web_fetch`` is judged
  by the URL's host, an MCP call by its server, ``git push`` by the remote's
  URL host (read from ``.git/config`` when a remote name is given), ``curl``
  and friends by the host in their arguments. Every outbound check has a
  target; a call whose target cannot be named gets ``unknown`` and only a
  ``*`` allowlist entry lets it through.
- **Unknown tools are outbound**, and so is a shell command the guard did not
  classify as a known local read (it may run anything).

When a call is blocked the policy's ``on_block`` says whether a person is
asked or the call is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from charter.runtime.capped import read_regular
from charter.runtime.plan import Permission, TaintPolicy, ToolEntry
from charter.runtime.shell.guard.state import MAX_COMMAND_CHARS, MAX_TOKENS
from charter.runtime.shell.syntax import Program, SimpleCommand, Word, parse

__all__ = [
    "Label",
    "TaintTracker",
    "TaintVerdict",
    "outbound_targets",
    "shell_targets",
]

# Built-in tools that only act on the machine (or on the run's own state).
_LOCAL_IMPLS = frozenset(
    {
        "fs.read",
        "fs.write",
        "fs.replace",
        "fs.list",
        "fs.search",
        "context",
        "checklist",
        "output.submit",
        "human.ask",
        "human.review",
        "tasks.status",
        "tasks.wait",
        "tasks.cancel",
        "tasks.list",
        "catalog.list",
        "skills.list",
        "skills.view",
        "skills.manage",
        "sessions.search",
    }
)

# Programs whose purpose is talking to another machine.
_NET_PROGRAMS = frozenset(
    {
        "curl",
        "wget",
        "http",
        "https",
        "xh",
        "aria2c",
        "ssh",
        "scp",
        "sftp",
        "rsync",
        "mosh",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "telnet",
        "ftp",
        "tftp",
        "openssl",
        "nslookup",
        "dig",
        "host",
    }
)
_GIT_REMOTE_VERBS = frozenset({"push", "fetch", "pull", "clone", "ls-remote", "send-email"})
# Words that run the rest of the line as another command.
_WRAPPERS = frozenset({"sudo", "env", "nohup", "time", "exec", "command", "nice", "timeout"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BARE_HOST = re.compile(
    r"^(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?::\d+)?(?:/\S*)?$|^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\S*)?$"
)
# git options that take the next word as their value.
_GIT_VALUE_OPTS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_SCP_HOST = re.compile(r"^(?:[^@/\s]+@)?(\[[^\]]+\]|[^:/\s]+):")

LabelKind = Literal["sensitive-path", "secret", "untrusted-result"]


# Label and TaintVerdict are NamedTuples: they are defined at every start-up,
# and a NamedTuple costs about a tenth of a frozen dataclass to define. The
# tracker is mutable session state compared by identity (eq=False).
class Label(NamedTuple):
    """Why a piece of data is tainted: its kind and the call that brought it in."""

    kind: LabelKind
    source: str  # "read_file .env", "mcp docs", "terminal secret GITHUB_TOKEN"
    call_id: str = ""

    def __str__(self) -> str:
        return f"{self.kind} from {self.source}" + (
            f" (call {self.call_id})" if self.call_id else ""
        )


class TaintVerdict(NamedTuple):
    """The data-flow gate's answer for one outbound call, with its targets and labels."""

    decision: Permission
    rule: str
    reason: str
    targets: tuple[str, ...] = ()
    labels: tuple[Label, ...] = ()


def _host_of(text: str) -> str | None:
    candidate = text if "://" in text else "http://" + text
    try:
        host = urlsplit(candidate).hostname
    except ValueError:
        return None
    return host.lower().rstrip(".") if host else None


_GIT_CONFIG_MAX = 1 << 20


def _git_remote_url(workspace: Path | None, name: str) -> str | None:
    """The URL of remote ``name`` from the workspace's .git/config, read as
    plain text (no git process is started to answer a policy question)."""
    if workspace is None:
        return None
    try:
        data = read_regular(workspace / ".git" / "config", _GIT_CONFIG_MAX)
    except OSError:
        return None
    if data is None or len(data) > _GIT_CONFIG_MAX:
        return None  # a FIFO, a device or a huge file: no URL read from it
    text = data.decode("utf-8", errors="replace")
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r'^\[remote\s+"([^"]+)"\]$', line)
        if m:
            current = m.group(1)
            continue
        if line.startswith("["):
            current = None
            continue
        if current == name:
            k, _, v = line.partition("=")
            if k.strip().lower() == "url":
                return v.strip()
    return None


def _git_target(words: Sequence[str], workspace: Path | None) -> str:
    rest = [w for w in words if not w.startswith("-")]
    remote = rest[0] if rest else "origin"
    url = remote if ("://" in remote or _SCP_HOST.match(remote)) else None
    if url is None:
        url = _git_remote_url(workspace, remote)
    if url is None:
        return f"git-remote:{remote}"
    m = _SCP_HOST.match(url) if "://" not in url else None
    if m:
        return m.group(1).strip("[]").lower()
    return _host_of(url) or "unknown"


def _program_target(prog: str, args: Sequence[str]) -> str:
    operands = [a for a in args if not a.startswith("-")]
    if prog in ("ssh", "scp", "sftp", "rsync", "mosh"):
        for a in operands:
            m = _SCP_HOST.match(a)
            if m:
                return m.group(1).strip("[]").lower()
        for a in operands:
            if "@" in a:
                return a.rsplit("@", 1)[1].split(":")[0].lower()
        if prog in ("ssh", "mosh") and operands:
            return operands[0].lower()
        return "unknown"
    # A URL names its host plainly; otherwise a bare host[:port][/path] word.
    # Option values (``-d @file``, ``-o out.txt``) are neither.
    for a in operands:
        if "://" in a:
            host = _host_of(a)
            if host:
                return host
    for a in operands:
        if _BARE_HOST.match(a):
            host = _host_of(a)
            if host:
                return host
    return "unknown"


def _simple_commands(command: str) -> list[list[str]] | None:
    """The words of every simple command in ``command`` as bash reads it,
    those inside subshells and command substitutions included, through the
    shell guard's own parser: linear in the text and bounded in tokens (a
    second, quadratic reading such as shlex took seconds on a megabyte). A
    word only known at run time is ``"?"``. None when the text cannot be read
    (too long, or not bash): the caller then assumes the worst."""
    if len(command) > MAX_COMMAND_CHARS:
        return None  # longer than the guard reads (it asks too): unknown, at once
    result = parse(command, max_tokens=MAX_TOKENS)
    if result.program is None:
        return None
    out: list[list[str]] = []
    stack: list[Program] = [result.program]
    while stack:  # explicit: nesting depth is the input's to choose
        program = stack.pop()
        for cmd in program.commands:
            if isinstance(cmd, SimpleCommand):
                out.append([w.value if w.value is not None else "?" for w in cmd.words])
                for r in cmd.redirects:
                    doc = r.heredoc
                    if doc is not None and not doc.quoted and ("$(" in doc.body or "`" in doc.body):
                        return None  # a substitution in the body runs: unread here
                words: tuple[Word, ...] = cmd.words + tuple(r.target for r in cmd.redirects)
                for w in words:
                    for part in w.parts:
                        for p in (part, *part.inner):
                            if p.body is not None:
                                stack.append(p.body)
            else:
                stack.append(cmd.body)
    return [c for c in out if c]


def shell_targets(
    command: str, *, workspace: Path | None = None, guard_allowed: bool = False
) -> tuple[str, ...] | None:
    """Outbound targets of a shell command, or None when it does not leave the
    machine. ``guard_allowed`` is whether the shell guard classified the whole
    command as a known local read; anything else may open a connection."""
    cmds = _simple_commands(command)
    if cmds is None:
        return ("unknown",)
    targets: list[str] = []
    for words in cmds:
        i = 0
        while i < len(words) and (_ASSIGN.match(words[i]) or words[i] in _WRAPPERS):
            i += 1
        if i >= len(words):
            continue
        prog = words[i].rsplit("/", 1)[-1]
        args = words[i + 1 :]
        if prog in _NET_PROGRAMS:
            targets.append(_program_target(prog, args))
        elif prog == "git":
            j = 0
            while j < len(args) and args[j].startswith("-"):
                j += 2 if args[j] in _GIT_VALUE_OPTS else 1
            if j < len(args) and args[j] in _GIT_REMOTE_VERBS:
                targets.append(_git_target(args[j + 1 :], workspace))
    if targets:
        return tuple(dict.fromkeys(targets))
    return None if guard_allowed else ("unknown",)


def outbound_targets(
    entry: ToolEntry | None,
    args: Mapping[str, Any],
    *,
    workspace: Path | None = None,
    guard_allowed: bool = False,
) -> tuple[str, ...] | None:
    """Where a call would send data, or None for a call that stays local.
    ``entry`` is None for a tool the plan does not describe: outbound."""
    if entry is None:
        return ("unknown",)
    if entry.source == "mcp":
        server = entry.mcp.server if entry.mcp is not None else entry.impl
        return (server,)
    if entry.source in ("authored", "script"):
        # Authored Python can do anything the process can; a script tool
        # reaches the network through its host functions.
        return (f"tool:{entry.name}",)
    if entry.impl == "exec.command":
        command = args.get("command")
        if not isinstance(command, str):
            return ("unknown",)
        return shell_targets(command, workspace=workspace, guard_allowed=guard_allowed)
    if entry.impl in ("web.fetch",):
        url = args.get("url")
        host = _host_of(url) if isinstance(url, str) else None
        return (host or "unknown",)
    if entry.impl == "web.search":
        # The query goes to the configured search provider.
        return ("search",)
    if entry.impl in _LOCAL_IMPLS and not entry.outbound:
        return None
    return ("unknown",)


@dataclass(slots=True, eq=False)
class TaintTracker:
    """Per-session labels and the check against the policy's allowlist."""

    policy: TaintPolicy
    labels: list[Label] = field(default_factory=list)

    def add(self, label: Label) -> None:
        if label not in self.labels:
            self.labels.append(label)

    def observe(
        self,
        entry: ToolEntry | None,
        tool: str,
        *,
        call_id: str = "",
        sensitive_paths: Sequence[str] = (),
        secret_targets: Sequence[str] = (),
    ) -> None:
        """Record what a call that ran brought into the session."""
        for p in sensitive_paths:
            self.add(Label("sensitive-path", f"{tool} {p}", call_id))
        for s in secret_targets:
            self.add(Label("secret", f"{tool} secret {s}", call_id))
        if entry is not None and entry.source == "mcp":
            server = entry.mcp.server if entry.mcp is not None else entry.impl
            self.add(Label("untrusted-result", f"mcp server {server} ({tool})", call_id))

    def _allowed(self, tool: str, target: str) -> bool:
        t = target.lower()
        return any(
            (pt == "*" or fnmatchcase(tool, pt)) and fnmatchcase(t, pat.lower())
            for pt, pat in self.policy.allow
        )

    def check(self, tool: str, targets: tuple[str, ...] | None) -> TaintVerdict:
        if not self.policy.enabled:
            return TaintVerdict("allow", "dataflow-off", "data-flow tracking is off")
        if targets is None:
            return TaintVerdict("allow", "dataflow-local", f"{tool} does not send data out")
        if not self.labels:
            return TaintVerdict(
                "allow",
                "dataflow-clean",
                "nothing sensitive has been read in this session",
                targets,
            )
        blocked = tuple(t for t in targets if not self._allowed(tool, t))
        labels = tuple(self.labels)
        if not blocked:
            return TaintVerdict(
                "allow",
                "dataflow-allowlisted",
                f"{tool} to {', '.join(targets)} is on the data-flow allowlist",
                targets,
                labels,
            )
        shown = "; ".join(str(lb) for lb in labels[:3])
        more = f" and {len(labels) - 3} more" if len(labels) > 3 else ""
        reason = (
            f"{tool} could send data to {', '.join(blocked)}, which is not on the data-flow "
            f"allowlist, after this session read: {shown}{more}"
        )
        return TaintVerdict(self.policy.on_block, "dataflow-blocked", reason, targets, labels)
