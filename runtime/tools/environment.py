"""Leviath's environment tools: the clock, the machine, the locale, the
directories and variables commands see, whether a program is installed, and
the run's own state.

A model cannot know any of this, and guesses (today's date above all) from
its training data. Every tool here only reads and changes nothing, which is
why they default to allow. Two of them touch what the runtime guards:

* ``environment_info`` reports the environment a shell command of this run
  gets (:func:`charter.runtime.policy.env.build_env`'s allowlist), never the
  runtime's own. Of the runtime's other variables it lists only the names
  that look like credentials, so the model can tell a key is set without
  seeing it; values always pass through the run's redactor.
* ``which_command`` searches the PATH commands see and never runs anything.
  A name with a path separator is looked up inside the workspace only, so
  the tool is no way to probe the rest of the file system.

Answers are indented JSON objects, one per call. The platform-dependent parts
are pure functions of their inputs (``describe_*``), so tests can check the
Windows answers on Linux.
"""

from __future__ import annotations

import json
import locale
import os
import platform
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.redact import sensitive_name
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.base import current_session

if TYPE_CHECKING:
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "describe_environment",
    "describe_instant",
    "describe_locale",
    "describe_system",
    "resolve_program",
    "run_current_time",
    "run_environment_info",
    "run_fan_out",
    "run_locale_info",
    "run_runtime_info",
    "run_system_info",
    "run_which_command",
    "split_locale",
]


def _answer(value: Mapping[str, Any]) -> ToolResult:
    return ToolResult("ok", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False))


# -- current_time ---------------------------------------------------------------------------


def describe_instant(utc: datetime, local: datetime, zone: str | None) -> dict[str, Any]:
    """One instant in UTC and in the local zone, with its calendar position
    (taken from the local date, which is the one the user lives in)."""
    year, week, _ = local.isocalendar()
    offset = local.strftime("%z")
    return {
        "utc": utc.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "local": local.isoformat(timespec="seconds"),
        "timezone": zone,
        "utc_offset": f"{offset[:3]}:{offset[3:]}" if offset else None,
        "unix": int(utc.timestamp()),
        "date": local.strftime("%Y-%m-%d"),
        "time": local.strftime("%H:%M:%S"),
        "weekday": local.strftime("%A"),
        "iso_week": f"{year}-W{week:02d}",
        "day_of_year": local.timetuple().tm_yday,
    }


def _zone_name() -> str | None:
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        return tz
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return time.tzname[0] if time.tzname and time.tzname[0] else None
    marker = "zoneinfo/"
    return target.split(marker, 1)[1] if marker in target else None


