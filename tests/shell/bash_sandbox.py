"""Run command lines in real bash where nothing but bash exists (the oracle's driver).

Started by :mod:`bash_oracle` as ``unshare --mount --pid --net --fork ...
python bash_sandbox.py``, so this process is pid 1 of a fresh pid namespace,
alone in a fresh mount and network namespace. It builds a root on a private
tmpfs that holds only ``/bin/bash``, the libraries it loads (bound read-only)
and ``/dev/null``; it chroots there, drops root for an otherwise unused uid,
and runs each command with ``bash -c`` from ``/ws/proj``.

Every external program is missing from that root, and ``PATH`` names a
directory that only holds a ``bash`` wrapper, so bash hands every program
name it cannot find to ``command_not_found_handle``, defined (through
``BASH_ENV``) to record the words it received and succeed. That records the
argv of every program bash would have started, exactly as bash built it,
and runs none. The builtins that run code (``eval``, ``source``/``.``,
``exec``, ``command``, ``enable``, ``builtin``, ``trap``, ``mapfile``/
``readarray``, ``fc``, ``compgen``, ``complete``) are wrapped by functions
that record their words and then call the real builtin, and ``echo``,
``true``, ``false`` and ``pwd`` are disabled so their words are recorded as
a program's would be. ``bash`` itself is a wrapper that records and then runs
the real bash, so nested ``bash -c`` scripts are followed too.

Input (stdin): a JSON list of command strings. Output (stdout): one JSON
object per command, ``{"records": [[arg, ...], ...], "timeout": bool}``.
Arguments are decoded from UTF-8 with ``surrogateescape``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import time

# The uid the commands run as: an unprivileged one nothing else uses, so the
# process limit below counts only the oracle's own processes.
RUN_UID = 61961
TIMEOUT_S = 3.0
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    32,
    4096,
    16384,
    1 << 18,
)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]

ENV_SCRIPT = r"""
__charter_rec() {
  local LC_ALL=C __charter_a __charter_r=R
  for __charter_a in "$@"; do __charter_r+="${#__charter_a}:$__charter_a"; done
  builtin printf '%s\n' "$__charter_r" >> "/.rec/$BASHPID"
}
command_not_found_handle() { __charter_rec "$@"; return 0; }
eval() { __charter_rec eval "$@"; builtin eval "$@"; }
source() { __charter_rec source "$@"; builtin source "$@"; }
.() { __charter_rec . "$@"; builtin . "$@"; }
exec() { __charter_rec exec "$@"; builtin exec "$@"; }
command() { __charter_rec command "$@"; builtin command "$@"; }
enable() { __charter_rec enable "$@"; builtin enable "$@"; }
trap() { __charter_rec trap "$@"; builtin trap "$@"; }
mapfile() { __charter_rec mapfile "$@"; builtin mapfile "$@"; }
readarray() { __charter_rec readarray "$@"; builtin readarray "$@"; }
fc() { __charter_rec fc "$@"; builtin fc "$@"; }
compgen() { __charter_rec compgen "$@"; builtin compgen "$@"; }
complete() { __charter_rec complete "$@"; builtin complete "$@"; }
builtin enable -n echo true false pwd
"""
BASH_WRAPPER = '#!/bin/bash\n__charter_rec bash "$@"\nbuiltin exec -a bash /bin/bash "$@"\n'


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = [None if s is None else s.encode() for s in (src, dst, fstype)]
    rc = _libc.mount(enc[0], enc[1], enc[2], flags, None if data is None else data.encode())
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {src} -> {dst}: {os.strerror(err)}")


def _bind_ro(src: str, dst: str) -> None:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if not os.path.exists(dst):
        open(dst, "w").close()
    _mount(src, dst, None, MS_BIND, None)
    _mount(None, dst, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, None)


def _libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libs: list[str] = []
    for line in out.splitlines():
        for tok in line.split():
            if tok.startswith("/"):
                libs.append(tok)
    return libs


def build_root(root: str) -> bool:
    """Make ``root`` a private tmpfs holding only bash; return whether the
    commands can run as an unprivileged uid (False inside a user namespace
    that maps only root)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=755")
    bash = os.path.realpath("/bin/bash")
    _bind_ro(bash, root + "/bin/bash")
    for lib in _libraries(bash):
        _bind_ro(os.path.realpath(lib), root + lib)
    os.makedirs(root + "/dev")
    open(root + "/dev/null", "w").close()
    _mount("/dev/null", root + "/dev/null", None, MS_BIND, None)
    for d in ("/ws/proj", "/tmp", "/.rec", "/.charter/bin", "/home/u"):
        os.makedirs(root + d, exist_ok=True)
    with open(root + "/.charter/env.sh", "w") as f:
        f.write(ENV_SCRIPT)
    with open(root + "/.charter/bin/bash", "w") as f:
        f.write(BASH_WRAPPER)
    os.chmod(root + "/.charter/bin/bash", 0o755)
    drop = os.getuid() == 0 and _can_setuid()
    for d in ("/ws", "/ws/proj", "/tmp", "/.rec", "/home/u"):
        os.chmod(root + d, 0o1777 if d in ("/tmp", "/.rec") else 0o755)
        if drop:
            os.chown(root + d, RUN_UID, RUN_UID)
    return drop


