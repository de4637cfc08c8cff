"""Running a Leviath script tool (``tools/<name>.rhai``) with Charter's own
Rhai interpreter, its host functions reaching the world only through the
plan's gates.

The script's text comes from the plan (sealed by the plan's digest), never
from the disk at run time. ``[tool_script_permissions]`` as the plan
resolved it decides which host functions a script may call; a refused one
throws an error the script can catch, carrying Leviath's ``[denied]`` mark.
Past that:

- ``http_get``/``http_post`` go through the URL policy and the pinned
  transport (the plan's ``allow_local_network`` decides loopback), as the
  built-in web tools do;
- ``env_var`` reads a credential-shaped name only when the user listed it
  in ``[security] allow_env_vars``;
- ``read_file``/``write_file`` are the built-in file tools' own
  implementations: workspace confinement, descriptors opened beneath the
  root, and no person to answer an ask, so an ask is a refusal;
- ``shell`` is judged by the shell guard (only an allow runs, in the
  stage's sandbox when the run has one).

Each host call is recorded in the result's ``host_calls``, which the audit
log keeps with the tool call.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from charter.runtime.results import ToolResult

if TYPE_CHECKING:
    from charter.runtime.plan import ToolEntry
    from charter.runtime.policy.session import Session
    from charter.runtime.rhai import Script
    from charter.runtime.tools.base import ToolRuntime

__all__ = ["run_script_tool", "sensitive_env_name"]

GATE = "dispatch"

# Credential-shaped environment names: read only when the user listed them.
_HINTS = ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "PRIVATE", "COOKIE", "SESSION")
_PREFIXES = ("AWS_", "GCP_", "AZURE_", "GOOGLE_APPLICATION", "OPENAI", "ANTHROPIC", "GITHUB_")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def sensitive_env_name(name: str) -> bool:
    """Whether ``name`` looks like it holds a credential (decided on the
    name alone: a check on the value would read the secret to decide)."""
    upper = name.upper()
    return any(h in upper for h in _HINTS) or upper.startswith(_PREFIXES)


def _script(entry: ToolEntry) -> Script | ToolResult:
    from charter.runtime.rhai import RhaiSyntaxError, parse_cached

    assert entry.script is not None
    try:
        # The dispatch gate refused a plan without the script's text.
        return parse_cached(entry.script.source or "", entry.script.path)
    except RhaiSyntaxError as exc:
        return ToolResult("error", f"[error] {entry.name}: {exc}", rule="script-syntax")


def run_script_tool(
    entry: ToolEntry, args: Mapping[str, Any], rt: ToolRuntime, session: Session
) -> ToolResult:
    """Run the script tool ``entry`` with ``args`` as its ``params``."""
    from charter.runtime.rhai import Engine, RhaiError
    from charter.runtime.rhai.builtins import to_json_text

    script = _script(entry)
    if isinstance(script, ToolResult):
        return script
    host = _Host(entry, rt, session)
    engine = Engine(host=host.functions())
    try:
        value = engine.run(script, {"params": dict(args)})
    except RhaiError as exc:
        # Leviath hands a failed script back as text the model can read.
        return ToolResult(
            "error",
            f"[error] {entry.name}: {exc}",
            rule="script-error",
            data={"host_calls": host.calls},
        )
    if isinstance(value, str):
        text = value
    elif value is None:
        text = ""
    else:
        try:
            text = to_json_text(value)
        except Exception as exc:  # a value JSON cannot hold (a function pointer)
            text = f"[error] cannot serialize result: {exc}"
    return ToolResult("ok", text, data={"host_calls": host.calls})


class _Host:
    """The host functions of one script call, and the record of each use."""

    def __init__(self, entry: ToolEntry, rt: ToolRuntime, session: Session) -> None:
        self.entry = entry
        self.rt = rt
        self.session = session
        self.calls: list[dict[str, str]] = []
        perms = session.agent.agent.script_permissions
        self.allowed = {
            fn: (getattr(perms, fn).effective == "allow") if perms is not None else False
            for fn in ("http_get", "http_post", "shell", "read_file", "write_file", "env_var")
        }

    def functions(self) -> dict[str, Any]:
        from charter.runtime.rhai import HostFunction

        def wrap(name: str, arities: set[int], fn: Any) -> HostFunction:
            return HostFunction(name, frozenset(arities), self._guarded(name, fn))

        return {
            "http_get": wrap("http_get", {1, 2}, self.http_get),
            "http_post": wrap("http_post", {2, 3}, self.http_post),
            "env_var": wrap("env_var", {1}, self.env_var),
            "read_file": wrap("read_file", {1}, self.read_file),
            "write_file": wrap("write_file", {2}, self.write_file),
            "shell": wrap("shell", {1}, self.shell),
        }  # fmt: skip

    def _guarded(self, name: str, fn: Any) -> Any:
        from charter.runtime.rhai import HostError

        def call(*args: Any) -> object:
            target = str(args[0])[:200] if args else ""
            if not self.allowed[name]:
                self.calls.append({"fn": name, "target": target, "outcome": "denied"})
                raise HostError(
                    f"[denied] script host function '{name}' is denied by tool_script_permissions"
                )
            for a in args:
                if a is not None and not isinstance(a, (str, dict)):
                    raise HostError(f"{name}: expected text arguments, got {type(a).__name__}")
            try:
                result = fn(*args)
            except HostError as exc:
                self.calls.append(
                    {"fn": name, "target": target, "outcome": f"error: {str(exc)[:200]}"}
                )
                raise
            self.calls.append({"fn": name, "target": target, "outcome": "ok"})
            return result

        return call

    def http_get(self, url: str, headers: Mapping[str, object] | None = None) -> str:
        return self.http("GET", url, None, headers)

    def http_post(self, url: str, body: str, headers: Mapping[str, object] | None = None) -> str:
        return self.http("POST", url, body, headers)

    def http(
        self, method: str, url: str, body: str | None, headers: Mapping[str, object] | None
    ) -> str:
        import httpx

        from charter.runtime.net.transport import BlockedRequest
        from charter.runtime.rhai import HostError
        from charter.runtime.tools import web

        cfg = self.rt.web if isinstance(self.rt.web, web.WebConfig) else web.WebConfig()
        if self.session.agent.agent.allow_local_network and not cfg.allow_local_network:
            cfg = replace(cfg, allow_local_network=True)
        sent = {str(k): str(v) for k, v in (headers or {}).items()}
        limit = 1_000_000
        try:
            with (
                web._client(cfg, cfg.timeout_s) as client,
                client.stream(method, url, content=body, headers=sent) as resp,
            ):
                chunks: list[bytes] = []
                size = 0
                # decoded in bounded steps: iter_bytes inflates a whole
                # network chunk at once (a nested gzip reaches gigabytes)
                for chunk in web.iter_body(resp):
                    size += len(chunk)
                    if size > 4 * limit:  # past any text the engine can hold
                        raise HostError(
                            f"the response from {url} is larger than the engine's 1MB string limit"
                        )
                    chunks.append(chunk)
                status = resp.status_code
                ctype = resp.headers.get("content-type", "")
                raw = b"".join(chunks)
        except BlockedRequest as exc:
            raise HostError(f"[denied] {exc}") from None
        except web.BadEncoding as exc:
            raise HostError(f"unreadable body from {url}: {exc}") from None
        except httpx.TimeoutException:
            raise HostError(f"the request to {url} timed out") from None
        except httpx.InvalidURL as exc:
            raise HostError(f"[denied] invalid URL '{url}': {exc}") from None
        except httpx.HTTPError as exc:
            raise HostError(f"connection failed: {type(exc).__name__}: {exc}") from None
        text = raw.decode(resp.encoding or "utf-8", errors="replace")
        if status >= 400:
            raise HostError(f"HTTP {status}: {text[:2000]}")
        essence = ctype.split(";")[0].strip().lower()
        if essence and not (
            essence.startswith("text/")
            or any(k in essence for k in ("json", "xml", "javascript", "x-yaml", "urlencoded"))
        ):
            raise HostError(f"unreadable body: the response is {essence}, not text")
        if len(text) > limit:
            raise HostError(f"the response from {url} is larger than the engine's 1MB string limit")
        return text

    def env_var(self, name: str) -> str:
        from charter.runtime.rhai import HostError

        allowed = {n.upper() for n in self.session.agent.agent.allow_env_vars}
        if not _NAME.fullmatch(name):
            raise HostError(f"'{name}' is not an environment variable name")
        if sensitive_env_name(name) and name.upper() not in allowed:
            raise HostError(
                f"[denied] '{name}' looks like a credential. Add it to `[security] "
                "allow_env_vars` in your config.toml if this agent is meant to read it."
            )
        source = self.rt.secret_env if sensitive_env_name(name) else (self.rt.env or os.environ)
        value = source.get(name)
        if value is None:
            raise HostError(f"environment variable '{name}' is not set")
        return value

    def read_file(self, path: str) -> str:
        from charter.runtime.rhai import HostError
        from charter.runtime.tools.files import run_read

        result = run_read({"path": path}, self.rt, "read_file", False)
        if not result.ok:
            raise HostError(result.content)
        return result.content

    def write_file(self, path: str, content: str) -> str:
        from charter.runtime.rhai import HostError
        from charter.runtime.tools.files import run_write

        result = run_write({"path": path, "content": content}, self.rt, "write_file", False)
        if not result.ok:
            raise HostError(result.content)
        return result.content

    def shell(self, command: str) -> str:
        from charter.runtime.rhai import HostError
        from charter.runtime.tools.shell import unattended_shell

        result = unattended_shell(
            self.session, self.rt, command, may_write=self.allowed["write_file"]
        )
        if result.status != "ok":
            raise HostError(result.content)
        return result.content
