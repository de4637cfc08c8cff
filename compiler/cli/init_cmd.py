"""``charter init claude-code|gemini-cli [DIR]``: put Charter in front of a coding client.

Writes, below DIR (default: the current directory):

* ``.charter/policy/<agent>/agent.leviath``: a starter policy (reading is
  free; writing, the shell, the web and sub-agents ask first), in Charter's
  own directory, where the agent's tools may not write;
* ``.charter/plan.json``: that policy compiled (with the user's config, as
  ``charter compile`` does);
* the client's project settings (``.claude/settings.json`` or
  ``.gemini/settings.json``; ``--user`` for the user's own) with the hook:
  ``charter hook ...`` with absolute paths, or with ``--serve URL`` a ``curl``
  command to ``charter serve`` (``--http`` for Claude Code's own http hook);
* ``.charter/serve/token``: a random token, readable by the user only, that
  ``charter serve`` requires on every request; the curl hook sends it from
  the file, Claude Code's http hook from ``.claude/settings.local.json``.

Every command hook ends in :data:`FAIL_CLOSED` (exit 2 with a message on
stderr), so a hook that cannot start blocks the call instead of letting it
run: both clients block on exit 2, and Gemini CLI only when something was
printed. A settings file that exists is not
touched without ``--force``; with it, its other settings and hooks are kept
and only an earlier Charter hook is replaced. A policy that exists is kept
(the second client of a workspace shares it) unless ``--force``; the plan is
compiled from whichever policy is there.

Exit codes: 0 written; 1 refused (the settings file exists, the policy
does not compile); 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "FAIL_CLOSED",
    "STARTER_POLICY",
    "TOKEN_FILE",
    "add_arguments",
    "charter_command",
    "ensure_token",
    "portable_command",
    "hook_entry",
    "run",
]

# What a hook command ends in: when the command before it fails (cannot
# start, crashes), exit 2 blocks the call. Gemini CLI 0.61 ignores an exit 2
# that printed nothing, hence the message.
FAIL_CLOSED = " || { echo 'charter: the hook could not run' >&2; exit 2; }"

# Seconds Claude Code waits for the hook; the hook's own --time-limit (8 s by
# default) answers deny before that.
CLAUDE_TIMEOUT = 10
GEMINI_TIMEOUT_MS = 30_000
# Seconds Claude Code's http hook waits for charter serve: above the longest
# the server takes to answer (its --time-limit, 5 s by default, plus at most
# 2 s for the decision to reach its log), so the client has Charter's deny
# rather than a timeout.
CLAUDE_HTTP_TIMEOUT = 15

# The token charter serve requires on every request, kept in the private
# part of .charter/ (serve/ is in the .gitignore init writes), as the header
# line a curl hook sends with -H @FILE; the variable Claude Code's http hook
# reads it from (set in .claude/settings.local.json, which is not committed).
TOKEN_FILE = Path(".charter") / "serve" / "token"
TOKEN_VAR = "CHARTER_SERVE_TOKEN"

STARTER_POLICY = """\
# Charter's policy for {client} in this workspace: every tool call {client}
# makes is decided from this file, compiled to .charter/plan.json. After an
# edit, compile again:
#
#   charter compile .charter/policy/{agent} -o .charter/plan.json
#
# (`charter serve .charter/policy/{agent}` compiles it by itself on change.)
# This file may not set a tool looser than Charter's built-in default, and
# your own config.toml may tighten it but never loosen it: a tool set to "ask"
# here keeps asking whatever your config says (charter validate warns, CH415).
# To let {client} keep its todo list or search without asking, delete their
# lines below, then allow those tools for this agent in your config.toml
# ([agent_tool_permissions.{agent}]).

[agent]
name = "{agent}"
version = "1.0.0"
description = "What {client} may do in this workspace"
entry_stage = "work"

