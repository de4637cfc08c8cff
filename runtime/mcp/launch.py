"""How an MCP server is started or reached, decided before anything runs.

Pure functions over the plan's :class:`~charter.runtime.plan.McpServerPlan`:

* the *identity* the lock records (command and arguments as written, or the
  URL's origin), so a lock is tied to one program;
* the *preview* a person sees before approving a connection: never an
  environment or header value, a URL's credentials or query, or an argument
  that looks like a secret;
* ``${VAR}`` expansion, done only once connecting has been approved (so an
  unapproved manifest cannot make the runtime read a variable at all);
* the child's environment: the shared allowlist plus the manifest's own
  ``env`` entries, nothing else from the parent;
* ``cwd``, which must resolve (symlinks followed) inside the workspace, or
  inside the agent's own directory when the run compiled that directory
  itself (the compiler already kept ``cwd`` inside it, CH703);
* in a run with a sandbox, the command line that starts the server inside
  it (:func:`contain_launch`): the same server, wrapped.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from charter.runtime.errors import CharterError
from charter.runtime.net.urlpolicy import audit_origin
from charter.runtime.plan import McpServerPlan
from charter.runtime.policy.env import build_env, validate_overlay
from charter.runtime.redact import Redactor, sensitive_name

__all__ = [
    "ConnectPreview",
    "LaunchError",
    "Launch",
    "child_env",
    "contain_launch",
    "expand",
    "launch_identity",
    "preview",
    "resolve_cwd",
    "resolve_launch",
]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class LaunchError(CharterError):
    """The server cannot be started as declared; ``rule`` names why."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def launch_identity(plan: McpServerPlan) -> dict[str, Any]:
    """What the lock records as the server's identity. Unexpanded text only,
    so no variable's value ever reaches the lock file."""
    if plan.transport == "stdio":
        return {"command": plan.command or "", "args": list(plan.args)}
    return {"origin": audit_origin(plan.url or "")}


@dataclass(frozen=True, slots=True)
class ConnectPreview:
    """What a person is shown before a connection is made."""

    server: str
    transport: str
    target: str  # the command line (secret-looking arguments masked) or the URL's origin
    cwd: str | None
    env_keys: tuple[str, ...]
    header_keys: tuple[str, ...]

    def __str__(self) -> str:
        text = f"{self.server} ({self.transport}): {self.target}"
        if self.cwd:
            text += f"  [cwd {self.cwd}]"
        if self.env_keys:
            text += f"  [env {', '.join(self.env_keys)}]"
        if self.header_keys:
            text += f"  [headers {', '.join(self.header_keys)}]"
        return text


def preview(plan: McpServerPlan) -> ConnectPreview:
    if plan.transport == "stdio":
        redactor = Redactor()
        line = shlex.join([plan.command or "", *plan.args])
        redactor.discover(line)
        target = redactor.redact(line, "operator")
    else:
        target = audit_origin(plan.url or "")
    return ConnectPreview(
        server=plan.server,
        transport=plan.transport,
        target=target,
        cwd=plan.cwd,
        env_keys=tuple(k for k, _ in plan.env),
        header_keys=tuple(k for k, _ in plan.headers),
    )


def expand(text: str, environ: Mapping[str, str], used: dict[str, str]) -> str:
    """Replace each ``${NAME}`` with its value; a missing variable is an
    error rather than an empty string (an empty token fails later, and less
    clearly). Names and values read are recorded in ``used``."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in environ:
            raise LaunchError("mcp-env-missing", f"${{{name}}} is referenced but {name} is not set")
        used[name] = environ[name]
        return environ[name]

    return _VAR.sub(sub, text)


def resolve_cwd(
    cwd: str | None, agent_dir: Path, workspace: Path, *, agent_dir_trusted: bool = False
) -> Path:
    """The server's working directory: ``cwd`` relative to the agent's
    directory, which must end up inside the workspace once symlinks are
    followed. No ``cwd`` means the agent's directory itself.

    ``agent_dir_trusted``: the run compiled the agent's directory itself (a
    project given to ``charter run``), whose files the plan digests; a server
    may then also start inside that directory, where its own code lives,
    though it lies outside the workspace. Nowhere else."""
    target = (agent_dir / cwd).resolve() if cwd is not None else agent_dir.resolve()
    roots = [workspace.resolve()]
    if agent_dir_trusted:
        roots.append(agent_dir.resolve())
    if not any(target == root or root in target.parents for root in roots):
        where = "the workspace or the agent's directory" if agent_dir_trusted else "the workspace"
        raise LaunchError(
            "mcp-cwd-outside-workspace", f"cwd '{cwd or '.'}' resolves outside {where}"
        )
    if not target.is_dir():
        raise LaunchError("mcp-cwd-missing", f"cwd '{cwd or '.'}' is not a directory")
    return target


def child_env(
    plan: McpServerPlan, environ: Mapping[str, str], home: Path, used: dict[str, str]
) -> dict[str, str]:
    """The allowlisted environment plus the manifest's declared entries,
    expanded. A declared name that steers execution (PATH, LD_PRELOAD, ...)
    is refused rather than applied."""
    overlay = {name: expand(value, environ, used) for name, value in plan.env}
    problems = validate_overlay(overlay)
    if problems:
        raise LaunchError("mcp-env-refused", "; ".join(problems))
    return build_env(environ, home=home, overlay=overlay)


@dataclass(frozen=True, slots=True)
class Launch:
    """Everything needed to start or reach one server, after approval."""

    server: str
    transport: str
    command: str | None
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path | None
    url: str | None
    headers: Mapping[str, str]
    redactor: Redactor  # knows every expanded value, to scrub errors and logs


def resolve_launch(
    plan: McpServerPlan,
    *,
    environ: Mapping[str, str],
    home: Path,
    agent_dir: Path,
    workspace: Path,
    agent_dir_trusted: bool = False,
) -> Launch:
    """Expand and check the declaration. Call only after connect approval."""
    used: dict[str, str] = {}
    redactor = Redactor()
    if plan.transport == "stdio":
        if not plan.command:
            raise LaunchError("mcp-no-command", "a stdio server needs a command")
        cwd = resolve_cwd(plan.cwd, agent_dir, workspace, agent_dir_trusted=agent_dir_trusted)
        env = child_env(plan, environ, home, used)
        command = expand(plan.command, environ, used)
        args = tuple(expand(a, environ, used) for a in plan.args)
        url, headers = None, {}
        redactor.discover(shlex.join([command, *args]))
    else:
        if not plan.url:
            raise LaunchError("mcp-no-url", "a streamable_http server needs a url")
        cwd, env, command, args = None, {}, None, ()
        url = expand(plan.url, environ, used)
        headers = {k: expand(v, environ, used) for k, v in plan.headers}
        redactor.discover(url)
        for k, v in headers.items():
            redactor.add(v, k, "header")
    for name, value in used.items():
        redactor.add(value, name, "env")
    for name, _written in plan.env:
        if sensitive_name(name) and name in env:
            redactor.add(env[name], name, "env")
    return Launch(plan.server, plan.transport, command, args, env, cwd, url, headers, redactor)


def contain_launch(launch: Launch, wrap: Callable[[list[str]], list[str]]) -> Launch:
    """``launch`` with its command line replaced by ``wrap(command line)``,
    which starts the same server inside the agent's sandbox (an HTTP server
    is not started by Charter and is returned unchanged)."""
    if launch.transport != "stdio" or launch.command is None:
        return launch
    argv = wrap([launch.command, *launch.args])
    return dataclasses.replace(launch, command=argv[0], args=tuple(argv[1:]))
