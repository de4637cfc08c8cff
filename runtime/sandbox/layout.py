"""From a profile and a place to the exact steps that build one sandbox.

:func:`plan_layout` is pure: given the plan's :class:`SandboxProfile`, what
the host offers (:class:`HostFacts`) and where the command runs
(:class:`Place`), it lists the namespaces to enter, the mounts to make in
order, the Landlock ruleset, the resource limits and the environment
changes, together with a plain statement of what that contains and what it
does not. The child process only executes this list.

With namespaces (a user namespace makes the others available to an
unprivileged user) the view of the file system is built with mounts:

* every hidden directory is replaced by an empty tmpfs, every hidden file
  by an empty read-only file;
* ``/tmp`` and ``/var/tmp`` become the run's private temporary directory,
  ``HOME`` the run's private home, ``/dev`` a minimal device tree and
  ``/proc`` a fresh instance for the new pid namespace;
* what must stay visible beneath a hidden tree (the workspace, the
  runtime's own Python, the user's extra mounts) is bound back in place;
* the protected paths inside the workspace (``.git``, ``.charter``, the
  clients' settings) are bound read-only onto themselves.

Mounts are applied parents first, and every source is opened before the
first mount, so hiding a tree never hides what is bound back into it.
Landlock then allows writing only beneath the writable roots.

Without namespaces, Landlock alone restricts reading to the system trees,
the workspace and the runtime (the home is hidden by not being granted),
writing to the writable roots, and TCP to nothing (or the proxy's port).
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import charter
import charter.runtime as rt_pkg
from charter.runtime.plan import SandboxProfile
from charter.runtime.sandbox import defaults
from charter.runtime.sandbox.landlock import (
    FS_READ,
    FS_WRITE,
    NET_CONNECT_TCP,
    PathRule,
    RulesetPlan,
    merge,
    rights_for,
)
from charter.runtime.sandbox.spec import (
    NAMESPACES,
    PID_MAX_MIN,
    PROXY_PORT,
    HostFacts,
    Layout,
    Mount,
    Place,
)

__all__ = [
    "HostFacts",
    "Layout",
    "Mount",
    "Place",
    "expand",
    "plan_layout",
]

_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def expand(entry: str, *, home: Path, workspace: Path) -> Path:
    """A profile path on this host: ``~`` is the user's home, a relative
    path is relative to the workspace."""
    if entry == "~":
        return home
    if entry.startswith("~/"):
        return home / entry[2:]
    p = Path(entry)
    return p if p.is_absolute() else workspace / p


def _under(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _depth(p: str) -> int:
    return len(Path(p).parts)


def _real(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return p


def _limits(profile: SandboxProfile, *, namespaced: bool) -> tuple[tuple[int, int], ...]:
    lim = profile.limits
    wanted: list[tuple[int, int | None]] = [
        (resource.RLIMIT_AS, None if lim.memory_mb is None else lim.memory_mb << 20),
        (resource.RLIMIT_CPU, lim.cpu_seconds),
        (resource.RLIMIT_NOFILE, lim.open_files),
        (resource.RLIMIT_FSIZE, None if lim.file_size_mb is None else lim.file_size_mb << 20),
        (resource.RLIMIT_CORE, 0),
    ]
    if lim.processes is not None:
        # In a fresh user namespace the count is the sandbox's own processes;
        # without one it is every process of the user, so add those running now.
        extra = 0 if namespaced else _own_processes()
        wanted.append((resource.RLIMIT_NPROC, lim.processes + extra))
    out: list[tuple[int, int]] = []
    for res, value in wanted:
        if value is None:
            continue
        _soft, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # raising a hard limit needs privileges we lack
        out.append((res, value))
    return tuple(out)


def _own_processes() -> int:
    uid = os.getuid()
    n = 0
    try:
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        n += 1
                except OSError:
                    continue
    except OSError:
        return 0
    return n


def _env(place: Place, tmp: str, proxy_port: int | None) -> tuple[tuple[str, str], ...]:
    env = [("TMPDIR", tmp), ("TMP", tmp), ("TEMP", tmp)]
    if proxy_port is not None:
        url = f"http://127.0.0.1:{proxy_port}"
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            env.append((name, url))
        env += [("NO_PROXY", "localhost,127.0.0.1,::1"), ("no_proxy", "localhost,127.0.0.1,::1")]
    return tuple(env)


def plan_layout(
    profile: SandboxProfile,
    host: HostFacts,
    place: Place,
    *,
    allow_landlock_only: bool = True,
) -> Layout:
    """The steps for ``profile`` on this host. ``mode`` is ``none`` when the
    host offers neither namespaces nor Landlock (or the profile's kind is
    ``none``); the caller decides whether that may run."""
    if profile.kind == "none":
        return Layout(mode="none", not_contained=("the profile's kind is none",))
    if host.namespaces:
        return _namespace_layout(profile, host, place)
    if host.landlock_abi >= 1 and allow_landlock_only:
        return _landlock_layout(profile, host, place)
    return Layout(
        mode="none",
        not_contained=(
            "this kernel offers neither user namespaces nor Landlock: "
            + "; ".join(host.reasons or ("no reason reported",)),
        ),
    )


def _visible(profile: SandboxProfile, place: Place) -> list[tuple[Path, bool]]:
    """Paths that must stay visible, with whether they are writable."""
    ws = place.workspace
    out: list[tuple[Path, bool]] = [(ws, profile.workspace == "write")]
    for m in profile.mounts:
        p = expand(m.path, home=place.home, workspace=ws)
        if p.exists():
            out.append((_real(p), m.writable))
    # The runtime's own files, read-only: only the outermost of nested paths
    # (one bind covers what is below it), never the workspace itself.
    runtime = [r for r in place.runtime if r != ws]
    for r in runtime:
        if not any(q != r and _under(r, q) for q in runtime):
            out.append((r, False))
    return out


def _namespace_layout(profile: SandboxProfile, host: HostFacts, place: Place) -> Layout:
    ws = place.workspace
    private_tmp = place.private / "tmp"
    private_home = place.private / "home"
    empty_file = place.private / "empty"
    specs: list[tuple[int, int, Mount]] = []  # (depth, class, mount)
    created: list[str] = []  # targets whose content we make (mkdir is safe inside)
    notes_not: list[str] = []

    def add(cls: int, m: Mount) -> None:
        specs.append((_depth(m.target), cls, m))

    # Replacements: hidden trees, the temporary directories, HOME, /dev, /proc.
    hidden_dirs: list[Path] = []
    for entry in dict.fromkeys(profile.hidden):
        p = expand(entry, home=place.home, workspace=ws)
        if not os.path.lexists(p):
            continue
        if os.path.islink(p):
            # /var/run -> /run: hiding the target hides it; a symlink is not a mount point.
            continue
        if p == ws:
            notes_not.append(f"{entry} is the workspace itself, so it is not hidden")
            continue
        if p.is_dir():
            hidden_dirs.append(p)
            add(0, Mount(str(p), "tmpfs"))
            created.append(str(p))
        else:
            add(3, Mount(str(p), "empty-file", source=str(empty_file)))
    tmp_targets = []
    for t in ("/tmp", "/var/tmp"):
        tp = Path(t)
        if tp.is_dir() and not tp.is_symlink() and _real(tp) == tp:
            tmp_targets.append(tp)
            add(0, Mount(t, "bind", source=str(private_tmp), writable=True, owned=True))
            created.append(t)
    add(0, Mount("/dev", "dev"))
    created.append("/dev")
    add(0, Mount("/proc", "proc"))
    add(0, Mount("/sys", "sys"))
    replaced = [*hidden_dirs, *tmp_targets]
    home_target: Path | None = None
    # HOME becomes the run's private home, unless it is the workspace or
    # holds it (binding over it would hide the workspace).
    if place.env_home is not None and not _under(ws, place.env_home):
        home_target = place.env_home
        add(
            2,
            Mount(
                str(home_target),
                "bind",
                source=str(private_home),
                writable=True,
                create=True,
                owned=True,
            ),
        )
        created.append(str(home_target))

    # What must stay visible: bound back where a replacement hid it, and
    # bound read-only onto itself where it sits inside a writable root.
    writable_roots = [p for p, w in _visible(profile, place) if w]
    writable_roots += [Path(t) for t in ("/tmp", "/var/tmp") if Path(t) in tmp_targets]
    for path, writable in _visible(profile, place):
        hidden_by = [r for r in replaced if _under(path, r) and path != r]
        inside_writable = any(_under(path, w) and path != w for w in writable_roots)
        if hidden_by or (not writable and inside_writable):
            add(1, Mount(str(path), "bind", source=str(path), writable=writable, create=True))
    if profile.workspace == "write":
        # Every protected path, existing or not: the child binds those that
        # exist when the command starts, so one created by an earlier command
        # (git init) is protected from the next command on.
        for name in dict.fromkeys(profile.read_only):
            p = expand(name, home=place.home, workspace=ws)
            if _under(p, ws):
                add(2, Mount(str(p), "bind", source=str(p), writable=False))
    specs.sort(key=lambda s: (s[0], s[1]))
    mounts = tuple(m for _, _, m in specs)

    # Landlock: writing only beneath the writable roots.
    fs, _net, scoped, dropped = rights_for(host.landlock_abi, net=False, scopes=True)
    ruleset = None
    write_targets = [str(p) for p in writable_roots]
    write_targets += ["/dev"]
    if home_target is not None:
        write_targets.append(str(home_target))
    if host.landlock_abi >= 1:
        rules = merge(PathRule(t, fs & FS_WRITE) for t in write_targets)
        ruleset = RulesetPlan(
            abi=host.landlock_abi,
            handled_fs=fs & FS_WRITE,
            scoped=scoped,
            paths=rules,
            dropped=tuple(dropped),
        )
    else:
        notes_not.append(
            "Landlock is not available, so writes are limited only by the read-only system "
            "paths and file permissions, not to the writable roots"
        )
    contained = [
        "a new user, mount, pid, network, IPC and UTS namespace; every process the command "
        "starts ends with it",
        "hidden: " + ", ".join(dict.fromkeys(profile.hidden)),
        "writable: " + (", ".join(write_targets) or "nothing"),
    ]
    if profile.workspace == "write" and profile.read_only:
        contained.append("read-only inside the workspace: " + ", ".join(profile.read_only))
    contained.append(
        "network: none" if profile.network == "none" else "network: only through Charter's proxy"
    )
    contained.append("no capabilities, no new privileges")
    if dropped:
        notes_not.append("Landlock rights this kernel lacks: " + ", ".join(dropped))
    if not host.fresh_proc:
        notes_not.append("a fresh /proc cannot be mounted here: /proc is empty inside")
    missing_protected = [
        n
        for n in profile.read_only
        if not os.path.lexists(expand(n, home=place.home, workspace=ws))
    ]
    if profile.workspace == "write" and missing_protected:
        notes_not.append(
            "protected only once they exist (a command may create them; later commands find "
            "them read-only): " + ", ".join(missing_protected)
        )
    proxy = profile.network == "proxy"
    pid_max = None
    if host.pid_max and profile.limits.processes is not None:
        pid_max = max(profile.limits.processes + 1, PID_MAX_MIN)
    return Layout(
        mode="namespace",
        pid_max=pid_max,
        namespaces=NAMESPACES,
        mounts=mounts,
        ruleset=ruleset,
        rlimits=_limits(profile, namespaced=True),
        env=_env(place, "/tmp" if tmp_targets else str(private_tmp), PROXY_PORT if proxy else None),
        proxy=proxy,
        contained=tuple(contained),
        not_contained=tuple(notes_not),
        writable=tuple(write_targets),
    )


def _existing(paths: Iterable[str | Path]) -> list[str]:
    return [str(p) for p in paths if os.path.exists(p)]


def _landlock_layout(profile: SandboxProfile, host: HostFacts, place: Place) -> Layout:
    private_tmp = place.private / "tmp"
    fs, net, scoped, dropped = rights_for(host.landlock_abi, net=True, scopes=True)
    read = fs & FS_READ
    write = fs & FS_WRITE
    rules: list[PathRule] = []
    for p in _existing(defaults.SYSTEM_READ):
        rules.append(PathRule(p, read))
    visible = _visible(profile, place)
    for path, writable in visible:
        rules.append(PathRule(str(path), read | (write if writable else 0)))
    rules.append(PathRule(str(private_tmp), read | write))
    if place.env_home is not None:
        rules.append(PathRule(str(place.env_home), read | write))
    for dev in _existing(f"/dev/{d}" for d in _DEVICES):
        rules.append(PathRule(dev, read | write))
    for p in _existing(("/dev/pts", "/dev/shm")):
        rules.append(PathRule(p, read | write))
    ports: tuple[tuple[int, int], ...] = ()
    if profile.network == "proxy" and place.proxy_port is not None and net:
        ports = ((place.proxy_port, NET_CONNECT_TCP),)
    ruleset = RulesetPlan(
        abi=host.landlock_abi,
        handled_fs=fs,
        handled_net=net,
        scoped=scoped,
        paths=merge(rules),
        ports=ports,
        dropped=tuple(dropped),
    )
    writable_roots = [str(p) for p, w in visible if w] + [str(private_tmp)]
    not_contained = [
        "no user namespaces here (" + "; ".join(host.reasons or ("not reported",)) + "): "
        "Landlock alone contains the command",
        "other processes are not isolated (no pid namespace); /proc is not readable instead",
        "descendants that leave the process group are ended by the runtime, not the kernel",
        "the protected paths inside the workspace (" + ", ".join(profile.read_only) + ") are "
        "writable: Landlock cannot take a subtree back out of a writable one",
        "files under the readable system trees that only root should read (/etc/shadow and "
        "the like) are readable when the runtime runs as root",
    ]
    if not net:
        not_contained.append("TCP is not restricted (Landlock below ABI 4, Linux 6.7)")
    not_contained.append("UDP and other non-TCP protocols are not restricted (DNS among them)")
    if dropped:
        not_contained.append("Landlock rights this kernel lacks: " + ", ".join(dropped))
    contained = [
        f"Landlock ABI {host.landlock_abi}: reading only the system trees, the workspace and "
        "the runtime; the home and other paths are not readable",
        "writable: " + ", ".join(writable_roots),
        "TCP: " + ("only the proxy's port" if ports else "none") if net else "TCP: not restricted",
        "no new privileges",
    ]
    return Layout(
        mode="landlock",
        ruleset=ruleset,
        rlimits=_limits(profile, namespaced=False),
        env=_env(place, str(private_tmp), place.proxy_port if profile.network == "proxy" else None),
        contained=tuple(contained),
        not_contained=tuple(not_contained),
        writable=tuple(writable_roots),
    )


def describe(layout: Layout) -> str:
    lines = [f"sandbox: {layout.mode}"]
    lines += [f"  contained: {c}" for c in layout.contained]
    lines += [f"  NOT contained: {n}" for n in layout.not_contained]
    return "\n".join(lines)


def runtime_paths(extra: Sequence[str] = ()) -> tuple[Path, ...]:
    """The runtime's own Python and packages, which must stay readable for
    authored tools and Python MCP servers to start inside the sandbox."""
    found: list[Path] = []
    candidates: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    candidates.append(os.path.dirname(os.path.realpath(sys.executable)))
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            candidates.append(entry)
    for pkg_path in getattr(charter, "__path__", []):
        candidates.append(str(Path(pkg_path)))
    for pkg_path in rt_pkg.__path__:
        candidates.append(str(Path(pkg_path).parent))
    candidates += list(extra)
    for c in candidates:
        p = _real(Path(c))
        if p.is_dir() and p not in found and p != Path("/"):
            found.append(p)
    return tuple(found)