[stages.work]
mode = "interactive"
description = "Work in this repository with a person watching"
available_tools = [
  "read_file", "read_files", "list_dir", "search_files",
  "write_file", "edit_file", "patch", "shell", "terminal",
  "web_fetch", "web_search", "todo",
  "delegate_task", "send_to_agent", "task_list", "task_status", "task_control", "yield_until",
  "skill_view", "clarify", "ask_user_text", "ask_user_confirm", "schedule_manage",
]
system_prompt = "Work in this repository."

# Reading is free; the shell guard lets read-only commands through and asks
# about the rest. Paths outside the workspace are refused whatever this says,
# and credential files and the clients' own settings always ask a person.
[stages.work.tool_permissions]
read_file = "allow"
read_files = "allow"
list_dir = "allow"
search_files = "ask"
write_file = "ask"
edit_file = "ask"
patch = "ask"
shell = "ask"
terminal = "ask"
web_fetch = "ask"
web_search = "ask"
todo = "ask"
delegate_task = "ask"
send_to_agent = "ask"
task_list = "ask"
task_status = "ask"
task_control = "ask"
yield_until = "ask"
skill_view = "ask"
clarify = "ask"
ask_user_text = "allow"
ask_user_confirm = "allow"
schedule_manage = "ask"
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("client", choices=("claude-code", "gemini-cli"), help="the client to protect")
    p.add_argument("dir", nargs="?", type=Path, default=Path("."), help="the workspace (default .)")
    p.add_argument(
        "--agent", default="assistant", help="the policy's agent name (default assistant)"
    )
    p.add_argument(
        "--serve",
        metavar="URL",
        help="use charter serve at URL (e.g. http://127.0.0.1:8787) instead of a hook command",
    )
    p.add_argument(
        "--http",
        action="store_true",
        help="claude-code with --serve: Claude Code's own http hook (runs the call when the "
        "server is down) instead of a curl command (blocks it)",
    )
    p.add_argument(
        "--user",
        action="store_true",
        help="write the hook into the user's settings (~/.claude or ~/.gemini) instead of the "
        "workspace's (Gemini CLI loads no project hook with --skip-trust)",
    )
    p.add_argument(
        "--contain",
        action="store_true",
        help="hook command only: run every shell command Charter allows inside the stage's "
        "sandbox (charter hook CLIENT --contain)",
    )
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.add_argument("--config", type=Path, help="the user config.toml used to compile")
    p.add_argument("--no-user-config", action="store_true", help="ignore the user's config")


def charter_command() -> list[str]:
    """The absolute command that runs this Charter."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "charter" and argv0.exists():
        return [str(argv0.resolve())]
    beside = Path(sys.executable).parent / "charter"
    if beside.exists():
        return [str(beside)]
    return [str(Path(sys.executable).resolve()), "-m", "charter.compiler"]


# The variable each client sets to the project's folder when it runs a hook.
PROJECT_VAR = {"claude-code": "CLAUDE_PROJECT_DIR", "gemini-cli": "GEMINI_PROJECT_DIR"}


def portable_command(root: Path, client: str) -> tuple[str, bool]:
    """The shell text that runs this Charter from a settings file teams
    commit, and whether it is portable: ``charter`` when that name on PATH is
    this Charter, a path under the project's folder variable when Charter is
    installed inside the project (a ``.venv`` there), else this machine's
    absolute command (False)."""
    mine = [Path(p) for p in charter_command()]
    found = shutil.which("charter")
    if len(mine) == 1 and found is not None and Path(found).resolve() == mine[0].resolve():
        return "charter", True
    if len(mine) == 1:
        for candidate in (mine[0], mine[0].resolve()):
            try:
                rel = candidate.relative_to(root)
            except ValueError:
                continue
            return f'"${PROJECT_VAR[client]}"/{shlex.quote(rel.as_posix())}', True
    return shlex.join(str(p) for p in mine), False


def hook_entry(
    client: str,
    plan: Path,
    agent: str,
    *,
    serve: str | None = None,
    http: bool = False,
    root: Path | None = None,
    token: Path | None = None,
) -> dict[str, Any]:
    """The settings entry of one Charter hook. With ``root`` (project
    settings, which teams commit) the command names no path of this machine
    where it can: the plan through the client's project-folder variable.
    With ``serve``, the hook sends the server's token (``token``: its file)."""
    if serve is not None:
        url = serve.rstrip("/") + f"/v1/hooks/{client}"
        if http:
            return _http_hook(url, token is not None)
        command = (
            "curl -sS --fail --max-time 8 -H 'Content-Type: application/json' "
            + _curl_token(client, token, root)
            + f"--data-binary @- {shlex.quote(url)}"
            + FAIL_CLOSED
        )
    elif root is not None:
        program, _portable = portable_command(root, client)
        try:
            where = f'"${PROJECT_VAR[client]}"/{shlex.quote(plan.relative_to(root).as_posix())}'
        except ValueError:
            where = shlex.quote(str(plan))
        args = shlex.join(["--agent", agent, *_client_args(client)])
        command = f"{program} hook {client} {where} {args}" + FAIL_CLOSED
    else:
        argv = [*charter_command(), "hook", client, str(plan), "--agent", agent,
                *_client_args(client)]  # fmt: skip
        command = shlex.join(argv) + FAIL_CLOSED
    if client == "claude-code":
        return {"type": "command", "command": command, "timeout": CLAUDE_TIMEOUT}
    return {"name": "charter", "type": "command", "command": command, "timeout": GEMINI_TIMEOUT_MS}


