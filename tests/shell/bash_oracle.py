"""The bash differential oracle: what real bash runs, against what the guard judged.

:func:`run_in_bash` runs command lines in the sandbox of
:mod:`bash_sandbox` (real ``/bin/bash``, every program a recording stub,
throwaway namespaces) and returns, for each, the argv of every program and
code-running builtin bash started. :func:`mismatches` compares that with
:func:`charter.runtime.shell.judge`'s list of the simple commands the guard
judged. The property, as ``docs/shell-guard.md`` states it:

* a command the guard **denies** never runs, so there is nothing to compare;
* a command the guard **allows** must have been read completely (not
  ``opaque``), and every argv bash started must equal, word for word, a
  simple command the guard listed with all words literal;
* a command the guard **asks** about: unless the guard said it could not
  read all of it (``opaque``), every argv bash started must match a listed
  command, where a word the guard marked dynamic matches any run of zero or
  more words and every literal word must be equal.

Anything else is a mismatch: a parse differential between the guard and bash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from charter.runtime.shell import DYNAMIC, JudgedCommand, Judgement

__all__ = ["Execution", "available", "mismatches", "run_in_bash", "unavailable_reason"]

_DRIVER = Path(__file__).resolve().parent / "bash_sandbox.py"


@dataclass(frozen=True, slots=True)
class Execution:
    """What bash started for one command line."""

    records: tuple[tuple[str, ...], ...]
    timeout: bool


def _unshare_argv(user_ns: bool) -> list[str]:
    argv = ["unshare", "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child"]
    if user_ns:
        argv.append("--map-root-user")
    return argv


@cache
def _mode() -> tuple[bool, str | None]:
    """(whether a user namespace is needed, why the oracle cannot run or None)."""
    if sys.platform != "linux":
        return False, "the bash oracle needs Linux namespaces"
    if not os.path.exists("/bin/bash"):
        return False, "the bash oracle needs /bin/bash"
    if shutil.which("unshare") is None or shutil.which("ldd") is None:
        return False, "the bash oracle needs unshare(1) and ldd(1)"
    tries = [False, True] if os.geteuid() == 0 else [True]
    last = ""
    for user_ns in tries:
        try:
            probe = subprocess.run(
                [*_unshare_argv(user_ns), "true"], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            last = str(exc)
            continue
        if probe.returncode == 0:
            return user_ns, None
        last = probe.stderr.strip()
    return False, f"this host cannot create mount and pid namespaces ({last})"


def unavailable_reason() -> str | None:
    return _mode()[1]


def available() -> bool:
    return unavailable_reason() is None


def run_in_bash(commands: Sequence[str], *, timeout_s: float = 900) -> list[Execution]:
    """Run each command in the sandbox (one namespace for the whole batch)."""
    user_ns, why = _mode()
    if why is not None:
        raise RuntimeError(why)
    with tempfile.TemporaryDirectory(prefix="charter-oracle-") as root:
        proc = subprocess.run(
            [*_unshare_argv(user_ns), sys.executable, "-I", str(_DRIVER), root],
            input=json.dumps(list(commands)),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(commands):
        raise RuntimeError(
            f"the bash sandbox failed (exit {proc.returncode}, {len(lines)} of "
            f"{len(commands)} results): {proc.stderr[-2000:]}"
        )
    out: list[Execution] = []
    for line in lines:
        data = json.loads(line)
        out.append(Execution(tuple(tuple(r) for r in data["records"]), bool(data["timeout"])))
    return out


def _matches(pattern: tuple[object, ...], argv: tuple[str, ...]) -> bool:
    """Whether ``argv`` fits ``pattern``, where DYNAMIC matches any run of
    zero or more words (linear dynamic programming over the two lists)."""
    # reachable[j]: the first i pattern items can produce argv[:j]
    reachable = [True] + [False] * len(argv)
    for item in pattern:
        nxt = [False] * (len(argv) + 1)
        if item is DYNAMIC:
            seen = False
            for j in range(len(argv) + 1):
                seen = seen or reachable[j]
                nxt[j] = seen
        else:
            for j in range(len(argv)):
                if reachable[j] and argv[j] == item:
                    nxt[j + 1] = True
        reachable = nxt
    return reachable[len(argv)]


def _show(argv: Sequence[object]) -> str:
    return " ".join("<dynamic>" if a is DYNAMIC else repr(a) for a in argv)


def mismatches(judgement: Judgement, execution: Execution) -> list[str]:
    """Why bash's run of the command contradicts the guard (empty: it does not)."""
    decision = judgement.verdict.decision
    if decision == "deny":
        return []
    listed: tuple[JudgedCommand, ...] = judgement.commands
    if decision == "allow":
        problems: list[str] = []
        if judgement.opaque:
            problems.append("the guard allowed a command it did not read completely")
        literal = {c.argv for c in listed if DYNAMIC not in c.argv}
        for rec in execution.records:
            if rec not in literal:
                problems.append(f"allowed, but bash ran {_show(rec)} which the guard did not list")
        return problems
    if judgement.opaque:
        return []
    return [
        f"bash ran {_show(rec)}; the guard listed: "
        + ("; ".join(_show(c.argv) for c in listed) or "nothing")
        for rec in execution.records
        if not any(_matches(c.argv, rec) for c in listed)
    ]