def run_current_time(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    now = datetime.now(UTC)
    return _answer(describe_instant(now, now.astimezone(), _zone_name()))


# -- system_info ----------------------------------------------------------------------------


def describe_system(
    *,
    os_name: str,
    release: str | None,
    arch: str,
    family: str,
    cpus: int,
    host: str | None,
    disk: tuple[int, int] | None,
) -> dict[str, Any]:
    windows = family == "windows"
    return {
        "os": os_name,
        "os_version": release,
        "os_family": family,
        "arch": arch,
        "cpu_count": cpus,
        "hostname": host,
        "path_separator": ";" if windows else ":",
        "directory_separator": "\\" if windows else "/",
        "line_ending": "crlf" if windows else "lf",
        "disk": {
            "available_bytes": disk[0] if disk else None,
            "total_bytes": disk[1] if disk else None,
        },
    }


def run_system_info(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    try:
        usage = shutil.disk_usage(rt.workspace)
        disk: tuple[int, int] | None = (usage.free, usage.total)
    except OSError:
        disk = None
    try:
        host: str | None = socket.gethostname() or None
    except OSError:
        host = None
    family = "windows" if sys.platform == "win32" else "unix"
    return _answer(
        describe_system(
            os_name=platform.system().lower() or sys.platform,
            release=platform.release() or None,
            arch=platform.machine() or "unknown",
            family=family,
            cpus=os.cpu_count() or 1,
            host=host,
            disk=disk,
        )
    )


# -- locale_info ----------------------------------------------------------------------------


def split_locale(tag: str) -> tuple[str, str, str | None] | None:
    """``en_US.UTF-8`` -> ``("en-US", "en", "US")``. The ``C`` and ``POSIX``
    locales mean "none configured", not a language, and give None."""
    head = tag.strip().split(".", 1)[0].split("@", 1)[0].strip()
    if not head or head.upper() in ("C", "POSIX"):
        return None
    parts = [p for p in head.replace("-", "_").split("_") if p]
    if not parts:
        return None
    language = parts[0].lower()
    region = parts[1].upper() if len(parts) > 1 else None
    return (f"{language}-{region}" if region else language, language, region)


def describe_locale(tag: str | None) -> dict[str, Any]:
    parsed = split_locale(tag) if tag else None
    if parsed is None:
        return {"locale": None, "language": None, "region": None, "raw": tag}
    normalized, language, region = parsed
    return {"locale": normalized, "language": language, "region": region, "raw": tag}


def run_locale_info(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    tag = None
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name)
        if value:
            tag = value
            break
    if tag is None:
        found = locale.getlocale()[0]
        tag = found if found else None
    return _answer(describe_locale(tag))


# -- environment_info -----------------------------------------------------------------------


def describe_environment(
    *,
    workspace: str,
    home: str | None,
    temp: str,
    family: str,
    command_env: Mapping[str, str],
    runtime_env_names: Sequence[str],
) -> dict[str, Any]:
    """What commands of this run see. ``command_env`` is their environment;
    ``runtime_env_names`` the runtime's own variable names, of which only the
    credential-shaped ones are listed (names, never values)."""
    separator = ";" if family == "windows" else ":"
    path = command_env.get("PATH", "")
    visible = {k: v for k, v in sorted(command_env.items()) if not sensitive_name(k)}
    withheld = sorted(
        {n for n in runtime_env_names if sensitive_name(n)}
        | {n for n in command_env if sensitive_name(n)}
    )
    return {
        "working_directory": workspace,
        "home_directory": home,
        "temp_directory": temp,
        "path_separator": separator,
        "path_entries": [p for p in path.split(separator) if p],
        "environment_variables": visible,
        "withheld_variables": withheld,
    }


def run_environment_info(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    family = "windows" if sys.platform == "win32" else "unix"
    home = rt.env.get("HOME") or rt.env.get("USERPROFILE")
    return _answer(
        describe_environment(
            workspace=str(rt.workspace),
            home=home,
            temp=rt.env.get("TMPDIR") or tempfile.gettempdir(),
            family=family,
            command_env=rt.env,
            runtime_env_names=list(rt.secret_env),
        )
    )


# -- which_command --------------------------------------------------------------------------


def resolve_program(name: str, *, path: str, workspace: Path) -> tuple[str | None, str | None]:
    """(where the program is, or None; why the name was refused, or None).

    A bare name is searched on ``path``; a name with a separator is taken
    relative to the workspace and must stay inside it."""
    if "/" in name or "\\" in name:
        from charter.runtime.policy.workspace import confine

        decision = confine(workspace, name, op="read")
        if not decision.allowed or decision.resolved is None:
            return None, f"'{name}' is a path outside the workspace ({decision.message})"
        target = decision.resolved
        if target.is_file() and os.access(target, os.X_OK):
            return str(target), None
        return None, None
    return shutil.which(name, path=path), None


def run_which_command(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    name = args.get("command")
    if not isinstance(name, str) or not name.strip():
        return refusal("invalid", "dispatch", "which-no-name", "which_command needs a program name")
    found, refused = resolve_program(name, path=rt.env.get("PATH", ""), workspace=rt.workspace)
    if refused is not None:
        return refusal("denied", "dispatch", "which-outside-workspace", refused)
    return _answer({"command": name, "found": found is not None, "path": found})


# -- runtime_info ---------------------------------------------------------------------------


def run_runtime_info(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    session = current_session()
    if session is None:
        return _answer({"agent": None, "stage": None, "attended": None, "run_id": None})
    stage = session.stage.stage
    plan_agent = session.agent.agent
    limit = stage.max_iterations or plan_agent.limits.default_max_iterations
    return _answer(
        {
            "agent": plan_agent.name,
            "stage": stage.name,
            "mode": stage.mode,
            "max_iterations": limit,
            "run_id": session.run_id or None,
            "attended": not session.unattended,
            "yolo": session.yolo,
            "tools_offered": sorted(session.offered()),
        }
    )


# -- fan_out --------------------------------------------------------------------------------


def run_fan_out(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    # charter run answers fan_out itself (run/agents.py), starting workers
    # as sub-agents; this is what is left where no run can start any.
    return refusal(
        "unavailable",
        "dispatch",
        "fan-out-not-supported",
        "fan_out cannot run here: its workers are sub-agents, which only charter run starts. "
        "Nothing was started",
    )