def _contained(entry: dict[str, Any], client: str) -> dict[str, Any]:
    """The client's hook command with ``--contain``: an allowed shell command
    runs inside the stage's sandbox (see charter.runtime.hooks.contain)."""
    command = str(entry["command"])
    at = command.index(f" hook {client} ") + len(f" hook {client}")
    return {**entry, "command": command[:at] + " --contain" + command[at:]}


def _client_args(client: str) -> list[str]:
    """What the hook command adds for ``client``: for Gemini CLI, put the
    plan's ask to the person when the session has one at its terminal (a
    headless run, where Gemini CLI's ask would wait forever, gets deny)."""
    return ["--ask", "auto"] if client == "gemini-cli" else []


def _http_hook(url: str, with_token: bool) -> dict[str, Any]:
    """Claude Code's own http hook: it blocks the call when the server cannot
    answer (``onFailure``; older versions ignore the key and run the call),
    and sends the token from the variable init sets in settings.local.json."""
    hook: dict[str, Any] = {
        "type": "http",
        "url": url,
        "timeout": CLAUDE_HTTP_TIMEOUT,
        "onFailure": "block",
    }
    if with_token:
        hook["headers"] = {"Authorization": f"Bearer ${TOKEN_VAR}"}
        hook["allowedEnvVars"] = [TOKEN_VAR]
    return hook


def _curl_token(client: str, token: Path | None, root: Path | None) -> str:
    """curl's option that sends the token file's header line (none without a
    token); in project settings, through the project-folder variable. A
    missing token file makes curl fail, and the hook block."""
    if token is None:
        return ""
    if root is not None:
        try:
            rel = token.relative_to(root).as_posix()
            return f'-H @"${PROJECT_VAR[client]}"/{shlex.quote(rel)} '
        except ValueError:
            pass
    return f"-H {shlex.quote('@' + str(token))} "


def ensure_token(root: Path) -> tuple[Path, bool]:
    """The workspace's serve token file, written (user-only, 0600, in a
    0700 folder) with a new random token unless one is there; and whether it
    was written now. An existing one is kept: servers and other clients of
    the workspace already use it."""
    path = root / TOKEN_FILE
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        os.chmod(path, 0o600, follow_symlinks=False)
        return path, False
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(f"Authorization: Bearer {secrets.token_urlsafe(32)}\n")
    return path, True


def _token_value(path: Path) -> str:
    line = path.read_text(encoding="ascii").strip()
    return line.rpartition(" ")[2]


