"""``kind = "container"``: each command in a fresh Docker or Podman container.

The engine is the user's choice (``engine`` in their config) or the first of
Docker and Podman found on ``PATH`` whose daemon answers; a blueprint never
chooses it, because the engine binary runs on the host before any prompt.
A client on ``PATH`` with no engine behind it (this is common: the CLI is
installed, the daemon is not running) is *unavailable*, with the engine's
own words as the reason.

Each command runs as ``ENGINE run --rm`` with every capability dropped, no
new privileges, the process, memory and CPU limits of the profile, no
network (``--network none``), the workspace bound at its own path
(read-only when the profile says so, its protected paths read-only always),
the private temporary directory at ``/tmp``, and the user's id, so files it
writes belong to the user. :func:`container_argv` builds that command line;
it is tested on its own, since a machine without an engine cannot run it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from charter.runtime.plan import SandboxProfile
from charter.runtime.sandbox.layout import expand

__all__ = [
    "ENGINES",
    "ContainerSandbox",
    "EngineStatus",
    "container_argv",
    "engine_status",
    "forbidden_mount",
]

ENGINES: tuple[str, ...] = ("docker", "podman")

# Host paths a container may never see: the machine's own control surfaces
# (a container engine's socket is a root shell on the host).
_FORBIDDEN = ("/", "/proc", "/sys", "/dev", "/etc", "/boot", "/run", "/var/run")


@dataclass(frozen=True)
class EngineStatus:
    engine: str | None
    available: bool
    reason: str


def forbidden_mount(path: str) -> bool:
    p = os.path.normpath(path)
    if not os.path.isabs(p) or ".." in Path(path).parts:
        return True
    return any(p == f or (f != "/" and p.startswith(f + "/")) for f in _FORBIDDEN) or p.endswith(
        ".sock"
    )


def engine_status(engine: str | None, *, timeout_s: float = 5.0) -> EngineStatus:
    """Whether a container engine answers. ``engine`` None probes Docker,
    then Podman."""
    candidates = [engine] if engine else list(ENGINES)
    reasons: list[str] = []
    for name in candidates:
        exe = shutil.which(name)
        if exe is None:
            reasons.append(f"{name} is not on PATH")
            continue
        try:
            done = subprocess.run(  # noqa: S603 - a fixed engine subcommand
                [exe, "version", "--format", "{{.Server.Version}}"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{name} did not answer ({type(exc).__name__})")
            continue
        if done.returncode == 0 and done.stdout.strip():
            return EngineStatus(name, True, f"{name} {done.stdout.decode().strip()}")
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
        first = said[-1] if said else f"exit code {done.returncode}"
        reasons.append(f"{name} is installed but its engine does not answer: {first[:200]}")
    return EngineStatus(None, False, "; ".join(reasons) or "no container engine")


def container_argv(
    engine: str,
    profile: SandboxProfile,
    command: Sequence[str],
    *,
    workspace: Path,
    cwd: Path,
    private_tmp: Path,
    env: Mapping[str, str],
    home: Path,
    name: str,
    uid: int | None = None,
    gid: int | None = None,
) -> list[str]:
    """The engine command line that runs ``command`` contained."""
    if not profile.image:
        raise ValueError("a container sandbox needs an image")
    lim = profile.limits
    argv = [engine, "run", "--rm", "-i", "--name", name, "--init"]
    argv += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    argv += ["--network", "none"]
    uid = os.getuid() if uid is None else uid
    gid = os.getgid() if gid is None else gid
    argv += ["--user", f"{uid}:{gid}"]
    if lim.processes is not None:
        argv += ["--pids-limit", str(lim.processes)]
    if lim.memory_mb is not None:
        argv += ["--memory", f"{lim.memory_mb}m"]
    if lim.open_files is not None:
        argv += ["--ulimit", f"nofile={lim.open_files}:{lim.open_files}"]
    if lim.cpu_seconds is not None:
        argv += ["--ulimit", f"cpu={lim.cpu_seconds}:{lim.cpu_seconds}"]
    mode = "rw" if profile.workspace == "write" else "ro"
    argv += ["-v", f"{workspace}:{workspace}:{mode}"]
    if profile.workspace == "write":
        for entry in profile.read_only:
            p = expand(entry, home=home, workspace=workspace)
            if p.exists():
                argv += ["-v", f"{p}:{p}:ro"]
    for m in profile.mounts:
        p = expand(m.path, home=home, workspace=workspace)
        if not forbidden_mount(str(p)) and p.exists():
            argv += ["-v", f"{p}:{p}:{'rw' if m.writable else 'ro'}"]
    argv += ["-v", f"{private_tmp}:/tmp:rw", "-e", "TMPDIR=/tmp", "-e", "HOME=/tmp"]
    # Names only: the engine reads each value from its own environment, so no
    # value (a bound secret) ever shows in the host's process list.
    for key in sorted(env):
        if key not in ("HOME", "TMPDIR", "PATH", "TMP", "TEMP"):
            argv += ["-e", key]
    argv += ["-w", str(cwd), profile.image, *command]
    return argv


class ContainerSandbox:
    """Starts each command with :func:`container_argv` (same interface as
    :class:`~charter.runtime.sandbox.launcher.Sandbox`)."""

    def __init__(
        self, profile: SandboxProfile, *, workspace: Path, private_dir: Path, engine: str
    ) -> None:
        self.profile = profile
        self.workspace = workspace.resolve()
        self.private = private_dir
        (private_dir / "tmp").mkdir(parents=True, exist_ok=True)
        self.engine = engine
        self.in_force = True
        self.complete = True
        self._n = 0

    @property
    def private_tmp(self) -> Path:
        return self.private / "tmp"

    @property
    def inside_tmp(self) -> str:
        return "/tmp"

    @property
    def mode(self) -> str:
        """What contains the commands, in the words ``Layout.mode`` uses
        for the kernel sandbox."""
        return "container"

    def describe(self) -> str:
        return (
            f"sandbox: container ({self.engine}, image {self.profile.image})\n"
            "  contained: no capabilities, no network, the workspace and a private /tmp only"
        )

    def command_env(self, env: Mapping[str, str]) -> dict[str, str]:
        return dict(env)

    def popen(
        self,
        argv: Sequence[str],
        *,
        cwd: str | Path,
        env: Mapping[str, str],
        stdin: Any = subprocess.DEVNULL,
        stdout: Any = subprocess.PIPE,
        stderr: Any = subprocess.PIPE,
    ) -> Any:
        from charter.runtime.sandbox.launcher import Launched

        self._n += 1
        full = container_argv(
            self.engine,
            self.profile,
            list(argv),
            workspace=self.workspace,
            cwd=Path(cwd).resolve(),
            private_tmp=self.private / "tmp",
            env=env,
            home=Path.home(),
            name=f"charter-{os.getpid()}-{self._n}",
        )
        proc = subprocess.Popen(  # noqa: S603 - the engine command line built above
            full,
            env={**env, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        return Launched(proc)

    def close(self) -> None:
        pass
