"""Landlock alone (a host without user namespaces, as many CI containers
are): what it still contains, checked with real attacks, and what it says
it does not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _support.sandbox import facts, need_landlock, profile

from charter.runtime.proc import run_command
from charter.runtime.sandbox.launcher import Sandbox
from charter.runtime.sandbox.spec import HostFacts


@pytest.fixture
def fallback(tmp_path: Path) -> Sandbox:
    need_landlock()
    host = HostFacts(landlock_abi=facts().landlock_abi, reasons=("pretending: no namespaces",))
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("SECRET-FALLBACK-77\n")
    (tmp_path / "outside").mkdir()
    sb = Sandbox(profile(), workspace=ws, private_dir=tmp_path / "private", host=host, home=home)
    assert sb.layout.mode == "landlock"
    yield sb
    sb.close()


def _run(sb: Sandbox, command: str) -> str:
    env = sb.command_env(
        {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(sb.workspace)}
    )
    proc = run_command(
        ["/bin/bash", "-c", command], cwd=sb.workspace, env=env, timeout_s=20, sandbox=sb
    )
    assert proc.error is None, proc.error
    return proc.stdout + proc.stderr


def test_writes_stay_in_the_writable_roots(fallback: Sandbox, tmp_path: Path) -> None:
    out = _run(
        fallback,
        f"echo x > {tmp_path}/outside/x; echo in > inside; echo t > $TMPDIR/t; "
        "cat inside $TMPDIR/t",
    )
    assert not (tmp_path / "outside" / "x").exists()
    assert "in\nt" in out


def test_the_home_is_not_readable(fallback: Sandbox, tmp_path: Path) -> None:
    out = _run(fallback, f"cat {tmp_path}/home/secret.txt; ls {tmp_path}/home")
    assert "SECRET-FALLBACK-77" not in out and "Permission denied" in out


def test_tcp_reaches_nothing(fallback: Sandbox) -> None:
    if facts().landlock_abi < 4:
        pytest.skip("Landlock below ABI 4 does not restrict TCP")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(2)
    port = listener.getsockname()[1]
    got: list[object] = []

    def accept() -> None:
        try:
            got.append(listener.accept())
        except OSError:
            pass  # closed by the test, nothing arrived

    threading.Thread(target=accept, daemon=True).start()
    out = _run(
        fallback,
        f'{sys.executable} -c "import socket; '
        f"socket.create_connection(('127.0.0.1', {port}), 2)\"",
    )
    time.sleep(0.3)
    listener.close()
    assert not got and "PermissionError" in out


def test_descendants_that_leave_the_session_end_with_the_command(fallback: Sandbox) -> None:
    _run(fallback, "setsid bash -c 'exec -a charter-fallback-left sleep 300' & disown; sleep 0.5")
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", "charter-fallback-left"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_it_says_what_is_not_contained(fallback: Sandbox) -> None:
    text = fallback.describe()
    for missing in ("no pid namespace", "writable: Landlock cannot take a subtree", "UDP"):
        assert missing in text


def test_without_a_per_namespace_pid_max_root_is_bounded_by_a_pids_cgroup(
    tmp_path: Path,
) -> None:
    """Older kernels (before 6.14) have no pid_max per pid namespace, and the
    kernel exempts root from RLIMIT_NPROC; a writable pids cgroup is then the
    process limit."""
    from _support.sandbox import need_full_sandbox

    from charter.runtime.plan import SandboxLimits
    from charter.runtime.sandbox.cgroup import find_pids_root

    need_full_sandbox()
    if os.geteuid() != 0:
        pytest.skip("only root is exempt from RLIMIT_NPROC; other users need no cgroup")
    if find_pids_root() is None:
        pytest.skip("no writable pids cgroup on this host")
    f = facts()
    older = HostFacts(landlock_abi=f.landlock_abi, namespaces=True, fresh_proc=True, pid_max=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    sb = Sandbox(
        profile(limits=SandboxLimits(processes=20)),
        workspace=ws,
        private_dir=tmp_path / "private",
        host=older,
    )
    try:
        assert sb.process_limit == "cgroup" and "pids cgroup" in sb.describe()
        out = _run(sb, "for i in $(seq 60); do sleep 1 & done 2>&1 | tail -1; jobs -p | wc -l")
    finally:
        sb.close()
    # bash reports a refused fork in several words: EAGAIN as a retry or
    # "Cannot fork", and a fork that the limit's refusal raced with SIGCHLD as
    # "fork: Interrupted system call". Each one is the bound holding.
    refused = (
        "retry: Resource temporarily unavailable",
        "Cannot fork",
        "fork: Interrupted system call",
    )
    assert any(word in out for word in refused), out
