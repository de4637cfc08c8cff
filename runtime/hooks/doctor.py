"""Examining a client's Charter hook: is it installed, does it load, does it answer?

What ``charter doctor`` reports, for Claude Code or Gemini CLI and a
workspace: the settings files the client reads (the workspace's, the
user's, the managed ones), the Charter hooks in them, and for each:

* installed: the hook runs for every tool, nothing switches hooks off
  (``disableAllHooks``, Gemini CLI's ``hooksConfig``), Gemini CLI will load a
  project hook (the folder is trusted);
* loads: the command's program exists, the plan loads and holds the agent and
  is newer than its policy, or ``charter serve`` answers ``/v1/health``;
* answers: the hook is run as the client runs it (``sh -c`` with an event on
  stdin, or a POST to the URL): a write outside the workspace must be denied,
  and a read inside must get a well-formed answer.

Checks that need the compiler (the client rules a policy carries) are the
caller's, passed in as ``plan_checks``: the runtime never imports it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from charter.runtime.plan.loader import PlanError
from charter.runtime.plan.prepared import load_for_agents
from charter.runtime.plan.vocabulary import PERMISSIONS

__all__ = ["DoctorReport", "HookExam", "PlanCheck", "examine_hooks", "plan_of"]

_EVENTS = {"claude-code": "PreToolUse", "gemini-cli": "BeforeTool"}
_EVERY_TOOL = {"", "*", ".*"}


@dataclass
class DoctorReport:
    """The lines said about one client (``ok``, ``warn``: it works but fails
    open in some case, ``FAIL``) and whether any failed."""

    lines: list[str] = field(default_factory=list)
    failed: bool = False

    def ok(self, text: str) -> None:
        self.lines.append(f"  ok    {text}")

    def warn(self, text: str) -> None:
        self.lines.append(f"  warn  {text}")

    def fail(self, text: str) -> None:
        self.failed = True
        self.lines.append(f"  FAIL  {text}")


# A check of a hook's plan file the caller adds (plan, agent, workspace, report).
PlanCheck = Callable[[Path, "str | None", Path, DoctorReport], None]


@dataclass(frozen=True, slots=True)
class HookExam:
    """How hooks are examined: the workspace, how long a hook may take to
    answer, the options of ``charter hook`` that take no value (to find the
    plan on a hook's command line), and the caller's own plan checks."""

    root: Path
    timeout: float
    hook_flags: frozenset[str]
    plan_checks: Sequence[PlanCheck] = ()


def _settings_files(client: str, root: Path) -> list[Path]:
    home = Path.home()
    if client == "claude-code":
        return [
            root / ".claude" / "settings.json",
            root / ".claude" / "settings.local.json",
            home / ".claude" / "settings.json",
            Path("/etc/claude-code/managed-settings.json"),
        ]
    return [
        root / ".gemini" / "settings.json",
        home / ".gemini" / "settings.json",
        Path("/etc/gemini-cli/settings.json"),
    ]


def _read_json(path: Path) -> dict[str, Any] | str:
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except json.JSONDecodeError as exc:
        return f"is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    return data if isinstance(data, dict) else "does not hold a JSON object"


def _charter_hooks(settings: dict[str, Any], client: str) -> list[tuple[str, dict[str, Any]]]:
    """(matcher, hook) for every Charter hook of the client's pre-tool event."""
    found = []
    for group in (settings.get("hooks") or {}).get(_EVENTS[client]) or []:
        if not isinstance(group, dict):
            continue
        for hook in group.get("hooks") or []:
            if not isinstance(hook, dict):
                continue
            text = f"{hook.get('command', '')} {hook.get('url', '')}"
            if f"hook {client}" in text or f"/v1/hooks/{client}" in text:
                found.append((str(group.get("matcher", "")), hook))
    return found


def _probe_events(client: str, root: Path) -> list[tuple[str, dict[str, Any], str | None]]:
    """(what, event, the answer it must get or None for any well-formed one)."""
    base: dict[str, Any] = {"session_id": "charter-doctor", "cwd": str(root),
                            "hook_event_name": _EVENTS[client]}  # fmt: skip
    probe = {"file_path": "/etc/charter-doctor-probe", "content": "x"}
    if client == "claude-code":
        base["permission_mode"] = "default"
        outside = {"tool_name": "Write", "tool_input": probe}
        inside = {"tool_name": "Read", "tool_input": {"file_path": str(root / "README.md")}}
    else:
        outside = {"tool_name": "write_file", "tool_input": probe}
        inside = {"tool_name": "read_file", "tool_input": {"file_path": "README.md"}}
    return [
        ("a write outside the workspace", {**base, **outside}, "deny"),
        ("a read inside the workspace", {**base, **inside}, None),
    ]


def _decision(client: str, text: str) -> str | None:
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(answer, dict):
        return None
    if client == "claude-code":
        out = answer.get("hookSpecificOutput")
        if isinstance(out, dict) and out.get("permissionDecision") in PERMISSIONS:
            return str(out["permissionDecision"])
        return None
    if answer.get("decision") in PERMISSIONS:
        return str(answer["decision"])
    return "defer" if set(answer) <= {"systemMessage"} else None


def _check_command(client: str, hook: dict[str, Any], exam: HookExam, rep: DoctorReport) -> None:
    root = exam.root
    command = str(hook.get("command", ""))
    if "exit 2" not in command or ">&2" not in command:
        rep.warn(
            "the command does not end in `|| { echo MESSAGE >&2; exit 2; }`: if it cannot "
            "start or crashes, "
            + (
                "Claude Code runs the call"
                if client == "claude-code"
                else "Gemini CLI runs the call (it blocks on exit 2 only with a message)"
            )
        )
    head = command.split("||", 1)[0]
    try:
        words = shlex.split(head)
    except ValueError as exc:
        rep.fail(f"the command cannot be read as a shell line ({exc})")
        return
    if not words:
        rep.fail("the command is empty")
        return
    # The clients set these to the project's folder when they run a hook;
    # init writes them so the committed settings name no machine's path.
    project = str(root)
    words = [
        w.replace("${CLAUDE_PROJECT_DIR}", project)
        .replace("$CLAUDE_PROJECT_DIR", project)
        .replace("${GEMINI_PROJECT_DIR}", project)
        .replace("$GEMINI_PROJECT_DIR", project)
        for w in words
    ]
    program = words[0]
    found = program if os.path.isabs(program) else shutil.which(program)
    if found is None or not os.access(found, os.X_OK):
        rep.fail(f"{program} is not an executable program (give its absolute path)")
        return
    rep.ok(f"{found} exists")
    if "curl" in os.path.basename(program):
        url = next((w for w in words if w.startswith("http")), None)
        if url is not None:
            _check_health(url, _curl_headers(words, root), rep)
        return
    plan = plan_of(words, exam.hook_flags)
    if plan is not None:
        agent = words[words.index("--agent") + 1] if "--agent" in words[:-1] else None
        _check_plan(plan, agent, rep)
        _check_fresh(Path(plan), root, rep)
        for check in exam.plan_checks:
            check(Path(plan), agent, root, rep)


def plan_of(words: list[str], flags: frozenset[str]) -> str | None:
    """The plan a hook command names: the positional after ``hook CLIENT``,
    or the older ``--plan PLAN`` that hooks written before still carry.
    ``flags``: the hook's options that take no value."""
    if "--plan" in words[:-1]:
        return words[words.index("--plan") + 1]
    for i, word in enumerate(words[:-2]):
        if word == "hook" and words[i + 1] in ("claude-code", "gemini-cli"):
            rest = iter(words[i + 2 :])
            for w in rest:
                if w in ("||", "&&", ";", "|"):
                    return None
                if w.startswith("-"):
                    if "=" not in w and w not in flags:
                        next(rest, None)  # the option's value
                    continue
                return w
    return None


def _check_fresh(plan: Path, root: Path, rep: DoctorReport) -> None:
    """A plan older than the policy it was compiled from decides by rules
    nobody sees any more: name the newest file changed since."""
    policy = root / ".charter" / "policy"
    try:
        compiled = plan.stat().st_mtime
    except OSError:
        return  # the plan check has said why it does not load
    newer = [
        p for p in (policy.rglob("*") if policy.is_dir() else ()) if p.is_file()
        and p.stat().st_mtime > compiled
    ]  # fmt: skip
    if newer:
        changed = max(newer, key=lambda p: p.stat().st_mtime)
        rep.fail(
            f"the plan is older than its policy ({changed.relative_to(root)} changed after "
            f"{plan.name} was compiled): the hook decides by the old rules; compile again "
            f"(charter compile {policy} -o {plan})"
        )
    elif policy.is_dir():
        rep.ok("the plan is newer than every file of its policy")


def _check_plan(plan: str, agent: str | None, rep: DoctorReport) -> None:
    try:
        loaded = load_for_agents(plan, [agent] if agent else None)
    except PlanError as exc:
        rep.fail(f"the plan does not load: {exc}")
        return
    names = loaded.agent_names
    if agent is None and len(names) != 1:
        rep.fail(f"the plan holds {len(names)} agents; the hook must pass --agent")
        return
    rep.ok(f"the plan loads ({loaded.plan.digest}, agent {agent or names[0]})")


def _curl_headers(words: list[str], root: Path) -> dict[str, str]:
    """The headers a curl hook command sends (``-H 'Name: value'``, and each
    line of ``-H @FILE``: the token file init writes), so the health check
    asks as the hook asks."""
    out: dict[str, str] = {}
    for flag, value in zip(words, words[1:], strict=False):
        if flag not in ("-H", "--header"):
            continue
        lines = [value]
        if value.startswith("@"):
            try:
                lines = (root / value[1:]).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                lines = []
        for line in lines:
            name, sep, text = line.partition(":")
            if sep:
                out[name.strip()] = text.strip()
    return out


def _http_headers(hook: dict[str, Any], root: Path) -> dict[str, str]:
    """The headers Claude Code's http hook sends: its variables from the
    environment or the ``env`` of the workspace's settings.local.json (where
    init puts the token), only those the hook allows."""
    env = dict(os.environ)
    try:
        local = json.loads((root / ".claude" / "settings.local.json").read_text("utf-8"))
        env.update({str(k): str(v) for k, v in (local.get("env") or {}).items()})
    except (OSError, ValueError, AttributeError):
        pass
    allowed = {str(v) for v in hook.get("allowedEnvVars") or []}

    def expand(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, "") if name in allowed else ""

    return {
        str(k): re.sub(r"\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)", expand, str(v))
        for k, v in (hook.get("headers") or {}).items()
    }


def _check_health(hook_url: str, headers: dict[str, str], rep: DoctorReport) -> None:
    base = hook_url.split("/v1/hooks/", 1)[0]
    request = urllib.request.Request(base + "/v1/health", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            health = json.loads(resp.read())
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as exc:
        rep.fail(f"charter serve does not answer at {base}/v1/health ({exc})")
        return
    plan = health.get("plan") or {}
    rep.ok(f"charter serve answers at {base} (plan {plan.get('digest')}, agents "
           f"{', '.join(plan.get('agents') or [])})")  # fmt: skip
    if health.get("last_error"):
        rep.warn(f"the server refused its latest plan and keeps the last good one: "
                 f"{health['last_error']}")  # fmt: skip


def _answer(client: str, hook: dict[str, Any], event: dict[str, Any], root: Path,
            timeout: float) -> tuple[str, float]:  # fmt: skip
    """The hook's raw answer to ``event``, run as the client runs it."""
    data = json.dumps(event).encode()
    start = time.monotonic()
    if hook.get("type") == "http":
        headers = {"Content-Type": "application/json", **_http_headers(hook, root)}
        request = urllib.request.Request(str(hook.get("url")), data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            text = resp.read().decode("utf-8", "replace")
    else:
        proc = subprocess.run(
            ["/bin/sh", "-c", str(hook.get("command", ""))], input=data, cwd=root,
            capture_output=True, timeout=timeout,
            env={**os.environ, "CLAUDE_PROJECT_DIR": str(root), "GEMINI_PROJECT_DIR": str(root)},
        )  # fmt: skip
        text = proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 0:
            text = f"exit {proc.returncode}: {proc.stderr.decode('utf-8', 'replace')[-300:]}"
    return text, (time.monotonic() - start) * 1000


def _check_hook(
    client: str, matcher: str, hook: dict[str, Any], exam: HookExam, rep: DoctorReport
) -> None:
    root, timeout = exam.root, exam.timeout
    if matcher in _EVERY_TOOL:
        rep.ok(f"the hook runs for every tool (matcher {matcher!r})")
    else:
        rep.warn(f"the hook runs only for tools matching {matcher!r}; the others are not decided")
    if hook.get("type") == "http":
        if hook.get("onFailure") == "block":
            rep.ok("the http hook blocks the call when the server cannot answer (onFailure: "
                   "block; Claude Code before 2.1.3xx ignores it and runs the call)")  # fmt: skip
        else:
            rep.warn(
                "Claude Code's http hook runs the call when the server is down or slow; add "
                '"onFailure": "block" (or use a curl command hook ending in `exit 2`)'
            )
        _check_health(str(hook.get("url", "")), _http_headers(hook, root), rep)
    else:
        _check_command(client, hook, exam, rep)
    wait = hook.get("timeout")
    if client == "claude-code" and isinstance(wait, int | float) and wait <= 8:
        rep.warn(f"the hook's timeout ({wait:g} s) is not above the hook's own time limit "
                 "(8 s): a slow decision is run instead of denied")  # fmt: skip
    for what, event, must in _probe_events(client, root):
        try:
            text, ms = _answer(client, hook, event, root, timeout)
        except (OSError, subprocess.TimeoutExpired, urllib.error.URLError) as exc:
            rep.fail(f"no answer to {what} ({exc})")
            continue
        got = _decision(client, text)
        if got is None:
            rep.fail(f"{what}: the answer is not a hook decision: {text[:200]!r}")
        elif must is not None and got != must:
            rep.fail(f"{what} gets {got}, not {must}")
        else:
            rep.ok(f"answers {what} with {got} ({ms:.0f} ms)")


def examine_hooks(client: str, exam: HookExam) -> tuple[DoctorReport, int]:
    """What is found about ``client``'s Charter hooks for ``exam.root``, and
    how many hooks were found."""
    root = exam.root
    rep = DoctorReport()
    name = "Claude Code" if client == "claude-code" else "Gemini CLI"
    hooks = 0
    for path in _settings_files(client, root):
        if not path.exists():
            continue
        settings = _read_json(path)
        if isinstance(settings, str):
            rep.fail(f"{path} {settings}: {name} may ignore it")
            continue
        if client == "claude-code" and settings.get("disableAllHooks") is True:
            rep.fail(f"{path} sets disableAllHooks: no hook runs")
        if client == "gemini-cli":
            cfg = settings.get("hooksConfig") or {}
            if isinstance(cfg, dict) and cfg.get("enabled") is False:
                rep.fail(f"{path} sets hooksConfig.enabled to false: no hook runs")
            if isinstance(cfg, dict) and "charter" in (cfg.get("disabled") or []):
                rep.fail(f"{path} lists charter in hooksConfig.disabled")
        for matcher, hook in _charter_hooks(settings, client):
            hooks += 1
            rep.lines.append(f"{name}: Charter hook in {path}")
            if client == "gemini-cli" and path.is_relative_to(root):
                _gemini_trust(root, rep)
            _check_hook(client, matcher, hook, exam, rep)
    return rep, hooks


def _gemini_trust(root: Path, rep: DoctorReport) -> None:
    if os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        rep.ok("GEMINI_CLI_TRUST_WORKSPACE=true: Gemini CLI loads this project's hooks")
        return
    trusted = Path.home() / ".gemini" / "trustedFolders.json"
    data = _read_json(trusted) if trusted.exists() else {}
    if isinstance(data, dict):
        for folder, level in data.items():
            where = Path(folder)
            if (level == "TRUST_FOLDER" and where == root) or (
                level in ("TRUST_PARENT", "TRUST_FOLDER") and root.is_relative_to(where)
            ):
                rep.ok(f"{trusted} trusts {folder}: Gemini CLI loads this project's hooks")
                return
    rep.warn(
        "the folder is not trusted yet: Gemini CLI loads this project's hooks only once it is "
        "(it asks on the first interactive run), and never with --skip-trust (put the hook in "
        "~/.gemini/settings.json for those: charter init gemini-cli --user)"
    )
