"""Workspace confinement: may a tool touch this path, and which real file is it?

Every path a built-in tool receives is judged here before anything is opened.
The judgement is made on the *real* location (symlinks resolved by the
operating system's rules), compared component by component with the real
workspace root, so ``/ws-evil`` is never taken to be inside ``/ws`` and a
symlink planted inside the workspace cannot lead out of it.

Some spellings are refused before any resolution because they mean different
things to different layers (a percent-encoded ``..`` that some later decoder
may expand, a fullwidth dot that NFKC folds to ``.``, a Windows drive or UNC
prefix, a NUL byte that C code truncates at). What cannot be read one way only
is refused: confinement fails closed.

Paths that stay inside but hold credentials (``.env``, ``.ssh/``, ...) are
``ask``: a person decides, and no automatic rule reads them silently. A write
under ``.git/`` (anywhere in the path: a nested repository's hooks run too)
asks the same way. Charter's own records (``.charter/``: plans, audit logs,
events, the run's home) are never written by the agent's tools: a deny.
:func:`protection` is that judgement on its own, shared with the shell guard
so that a redirect or ``cp`` is held to what ``write_file`` is. Names are
compared case-folded where the workspace's file system ignores case
(:func:`case_insensitive` finds out, per workspace).
Writing a coding client's own settings or instruction files (``.claude/``,
``CLAUDE.md``, ``.gemini/``, ...) asks the same person.

Two ways out show in no path text and no real path, so they are looked at on
the file system itself:

- a **mount** inside the workspace (a bind mount of an outside folder or
  file, a tmpfs, an overlay): ``realpath`` walks straight through it. A path
  whose deepest existing part lies on another mount than the workspace root
  is a deny (``path-mount``);
- a regular file with **more than one name** (a hard link): its other name
  may be outside the workspace or a credential file, and a client that
  writes in place would change that file too. Reading or writing it asks
  (``path-hardlink``).
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import stat
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    # Annotations only: confinement stays free of pydantic (check-path,
    # the sandbox's child).
    from charter.runtime.plan.vocabulary import Permission

__all__ = [
    "CLIENT_SETTINGS_DIRS",
    "CLIENT_SETTINGS_FILES",
    "RECORDS_DIR",
    "SENSITIVE_DIRS",
    "SENSITIVE_FILES",
    "PathVerdict",
    "mount_id",
    "PathOp",
    "Protection",
    "case_insensitive",
    "client_settings_path_reason",
    "client_settings_reason",
    "confine",
    "decide_path",
    "is_sensitive",
    "protection",
]

PathOp = Literal["read", "write"]

# Longer than any real path a model needs; also bounds the work done here.
_MAX_PATH = 4096
# NAME_MAX of every common Linux file system: a longer name names no file.
_MAX_NAME = 255

# Directory names whose whole subtree holds credentials.
SENSITIVE_DIRS: frozenset[str] = frozenset(
    {".ssh", ".aws", ".kube", ".gnupg", ".azure", ".docker", ".gcloud", ".password-store"}
)
# File names that hold credentials wherever they sit.
SENSITIVE_FILES: frozenset[str] = frozenset(
    {
        ".netrc",
        "_netrc",
        ".npmrc",
        ".pypirc",
        ".pgpass",
        ".git-credentials",
        ".vault-token",
        ".htpasswd",
        ".boto",
        ".s3cfg",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "credentials.json",
        "service-account.json",
    }
)
# Key material by extension.
_SENSITIVE_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore")
# Runs of folder and file names (compared case-folded) that hold tokens where
# their tools keep them; they matter inside a workspace that is a home folder.
# (The shell guard names the same files outside the workspace.)
_SENSITIVE_RUNS: tuple[tuple[str, ...], ...] = (
    (".config", "gcloud"),
    (".config", "gh", "hosts.yml"),
    (".cargo", "credentials"),
    (".cargo", "credentials.toml"),
    (".terraform.d", "credentials.tfrc.json"),
    (".local", "share", "keyrings"),
)
# Charter's own records in a workspace: run plans, audit logs, events, task
# artifacts and each run's private HOME.
RECORDS_DIR = ".charter"
_VCS_DIR = ".git"

# "C:", "C:\x", "C:/x", "c:x": drive-relative and drive-absolute forms.
_DRIVE = re.compile(r"^[A-Za-z]:")
# "%2e", "%2f", "%5c", "%00", "%25" (double encoding), in any letter case.
_PERCENT = re.compile(r"%(2e|2f|5c|00|25)", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Unicode's control characters (category Cc): exactly C0, DEL and C1. One
# regex scan instead of a category lookup per character of every path.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# Characters that matter to path syntax; a non-ASCII character folding to one
# of these under NFKC is a disguised separator or dot.
_SYNTAX = frozenset("./\\:%~")


# The verdicts are NamedTuples: they are defined at every start-up, and a
# NamedTuple costs a tenth of a frozen dataclass to define.
class PathVerdict(NamedTuple):
    """Whether a path may be used, the rule that decided, and the resolved path."""

    decision: Permission
    rule: str  # stable key, e.g. "path-outside"
    message: str
    resolved: Path | None = None  # the real path, when the path could be judged

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


def _deny(rule: str, message: str) -> PathVerdict:
    return PathVerdict("deny", rule, message)


def _spelling_problem(path: str) -> PathVerdict | None:
    """Refuse spellings whose meaning depends on who reads them."""
    shown = repr(path[:200])
    # The length first: it is a deny too, and the scans below are linear in
    # the path, so a megabyte path is refused before it costs anything.
    if len(path) > _MAX_PATH:
        return _deny("path-too-long", f"path is longer than {_MAX_PATH} characters")
    if "\x00" in path:
        return _deny("path-nul", f"path {shown} contains a NUL byte")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        # A lone surrogate outside the range that stands for an undecodable
        # byte names no file: no system call could even be made with it.
        return _deny(
            "path-encoded",
            f"path {shown} holds a character that cannot be written as a file name "
            "(a lone surrogate)",
        )
    if _CONTROL.search(path):
        return _deny("path-control", f"path {shown} contains a control character")
    if path.startswith("~"):
        return _deny(
            "path-home",
            f"path {shown} starts with '~'; home-directory expansion is not done, "
            "give a path relative to the workspace",
        )
    if _PERCENT.search(path):
        return _deny(
            "path-encoded",
            f"path {shown} holds a percent-encoded dot, separator or NUL; give the plain path",
        )
    for c in "" if path.isascii() else path:
        if ord(c) > 127:
            folded = unicodedata.normalize("NFKC", c)
            if any(f in _SYNTAX for f in folded):
                return _deny(
                    "path-encoded",
                    f"path {shown} holds {c!r} (U+{ord(c):04X}), which folds to {folded!r}; "
                    "look-alike dots and separators are refused",
                )
    if path.startswith(("\\\\", "//")):
        return _deny("path-unc", f"path {shown} is a UNC or network path")
    if _DRIVE.match(path):
        return _deny("path-drive", f"path {shown} names a Windows drive")
    if "\\" in path:
        # On POSIX a backslash is an ordinary file-name character, on Windows a
        # separator: the same text would name different files, so neither is assumed.
        return _deny("path-backslash", f"path {shown} contains a backslash; use '/'")
    if _SCHEME.match(path):
        return _deny("path-url", f"path {shown} is a URL, not a file path")
    return None


def _sensitive_reason(parts: tuple[str, ...]) -> str | None:
    for n, part in enumerate(parts):
        name = part.casefold()  # case-insensitive file systems make .ENV the same file
        if name in SENSITIVE_DIRS:
            return f"'{part}/' holds credentials"
        for run in _SENSITIVE_RUNS:
            if name == run[0] and tuple(p.casefold() for p in parts[n : n + len(run)]) == run:
                return f"'{'/'.join(parts[n : n + len(run)])}' holds credentials"
        if name.startswith(".env"):
            return f"'{part}' is an environment file that usually holds secrets"
        if name in SENSITIVE_FILES:
            return f"'{part}' holds credentials"
        if n == len(parts) - 1 and name.endswith(_SENSITIVE_SUFFIXES):
            return f"'{part}' looks like key material"
    return None


def is_sensitive(relative: str | Path) -> bool:
    """Whether a workspace-relative path names a credential file or directory."""
    if isinstance(relative, str):
        # The shell guard asks this of every argument of every command; a
        # plain split gives the same components as PurePath at a fraction of
        # the cost (empty and "." components carry no name).
        parts = tuple(p for p in relative.split("/") if p and p != ".")
        return _sensitive_reason(parts) is not None
    return _sensitive_reason(relative.parts) is not None


class Protection(NamedTuple):
    """Why a path inside the workspace is not an ordinary file, and what that means."""

    decision: Permission  # "ask" (a person decides) or "deny"
    rule: str
    reason: str


def protection(relative: tuple[str, ...], op: PathOp, *, fold: bool) -> Protection | None:
    """The protection of a workspace-relative path (its components, as the
    real path spells them) for ``op``, or None for an ordinary file.

    - writing under ``.charter/`` is a deny: Charter's records are not the
      agent's to change (a forged audit line, a planted approval);
    - a credential path asks, for a read as for a write;
    - writing a coding client's settings or instructions asks (see
      :func:`client_settings_reason`);
    - writing under ``.git/`` asks: hooks and config there run on the next
      git command.

    ``fold`` compares ``.charter`` and ``.git`` case-folded (a file system
    that ignores case makes ``.GIT`` the same folder); credential names are
    always folded, which errs towards asking."""

    def name(part: str) -> str:
        return part.casefold() if fold else part

    if op == "write" and any(name(p) == RECORDS_DIR for p in relative):
        return Protection(
            "deny",
            "path-run-records",
            f"'{RECORDS_DIR}/' holds Charter's run records and audit logs, "
            "which the agent's tools never write",
        )
    reason = _sensitive_reason(relative)
    if reason is not None:
        return Protection("ask", "path-sensitive", reason)
    settings = client_settings_reason(relative) if op == "write" else None
    if settings is not None:
        return Protection("ask", "path-client-settings", settings)
    if op == "write" and any(name(p) == _VCS_DIR for p in relative):
        return Protection(
            "ask",
            "path-vcs-internal",
            f"'{_VCS_DIR}/' is where a write can change what git executes (hooks, config)",
        )
    return None


def _hardlink(info: os.stat_result | None, relative: tuple[str, ...]) -> Protection | None:
    """An ask for a regular file (``info``, its ``lstat``) with more than one
    name: which other names it has (outside the workspace, a credential
    file's) cannot be found out. A file created later by the file tools has
    one name; replacing a file (their writes rename a new file into place)
    drops the other names."""
    if not relative or info is None:
        return None
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return Protection(
            "ask",
            "path-hardlink",
            f"it has {info.st_nlink} names (hard links); another name may be outside the "
            "workspace or a credential file",
        )
    return None


@functools.lru_cache(maxsize=64)
def case_insensitive(root: str) -> bool:
    """Whether the file system holding the directory ``root`` ignores case.

    Found out, not assumed: a name with a cased letter (an entry of the
    root, where the protected names are looked up, else one of the root's own
    components) is looked up with its case swapped; the same file means case
    is ignored. When there is nothing to test with (or the root does not
    exist) the answer is True, which makes every protected name compare
    case-folded: the stricter reading."""
    try:
        real = os.path.realpath(root, strict=True)
        with os.scandir(real) as entries:
            for entry in itertools.islice(entries, 64):
                if entry.name != entry.name.swapcase():
                    return _same(entry.path, os.path.join(real, entry.name.swapcase()))
    except (OSError, ValueError):
        return True
    parts = _components(real)
    for n in range(len(parts) - 1, -1, -1):
        if parts[n] != parts[n].swapcase():
            swapped = [*parts[:n], parts[n].swapcase()]
            return _same(os.sep + os.sep.join(parts[: n + 1]), os.sep + os.sep.join(swapped))
    return True


def _same(a: str, b: str) -> bool:
    # lstat: a dangling symlink still names one directory entry
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


# -- the coding clients' own settings and instructions ----------------------------
#
# Claude Code and Gemini CLI read these at start-up as their configuration
# (hooks, permissions, MCP servers) or as instructions to the model. An agent
# that writes one can switch the hooks off for the next session (an agent
# wrote {"disableAllHooks": true} to .claude/settings.local.json and the next
# session ran unhooked), start servers, or plant instructions. Writing them is
# an ask only a person can answer, whichever tool writes (the file tools
# through confine(), the shell guard through client_settings_reason()).
# Names are compared case-folded: stricter on a case-sensitive file system,
# exact on a case-insensitive one.

# Directories whose whole subtree is a client's (anywhere in the path: a
# client also reads them from subdirectories and parents of its cwd).
CLIENT_SETTINGS_DIRS: frozenset[str] = frozenset({".claude", ".gemini"})
# Files that are a client's wherever they sit (instructions are read from
# every directory the client looks at).
CLIENT_SETTINGS_FILES: frozenset[str] = frozenset(
    {"claude.md", "claude.local.md", "gemini.md", ".mcp.json"}
)
# (directory, file): only this file of the directory is a client's.
_CLIENT_SETTINGS_PAIRS: frozenset[tuple[str, str]] = frozenset({(".vscode", "settings.json")})


def client_settings_reason(parts: tuple[str, ...] | list[str]) -> str | None:
    """Why the workspace-relative path ``parts`` is a coding client's own
    settings or instructions, or None.

    A git worktree Claude Code keeps under ``.claude/worktrees/NAME/`` holds
    ordinary project files; the settings and instructions inside it count,
    as anywhere else."""
    names = [p.casefold() for p in parts if p and p != "."]
    n = 0
    while n < len(names):
        name = names[n]
        if name in CLIENT_SETTINGS_DIRS:
            if name == ".claude" and names[n + 1 : n + 2] == ["worktrees"] and len(names) > n + 3:
                n += 3  # the worktree's own files
                continue
            return f"inside {_parts_shown(parts, n)}/, which holds a coding client's own settings"
        if name in CLIENT_SETTINGS_FILES and n == len(names) - 1:
            return "a file a coding client reads as its settings or instructions"
        if n + 1 == len(names) - 1 and (name, names[n + 1]) in _CLIENT_SETTINGS_PAIRS:
            return "an editor's settings for the agents it runs"
        n += 1
    return None


# Every path client_settings_reason() names has a component equal, once
# case-folded, to one of these names (a client's directory, one of its files,
# or the file of a pair). For ASCII text case-folding is lower-casing, so an
# ASCII path holding none of them as a substring is not a client's settings:
# almost every path a command names, which the shell guard asks about often.
_CLIENT_NAMES = re.compile(
    "|".join(
        re.escape(name)
        for name in sorted(
            CLIENT_SETTINGS_DIRS
            | CLIENT_SETTINGS_FILES
            | {file for _, file in _CLIENT_SETTINGS_PAIRS}
        )
    )
)


def client_settings_path_reason(rel: str) -> str | None:
    """:func:`client_settings_reason` of the '/'-separated relative path
    ``rel``, answered at once for the common path that names no client."""
    if rel.isascii() and _CLIENT_NAMES.search(rel.lower()) is None:
        return None
    return client_settings_reason(rel.split("/"))


def _parts_shown(parts: tuple[str, ...] | list[str], upto: int) -> str:
    kept = [p for p in parts if p and p != "."]
    return "/".join(kept[: upto + 1])


def _nearest_existing(parts: list[str]) -> tuple[str, tuple[str, ...]]:
    """Split an absolute path, given as its components, into its longest
    existing prefix (a symlink counts as existing, even a dangling one) and
    the components that do not exist yet."""
    n = len(parts)
    while n > 0:
        try:
            os.lstat(os.sep + os.sep.join(parts[:n]))
            break
        except (FileNotFoundError, NotADirectoryError):
            # NotADirectoryError: a file in the middle of the path; keep walking up.
            n -= 1
    return os.sep + os.sep.join(parts[:n]), tuple(parts[n:])


_AT_FDCWD = -100
_AT_SYMLINK_NOFOLLOW = 0x100
_AT_EMPTY_PATH = 0x1000
_STATX_MNT_ID = 0x1000
_STATX_MNT_ID_AT = 144  # offset of stx_mnt_id in struct statx
_STATX: Any = None  # None: not loaded yet; False: unavailable


def _statx() -> Any:
    # ctypes is loaded on first use: check-path and the hooks pay for it only
    # when a path is actually judged.
    global _STATX
    if _STATX is None:
        try:
            import ctypes

            call = ctypes.CDLL(None, use_errno=True).statx
            call.argtypes = [
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.c_uint,
                ctypes.c_void_p,
            ]
            call.restype = ctypes.c_int
            _STATX = (call, ctypes.create_string_buffer)
        except (OSError, AttributeError):
            _STATX = False
    return _STATX


def mount_id(path: str | None = None, *, fd: int | None = None) -> int | None:
    """The id of the mount holding ``path`` itself (a symlink is not
    followed) or the open descriptor ``fd``: ``statx(STATX_MNT_ID)`` (Linux
    5.8+, one system call), else ``/proc/self/fdinfo``; None where neither
    can tell (no ``/proc``, not Linux)."""
    loaded = _statx()
    if loaded:
        call, buffer = loaded
        buf = buffer(256)
        try:
            if fd is not None:
                done = call(fd, b"", _AT_EMPTY_PATH | _AT_SYMLINK_NOFOLLOW, _STATX_MNT_ID, buf)
            elif path is None:
                return None
            else:
                done = call(_AT_FDCWD, os.fsencode(path), _AT_SYMLINK_NOFOLLOW, _STATX_MNT_ID, buf)
        except (ValueError, UnicodeError):
            return None
        raw = buf.raw
        if done == 0 and int.from_bytes(raw[0:4], "little") & _STATX_MNT_ID:
            return int.from_bytes(raw[_STATX_MNT_ID_AT : _STATX_MNT_ID_AT + 8], "little")
    return _fdinfo_mount_id(path, fd)


def _fdinfo_mount_id(path: str | None, fd: int | None) -> int | None:
    o_path = getattr(os, "O_PATH", None)
    own = fd is None
    if own:
        if o_path is None or path is None:
            return None
        try:
            fd = os.open(path, o_path | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (OSError, ValueError):
            return None
    try:
        with open(f"/proc/self/fdinfo/{fd}", "rb") as f:
            for line in f:
                if line.startswith(b"mnt_id:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    finally:
        if own and fd is not None:
            os.close(fd)
    return None


def _deepest(root: str, existing: str) -> tuple[str, os.stat_result | None]:
    """``existing`` and its ``lstat``, or, when it does not exist (a dangling
    symlink's target was named), its nearest existing folder under ``root``:
    where a write would land. None when nothing can be found (a racing
    process removed it)."""
    while True:
        try:
            return existing, os.lstat(existing)
        except (FileNotFoundError, NotADirectoryError):
            if existing == root or not existing.startswith(root):
                return existing, None
            existing = os.path.dirname(existing)
        except (OSError, ValueError):
            return existing, None


def _on_root_mount(root: str, existing: str, info: os.stat_result | None) -> bool:
    """Whether ``existing`` (a real path under ``root``, ``info`` its
    ``lstat``) lies on the root's mount. A mount id differs for every mount,
    a bind of a folder from the same file system included; where ids cannot
    be read, the device of the nearest directory decides (overlayfs may give
    a file its lower layer's device, so only directories are compared)."""
    if existing == root:
        return True
    if info is None:
        # vanished since it was walked: no mount can be named, which
        # confines like a loop (the caller denies)
        return False
    theirs = _root_mount(root)
    if theirs is not None:
        mine = mount_id(existing)
        if mine is not None:
            return mine == theirs
    try:
        if not stat.S_ISDIR(info.st_mode):
            info = os.lstat(os.path.dirname(existing))
        return info.st_dev == os.stat(root).st_dev
    except OSError:
        return False


@functools.lru_cache(maxsize=64)
def _root_mount(root: str) -> int | None:
    # The root's mount is fixed for a run (a mount over the root itself
    # makes every later path look foreign: a deny, never an allow).
    return mount_id(root)


def _walk(root: str, rel: list[str]) -> tuple[str, tuple[str, ...]] | None:
    """Resolve ``rel`` below the real directory ``root`` the way the kernel
    does: the real path of the longest existing part, and the components
    that do not exist yet. None for a symlink loop."""
    current = root
    for n, comp in enumerate(rel):
        if comp == "..":
            # ``current`` holds no symlinks, so its textual parent is its real parent.
            current = os.path.dirname(current)
            continue
        step = current + comp if current.endswith(os.sep) else current + os.sep + comp
        try:
            info = os.lstat(step)
        except (FileNotFoundError, NotADirectoryError):
            return current, tuple(rel[n:])
        if stat.S_ISLNK(info.st_mode):
            try:
                step = os.path.realpath(step, strict=True)
            except FileNotFoundError:
                try:
                    step = os.path.realpath(step)  # dangling: where a write would land
                except (OSError, RuntimeError, ValueError):
                    # the link changed while it was read (a racing process):
                    # no place can be named, which confines like a loop
                    return None
            except (OSError, RuntimeError, ValueError):
                return None
        current = step
    return current, ()


@functools.lru_cache(maxsize=64)
def _real_root(workspace: str) -> str:
    # The workspace is fixed for a run; resolving it once keeps a decision
    # to a handful of system calls (lru_cache never caches the OSError).
    return os.path.realpath(workspace, strict=True)


def _within(root_parts: list[str], parts: list[str]) -> bool:
    # Component by component: "/ws-evil" shares a text prefix with "/ws" but
    # not its components, so it is never inside.
    return parts[: len(root_parts)] == root_parts


def _components(path: str) -> list[str]:
    # Like pathlib: empty and "." components vanish, ".." stays (its meaning
    # depends on symlinks, which only the file system can resolve).
    return [c for c in path.split(os.sep) if c and c != "."]


def confine(workspace: Path, path: str, *, op: PathOp) -> PathVerdict:
    """Judge ``path`` (as a tool received it) against ``workspace`` for ``op``.

    Relative paths are taken from the workspace root; absolute paths must
    resolve inside it. The result's ``resolved`` is the real path the tool
    must use (never the text it was given, which may still name a symlink).
    """
    if op not in ("read", "write"):
        return _deny("path-op", f"unknown path operation {op!r}")
    if not isinstance(path, str) or path == "":
        return _deny("path-empty", "an empty path names no file")
    problem = _spelling_problem(path)
    if problem is not None:
        return problem
    try:
        root = _real_root(os.fspath(workspace))
    except (OSError, ValueError):
        return _deny("workspace-missing", f"the workspace {str(workspace)!r} does not exist")
    if not os.path.isdir(root):
        return _deny("workspace-missing", f"the workspace {str(workspace)!r} is not a directory")
    root_parts = _components(root)

    absolute = os.path.isabs(path)
    own = _components(path)
    if any(len(os.fsencode(c)) > _MAX_NAME for c in own):
        return _deny(
            "path-too-long",
            f"path {path[:200]!r} has a name longer than {_MAX_NAME} bytes, which no file has",
        )
    parts = own if absolute else root_parts + own
    # Where the path points by text alone; used only to name the reason when
    # the real location differs (a symlink), never to decide.
    lexical = _components(os.path.normpath(os.sep + os.sep.join(parts)))
    lexical_inside = _within(root_parts, lexical)
    inside = _within(root_parts, parts)
    try:
        if inside:
            # The usual case: below the root, whose real path is known, so only
            # the components under it need system calls.
            walked = _walk(root, parts[len(root_parts) :])
        else:
            walked = None
            existing, missing = _nearest_existing(parts)
    except OSError as exc:
        # ENAMETOOLONG (a link's target past PATH_MAX), EACCES, ELOOP: no
        # place can be named, and a verdict is owed, never a traceback.
        return _deny("path-unresolvable", f"path {path!r} cannot be resolved ({exc.strerror})")
    if inside:
        if walked is None:
            return _deny("path-unresolvable", f"path {path!r} cannot be resolved (symlink loop?)")
        real_parent, missing = walked
    else:
        try:
            real_parent = os.path.realpath(existing, strict=True)
        except FileNotFoundError:
            # A dangling symlink: follow its text to where a write would land.
            try:
                real_parent = os.path.realpath(existing)
            except (OSError, RuntimeError, ValueError):
                return _deny("path-unresolvable", f"path {path!r} changed while it was resolved")
        except (OSError, RuntimeError, ValueError):
            return _deny("path-unresolvable", f"path {path!r} cannot be resolved (symlink loop?)")
    if ".." in missing:
        # makedirs would create the missing directory and then climb out of it;
        # such a path is never needed, so it is refused rather than reasoned about.
        return _deny(
            "path-traversal",
            f"path {path!r} climbs with '..' out of a directory that does not exist",
        )
    resolved_parts = _components(real_parent) + list(missing)
    if not _within(root_parts, resolved_parts):
        if lexical_inside:
            return _deny(
                "path-symlink-escape",
                f"path {path!r} leads outside the workspace through a symbolic link",
            )
        if absolute:
            return _deny("path-outside", f"absolute path {path!r} is outside the workspace")
        return _deny("path-traversal", f"path {path!r} climbs out of the workspace with '..'")

    relative = tuple(resolved_parts[len(root_parts) :])
    resolved = Path(os.sep + os.sep.join(resolved_parts))
    named = os.sep + os.sep.join(resolved_parts[: len(resolved_parts) - len(missing)])
    existing, info = _deepest(root, named)
    if info is None and existing != root:
        return _deny("path-unresolvable", f"path {path!r} changed while it was resolved")
    if not _on_root_mount(root, existing, info):
        return _deny(
            "path-mount",
            f"path {path!r} leads onto another mount than the workspace's (a bind or "
            "file-system mount inside it), which may show files from outside",
        )
    fold = case_insensitive(root)
    found = protection(relative, op, fold=fold)
    if found is None and lexical_inside:
        # A symlink with an innocent name may point at a credential file; the
        # text the model used is checked as well as the target.
        found = protection(tuple(lexical[len(root_parts) :]), op, fold=fold)
    if found is None and not missing:
        found = _hardlink(info if existing == named else None, relative)
    if found is not None and found.decision == "deny":
        return _deny(found.rule, f"path {path!r} is refused: {found.reason}")
    if found is not None:
        what = "sensitive" if found.rule == "path-sensitive" else "protected"
        return PathVerdict(
            found.decision, found.rule, f"path {path!r} is {what}: {found.reason}", resolved
        )
    return PathVerdict("allow", "path-inside", f"path {path!r} is inside the workspace", resolved)


def decide_path(workspace: str | Path, path: str, op: str) -> dict[str, Any]:
    """``confine`` as a JSON-ready dict, for ``charter check-path``."""
    if op not in ("read", "write"):
        decision = _deny("path-op", f"op must be 'read' or 'write', not {op!r}")
    else:
        decision = confine(Path(workspace), path, op=op)  # type: ignore[arg-type]
    return {
        "decision": decision.decision,
        "rule": decision.rule,
        "message": decision.message,
        "path": path,
        "op": op,
        "resolved": None if decision.resolved is None else str(decision.resolved),
    }