def _token_in_local_settings(root: Path, token: Path) -> Path:
    """Put the token in ``.claude/settings.local.json``'s ``env`` (Claude
    Code's settings that are not committed; other keys kept), readable by the
    user only: Claude Code's http hook sends it from there."""
    local = root / ".claude" / "settings.local.json"
    current: dict[str, Any] = {}
    if local.exists():
        loaded = json.loads(local.read_text(encoding="utf-8") or "{}")
        if isinstance(loaded, dict):
            current = loaded
    env = dict(current.get("env") or {})
    env[TOKEN_VAR] = _token_value(token)
    current["env"] = env
    local.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(local.with_name(local.name + ".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 0o600)  # fmt: skip
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(current, indent=2) + "\n")
    os.replace(local.with_name(local.name + ".tmp"), local)
    _excluded_from_git(root, ".claude/settings.local.json")
    return local


def _excluded_from_git(root: Path, name: str) -> None:
    """Name ``name`` in the repository's own exclude file (never committed)
    when ``root`` is a git work tree, so a token cannot be committed by mistake."""
    exclude = root / ".git" / "info" / "exclude"
    if not (root / ".git").is_dir():
        return
    try:
        current = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if name in current.split():
            return
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as out:
            out.write(("" if current.endswith("\n") or not current else "\n") + name + "\n")
    except OSError:
        pass  # a convenience: the file is private by its mode all the same


def _is_charter_hook(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    text = f"{hook.get('command', '')} {hook.get('url', '')}"
    return (
        hook.get("name") == "charter"
        or "/v1/hooks/" in text
        or " hook claude-code " in text
        or (" hook gemini-cli " in text)
    )


def _merged(current: dict[str, Any], client: str, entry: dict[str, Any]) -> dict[str, Any]:
    """``current`` settings with Charter's hook replaced (or added), the rest kept."""
    event = "PreToolUse" if client == "claude-code" else "BeforeTool"
    matcher = "*" if client == "claude-code" else ".*"
    out = dict(current)
    hooks = dict(out.get("hooks") or {})
    groups = []
    for group in hooks.get(event) or []:
        if not isinstance(group, dict):
            groups.append(group)
            continue
        kept = [h for h in group.get("hooks") or [] if not _is_charter_hook(h)]
        if kept:
            groups.append({**group, "hooks": kept})
    # First, so Charter decides before any other hook runs.
    hooks[event] = [{"matcher": matcher, "hooks": [entry]}, *groups]
    out["hooks"] = hooks
    return out


def run(args: argparse.Namespace) -> int:
    client: str = args.client
    if args.http and (client != "claude-code" or args.serve is None):
        print("charter init: --http needs claude-code and --serve", file=sys.stderr)
        return 2
    if args.contain and args.serve is not None:
        print("charter init: --contain needs the hook command (no --serve)", file=sys.stderr)
        return 2
    root: Path = args.dir.resolve()
    if not root.is_dir():
        print(f"charter init: {root}: no such directory", file=sys.stderr)
        return 2
    agent: str = args.agent
    policy = root / ".charter" / "policy" / agent / "agent.leviath"
    plan = root / ".charter" / "plan.json"
    folder = ".claude" if client == "claude-code" else ".gemini"
    base = Path.home() if args.user else root
    settings = base / folder / "settings.json"

    if settings.exists() and not args.force:
        print(
            f"charter init: {settings} exists; pass --force to put Charter's hook in it "
            "(its other settings and hooks are kept)",
            file=sys.stderr,
        )
        return 1
    current: dict[str, Any] = {}
    if settings.exists():
        try:
            loaded = json.loads(settings.read_text(encoding="utf-8") or "{}")
        except (OSError, json.JSONDecodeError) as exc:
            print(
                f"charter init: {settings} is not JSON ({exc}); fix or remove it", file=sys.stderr
            )
            return 1
        if not isinstance(loaded, dict):
            print(f"charter init: {settings} does not hold a JSON object", file=sys.stderr)
            return 1
        current = loaded

    name = "Claude Code" if client == "claude-code" else "Gemini CLI"
    # A policy that exists (another client's init, or the user's edits) is
    # kept unless --force; the plan is always compiled from it.
    kept = policy.exists() and not args.force
    backup: Path | None = None
    carried: list[Any] = []
    if not kept:
        starter = STARTER_POLICY.format(client=name, agent=agent)
        if client == "claude-code":
            starter, carried = _with_client_rules(starter, root)
        backup = _back_up_edited(policy, starter)
        policy.parent.mkdir(parents=True, exist_ok=True)
        policy.write_text(starter, encoding="utf-8")
    digest = _compile(policy.parent, plan, args)
    if digest is None:
        return 1
    ignore = _private_records_ignored(root / ".charter")
    token, token_new = ensure_token(root)
    entry = hook_entry(
        client, plan, agent, serve=args.serve, http=args.http,
        root=None if args.user else root, token=token,
    )  # fmt: skip
    if args.contain:
        entry = _contained(entry, client)
    local: Path | None = None
    if args.http:
        try:
            local = _token_in_local_settings(root, token)
        except (OSError, ValueError) as exc:  # (json's errors are ValueErrors)
            print(f"charter init: {root / '.claude' / 'settings.local.json'}: {exc}; fix or "
                  "remove it", file=sys.stderr)  # fmt: skip
            return 1
    settings.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_merged(current, client, entry), indent=2) + "\n"
    settings.write_text(text, encoding="utf-8")

    if kept:
        print(f"kept {policy} (the policy there already; --force writes the starter one)")
    else:
        print(f"wrote {policy} (the policy: edit it, then compile again)")
    if backup is not None:
        print(
            f"kept your edited policy as {backup} (it differed from the starter one; "
            f"see the difference with: diff {backup} {policy})"
        )
    if client == "claude-code":
        _report_client_rules(root, carried, kept=kept)
    print(f"wrote {plan} ({digest})")
    if ignore is not None:
        print(f"wrote {ignore} (commit the policy and the plan; run records stay private)")
    if token_new:
        print(f"wrote {token} (charter serve's token, private to you; every request must carry it)")
    if local is not None:
        print(f"wrote {local} (the token, for Claude Code's http hook; keep it uncommitted)")
    print(f"wrote {settings} ({name}'s hook: {entry.get('command') or entry.get('url')})")
    if not args.user and args.serve is None and not portable_command(root, client)[1]:
        print(
            f"note: charter is not on PATH here, so {settings.name} names this machine's "
            "path to it; teammates who commit and share the file need `charter` on their "
            "PATH (or Charter installed in the project's .venv): then run init again"
        )
    if args.serve is not None:
        target = policy.parent
        print(f"start the server: charter serve {target} --agent {agent} --listen "
              f"{args.serve.split('://', 1)[-1].rstrip('/')}")  # fmt: skip
    if client == "gemini-cli" and not args.user:
        print(
            "Gemini CLI loads a project's hooks only in a trusted folder (it asks on first run; "
            "GEMINI_CLI_TRUST_WORKSPACE=true trusts it); with --skip-trust it loads none: "
            "use --user for those runs"
        )
    print(f"check it: charter doctor {root}")
    return 0


def _with_client_rules(starter: str, root: Path) -> tuple[str, list[Any]]:
    """The starter policy with the workspace's Claude Code permission rules
    carried in (see :mod:`charter.compiler.resolve.client_rules`): a rule for a whole
    tool sets that tool's permission in the stage (only ever stricter, but
    for the web tools a blueprint may allow), an allowed command becomes a
    ``[safe_commands]`` entry. Returns the text and every rule's fate."""
    import re

    from charter.compiler.resolve.client_rules import policy_additions, read_rules, translate
    from charter.runtime.plan.vocabulary import RANK

    rules, problems = read_rules(root)
    found = [translate(r) for r in rules]
    for problem in problems:
        print(f"charter init: {problem}", file=sys.stderr)
    text = starter
    for t in found:
        if t.fate != "carried" or t.decision is None:
            continue
        for tool in t.tools:
            line = re.compile(rf'^{re.escape(tool)} = "(allow|ask|deny)"$', re.MULTILINE)
            hit = line.search(text)
            if hit is None:
                continue
            now = hit.group(1)
            if t.decision == "allow":
                if now != "ask":  # a deny stays a deny
                    continue
            elif RANK[t.decision] <= RANK[now]:
                continue
            note = f"  # {t.rule.kind} {t.rule.text} in {t.rule.source}"
            text = text[: hit.start()] + f'{tool} = "{t.decision}"{note}' + text[hit.end() :]
    return text + policy_additions(found), found


def _report_client_rules(root: Path, carried: list[Any], *, kept: bool) -> None:
    """Say what became of every Claude Code permission rule: carried into
    the policy, already Charter's answer, kept by Claude Code itself, or not
    carried (Charter's own answer stands); never silently dropped."""
    if kept:
        from charter.compiler.resolve.client_rules import read_rules

        rules, _problems = read_rules(root)
        if rules:
            print(
                f"note: {len(rules)} Claude Code permission rule(s) in .claude/ were not read "
                "into the kept policy (--force writes the starter policy with them)"
            )
        return
    if not carried:
        return
    labels = {
        "carried": "carried",
        "already": "already Charter's answer",
        "client": "kept by Claude Code",
        "not-carried": "NOT carried",
    }
    print(f"read {len(carried)} Claude Code permission rule(s):")
    for t in carried:
        print(f"  {t.rule.kind} {t.rule.text} ({t.rule.source}): {labels[t.fate]}: {t.why}")
    personal = [t for t in carried if t.command and t.rule.source.endswith("local.json")]
    if personal:
        print(
            f"note: {len(personal)} carried allow rule(s) come from your own "
            ".claude/settings.local.json: a plan compiled here and committed allows them for "
            "everyone (charter doctor fails it where the settings do not hold them); move them "
            "to .claude/settings.json to share them, or remove them from the policy"
        )


# What of .charter/ is private to one machine and one person: the run
# records (audit logs, event streams, transcripts) and charter serve's
# decision log. The policy and the compiled plan are what a team commits.
PRIVATE_RECORDS = """\
# Written by charter init. Commit .charter/policy/ and .charter/plan.json;
# what follows is one person's records, never shared:
runs/
serve/
sessions.db*
"""


def _private_records_ignored(charter_dir: Path) -> Path | None:
    """Write ``.charter/.gitignore`` naming the private records, unless one
    is there (then it is the user's); the path written, or None."""
    ignore = charter_dir / ".gitignore"
    if ignore.exists():
        return None
    ignore.write_text(PRIVATE_RECORDS, encoding="utf-8")
    return ignore


def _back_up_edited(policy: Path, starter: str) -> Path | None:
    """Before --force writes the starter policy over ``policy``: a copy of
    it beside it when it holds anything else (an edited policy is never
    lost), named so an earlier copy is never overwritten either."""
    try:
        current = policy.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        current = None  # unreadable as text: keep its bytes all the same
    if current == starter:
        return None
    n = 1
    while (backup := policy.with_name(f"{policy.name}.{n}.bak")).exists():
        n += 1
    backup.write_bytes(policy.read_bytes())
    return backup


def _compile(project: Path, plan: Path, args: argparse.Namespace) -> str | None:
    from charter.compiler import CompileOptions, compile_project, load_project
    from charter.compiler.render import render

    if args.config is not None and not args.config.is_file():
        print(f"charter init: {args.config}: config file not found", file=sys.stderr)
        return None
    loaded = load_project(project, config=args.config, use_default_config=not args.no_user_config)
    result = compile_project(loaded, CompileOptions())
    shown = [d for d in (*loaded.diagnostics, *result.diagnostics) if d.severity.value != "note"]
    if shown:
        sys.stderr.write(render(shown, "concise", sources=loaded.sources))
    if result.plan is None:
        print("charter init: the starter policy does not compile; nothing else written",
              file=sys.stderr)  # fmt: skip
        return None
    tmp = plan.with_name(plan.name + ".tmp")
    tmp.write_text(result.plan.to_json(), encoding="utf-8")
    os.replace(tmp, plan)
    return str(result.plan.digest)
