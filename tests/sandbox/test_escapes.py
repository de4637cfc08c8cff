"""The escape suite: real attacks inside the sandbox, and ordinary work.

Every line of ``tests/fixtures/sandbox/escapes.tsv`` runs, through the same
path ``charter run`` uses (``run_command`` with the stage's sandbox), in the
default profile with smaller limits, against a scratch home holding
credentials, a scratch folder outside the workspace, TCP, UDP and abstract
UNIX socket canaries on the host and a host process whose environment holds a
secret. After each one: nothing outside changed, nothing arrived, no secret
was shown and nothing the command started still runs. An escape is a failed
case; the goal is none.

``ordinary.tsv`` checks the other side: a contained command can still do its
work (write the workspace, run Python, git and pytest).
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _support.sandbox import need_full_sandbox, profile, sandboxed_workspace

from charter.runtime.plan import SandboxLimits
from charter.runtime.proc import run_command
from charter.runtime.sandbox.launcher import Sandbox

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"
SECRETS = (
    "SECRET-SSH-KEY-0451",
    "SECRET-AWS-7781",
    "SECRET-NETRC-1234",
    "SECRET-PRIVATE-NOTES-9",
    "SECRET-ENV-5150",
)
LEFTOVER = "charter-leftover"
SLEEPER = f"bash -c 'exec -a {LEFTOVER} sleep 873'"


def _cases(name: str) -> list[list[str]]:
    out = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        out.append(line.split("\t"))
    return out


def _snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below ``root``: type, mode, size, content digest or link."""
    out: dict[str, tuple[object, ...]] = {}
    if not root.exists():
        return out
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            p = Path(dirpath) / name
            st = p.lstat()
            if p.is_symlink():
                out[str(p.relative_to(root))] = ("link", os.readlink(p))
            elif p.is_file():
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
                out[str(p.relative_to(root))] = ("file", st.st_mode, st.st_size, digest)
            else:
                out[str(p.relative_to(root))] = ("dir", st.st_mode)
    out["."] = ("root", root.lstat().st_mode)
    return out


@dataclass
class Canaries:
    """Listeners on the host that record anything that reaches them."""

    arrived: list[str] = field(default_factory=list)
    port: int = 0
    uport: int = 0
    abstract: str = ""
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("0.0.0.0", 0))
        tcp.listen(16)
        tcp.settimeout(0.1)
        self.port = tcp.getsockname()[1]
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("0.0.0.0", 0))
        udp.settimeout(0.1)
        self.uport = udp.getsockname()[1]
        self.abstract = f"charter-canary-{uuid.uuid4().hex}"
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind("\0" + self.abstract)
        unix.listen(4)
        unix.settimeout(0.1)

        def watch(sock: socket.socket, what: str) -> None:
            while not self.stop.is_set():
                try:
                    if sock.type == socket.SOCK_DGRAM:
                        data, addr = sock.recvfrom(65536)
                        self.arrived.append(f"{what} from {addr}: {data[:40]!r}")
                    else:
                        conn, addr = sock.accept()
                        self.arrived.append(f"{what} connection from {addr}")
                        conn.close()
                except TimeoutError:
                    continue
                except OSError:
                    return
            sock.close()

        for sock, what in ((tcp, "tcp"), (udp, "udp"), (unix, "abstract unix")):
            threading.Thread(target=watch, args=(sock, what), daemon=True).start()


def _host_ip() -> str:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
        return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()


def _leftovers() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith(LEFTOVER):
            found.append(f"{entry.name}: {cmd}")
    return found


@dataclass
class World:
    sandbox: Sandbox
    ws: Path
    home: Path
    outside: Path
    env: dict[str, str]
    canaries: Canaries
    victim: subprocess.Popen[bytes]
    host_ip: str

    def fill(self, command: str) -> str:
        # Plain replacement, not str.format: commands have braces of their own.
        values = {
            "home": self.home,
            "outside": self.outside,
            "ws": self.ws,
            "port": self.canaries.port,
            "uport": self.canaries.uport,
            "abstract": self.canaries.abstract,
            "victim": self.victim.pid,
            "host_ip": self.host_ip,
            "py": sys.executable,
            "sleeper": SLEEPER,
        }
        for key, value in values.items():
            command = command.replace("{" + key + "}", str(value))
        return command


def _fill_home(home: Path) -> None:
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET-SSH-KEY-0451\n")
    (home / ".aws").mkdir(exist_ok=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = SECRET-AWS-7781\n")
    (home / ".netrc").write_text("machine x login u password SECRET-NETRC-1234\n")
    (home / ".bashrc").write_text("# harmless\n")
    (home / "notes.txt").write_text("SECRET-PRIVATE-NOTES-9\n")


def _fill_outside(outside: Path) -> None:
    (outside / "sub").mkdir(parents=True, exist_ok=True)
    (outside / "file.txt").write_text("outside data\n")
    (outside / "sub" / "deep.txt").write_text("deep\n")


def _reset(world: World) -> None:
    """Put the scratch world back as it was (after an uncontained attack)."""
    import shutil

    for path in (world.home, world.outside, world.ws / ".git" / "hooks"):
        shutil.rmtree(path, ignore_errors=True)
    _fill_home(world.home)
    _fill_outside(world.outside)
    (world.ws / ".git" / "hooks").mkdir()
    for name in ("out", "rc", "key"):
        (world.ws / name).unlink(missing_ok=True)


def _make_world(root: Path) -> World:
    home, outside, ws = root / "home", root / "outside", root / "ws"
    _fill_home(home)
    _fill_outside(outside)
    ws.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_app.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parents[1]))\n"
        "from app import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    subprocess.run([*git, "-C", str(ws), "add", "."], check=True)
    subprocess.run([*git, "-C", str(ws), "commit", "-qm", "first commit"], check=True)
    run_home = ws / ".charter" / "runs" / "r1" / "home"
    run_home.mkdir(parents=True)
    (ws / ".charter" / "runs" / "r1" / "audit.jsonl").write_text("{}\n")
    sb = Sandbox(
        profile(limits=SandboxLimits(processes=64, memory_mb=1024, cpu_seconds=60)),
        workspace=ws,
        private_dir=root / "private",
        env_home=run_home,
        home=home,
    )
    canaries = Canaries()
    canaries.start()
    victim = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(900)"],
        env={**os.environ, "CHARTER_TEST_CANARY": "SECRET-ENV-5150"},
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(run_home),
        "LANG": "C.UTF-8",
    }
    return World(sb, ws, home, outside, env, canaries, victim, _host_ip())