def _can_setuid() -> bool:
    try:
        with open("/proc/self/uid_map") as f:
            first = f.read().split()
    except OSError:
        return True
    # the initial namespace maps the whole range; `unshare -r` maps only 0
    return len(first) >= 3 and int(first[2]) > RUN_UID


def _reset() -> None:
    for d in ("/ws/proj", "/tmp", "/.rec", "/home/u"):
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                try:
                    os.unlink(p)
                except OSError:
                    pass


def _records() -> list[list[str]]:
    out: list[list[str]] = []
    for name in sorted(os.listdir("/.rec")):
        with open("/.rec/" + name, "rb") as f:
            data = f.read()
        i = 0
        n = len(data)
        while i < n:
            if data[i : i + 1] != b"R":
                break  # a torn record (the command was killed mid-write)
            i += 1
            argv: list[str] = []
            while i < n and data[i : i + 1] != b"\n":
                colon = data.find(b":", i)
                if colon < 0 or not data[i:colon].isdigit():
                    i = n
                    break
                size = int(data[i:colon])
                argv.append(data[colon + 1 : colon + 1 + size].decode("utf-8", "surrogateescape"))
                i = colon + 1 + size
            i += 1
            out.append(argv)
    return out


ENV = {
    "PATH": "/.charter/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "BASH_ENV": "/.charter/env.sh",
}


def run_one(command: str, drop: bool, devnull: int) -> dict[str, object]:
    _reset()
    pid = os.fork()
    if pid == 0:  # the child: become the command
        try:
            os.setsid()
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            if drop:
                resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
            resource.setrlimit(resource.RLIMIT_CPU, (3, 3))
            resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))
            os.chdir("/ws/proj")
            os.execve("/bin/bash", ["bash", "-c", command], ENV)
        finally:
            os._exit(127)
    deadline = time.monotonic() + TIMEOUT_S
    fd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    timed_out = not poller.poll(TIMEOUT_S * 1000)
    os.close(fd)
    # Background jobs (`cmd &`) stay in the command's process group, and
    # orphans are re-parented to this process (pid 1): wait for the group to
    # empty, reaping as it goes, then kill whatever is left.
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            break
        if timed_out or time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                while True:
                    os.waitpid(-1, 0)
            except ChildProcessError:
                pass
            break
        time.sleep(0.0005)
    return {"records": _records(), "timeout": timed_out}


def main() -> int:
    root = sys.argv[1]
    commands = json.load(sys.stdin)
    out = sys.stdout
    drop = build_root(root)
    os.chroot(root)
    os.chdir("/")
    if drop:
        os.setgroups([])
        os.setresgid(RUN_UID, RUN_UID, RUN_UID)
        os.setresuid(RUN_UID, RUN_UID, RUN_UID)
    devnull = os.open("/dev/null", os.O_RDWR)
    for command in commands:
        out.write(json.dumps(run_one(command, drop, devnull), ensure_ascii=True) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