def _close(world: World) -> None:
    world.canaries.stop.set()
    world.victim.kill()
    world.victim.wait()
    world.sandbox.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    need_full_sandbox()
    w = _make_world(tmp_path_factory.mktemp("escape"))
    try:
        yield w
    finally:
        _close(w)


def _run(
    world: World, command: str, timeout: float = 30, *, contained: bool = True
) -> tuple[int | None, str]:
    proc = run_command(
        ["/bin/bash", "-c", world.fill(command)],
        cwd=world.ws,
        env=world.env,
        timeout_s=timeout,
        sandbox=world.sandbox if contained else None,
    )
    assert proc.error is None, proc.error
    return proc.exit_code, proc.stdout + proc.stderr


def _escapes(world: World, command: str, *, contained: bool = True) -> tuple[list[str], str]:
    """What ``command`` changed or reached outside, and its output."""
    watched = {
        "home": world.home,
        "outside": world.outside,
        ".git": world.ws / ".git",
        ".charter": world.ws / ".charter",
    }
    before = {k: _snapshot(v) for k, v in watched.items()}
    arrived_before = len(world.canaries.arrived)
    _code, output = _run(world, command, contained=contained)
    time.sleep(0.2)  # let a canary thread record a late arrival
    escapes = []
    for key, path in watched.items():
        after = _snapshot(path)
        if after != before[key]:
            changed = sorted(
                k for k in set(after) | set(before[key]) if after.get(k) != before[key].get(k)
            )
            escapes.append(f"{key} changed: {changed[:5]}")
    escapes += world.canaries.arrived[arrived_before:]
    escapes += [f"secret shown: {s}" for s in SECRETS if s in output]
    escapes += [f"still running: {p}" for p in _leftovers()]
    if world.victim.poll() is not None:
        escapes.append("the host process was killed from inside")
    return escapes, output


@pytest.mark.parametrize(
    ("name", "command"), [pytest.param(*c, id=c[0]) for c in _cases("escapes.tsv")]
)
def test_attack_changes_nothing_outside(world: World, name: str, command: str) -> None:
    escapes, output = _escapes(world, command)
    assert not escapes, f"{name} escaped: {escapes}\noutput:\n{output[-2000:]}"


# Attacks that only touch the scratch world: run uncontained, each one must be
# caught, or the suite above would pass without a sandbox too.
_CONTROL = (
    "rm-rf-outside",
    "python-writes-outside",
    "tcp-loopback",
    "cat-ssh-key",
    "git-hooks",
    "symlink-dir",
    "setsid-child",
    "abstract-unix",
)


def test_the_suite_detects_these_attacks_without_a_sandbox(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    attacks = dict((c[0], c[1]) for c in _cases("escapes.tsv"))
    world = _make_world(tmp_path_factory.mktemp("control"))
    try:
        missed = []
        for name in _CONTROL:
            command = attacks[name].replace("~/.ssh/id_rsa /root/.ssh/id_rsa", "")
            escapes, _ = _escapes(world, command, contained=False)
            if not escapes:
                missed.append(name)
            for p in _leftovers():
                os.kill(int(p.split(":")[0]), 9)
            _reset(world)
        assert not missed, f"uncontained, these attacks went unnoticed: {missed}"
    finally:
        _close(world)


@pytest.mark.parametrize(
    ("name", "command", "expected"),
    [pytest.param(*c, id=c[0]) for c in _cases("ordinary.tsv")],
)
def test_ordinary_work_runs(world: World, name: str, command: str, expected: str) -> None:
    code, output = _run(world, command)
    assert code == 0, f"{name} failed inside the sandbox (exit {code}):\n{output[-2000:]}"
    assert expected in output, f"{name}: {expected!r} not in:\n{output[-2000:]}"


def test_the_workspace_stays_writable_but_a_command_sees_no_home(world: World) -> None:
    code, output = _run(world, "echo made > made.txt; ls -A ~ {home} 2>&1; echo $HOME")
    assert code == 0
    assert (world.ws / "made.txt").read_text() == "made\n"
    (world.ws / "made.txt").unlink()
    assert "notes.txt" not in output and ".ssh" not in output


def test_a_protected_path_created_by_one_command_is_read_only_for_the_next(
    tmp_path: Path,
) -> None:
    need_full_sandbox()
    ws, sb, env = sandboxed_workspace(tmp_path)
    run = functools.partial(run_command, cwd=ws, env=env, timeout_s=30, sandbox=sb)
    try:
        first = run(["git", "init", "-q", "."])
        assert first.exit_code == 0, first.stderr
        second = run(["/bin/sh", "-c", "echo evil > .git/hooks/pre-commit"])
    finally:
        sb.close()
    assert second.exit_code != 0 and "Read-only file system" in second.stderr
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
