"""The paths a command reads, and the trees a recursive program walks.

An argument that names a file is judged by the text first (a credential
name asks), then where the kernel really leads: a symlink's target, ``..``
after a symlink, ``/dev/fd`` and ``/proc/self``. Outside the workspace is
an ask; a symlink inside it is judged by the name of what it leads to. A
recursive reader (``grep -r``, ``find``, ``ls -R``) has the trees it reads
searched for credentials and links out (see ``walk.py``), and git has the
repository it would use checked (its configuration names programs).
"""

from __future__ import annotations

import glob
import itertools
import os
import posixpath
import re
import stat
from collections.abc import Sequence

from charter.runtime.policy.workspace import client_settings_path_reason, is_sensitive
from charter.runtime.shell.gitindex import find_git_dir, remote_url_credentials, tracked_paths
from charter.runtime.shell.gitrepo import untrusted_repository
from charter.runtime.shell.guard.state import State, clip
from charter.runtime.shell.policy import CLIENT_SETTINGS_RULE
from charter.runtime.shell.programs import UNKNOWN
from charter.runtime.shell.programs.base import Walk
from charter.runtime.shell.syntax import Word
from charter.runtime.shell.walk import WALK_LIMIT, Budget, gitignored_dirs, walk_tree

__all__ = [
    "DISCARD",
    "FD_PATH",
    "check_trees",
    "client_settings_args",
    "generic_args",
    "git_repository",
    "join_relative",
    "match_outside",
    "outside",
    "real_below",
    "realpath",
    "relative",
    "sensitive_path",
    "within",
]

# Credential files and directories (defence in depth: reading them through the
# shell needs approval even when the program is read-only).
_SENSITIVE = re.compile(
    r"(?:^|[^A-Za-z0-9_])\.env(?:$|[.\-_A-Za-z0-9]*$|[/:,])"
    r"|\.(?:npmrc|pypirc|netrc|pgpass|git-credentials|htpasswd|dockercfg)(?:$|[^A-Za-z0-9_])"
    r"|(?:^|[^A-Za-z0-9_])\.(?:aws|kube|ssh|gnupg|docker|azure|gcloud|config/gcloud)(?:/|$)"
    r"|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)(?:$|\.)"
    # another process's environment, memory, command line or open files (the
    # runtime's own API keys live in its environment)
    r"|^/proc/(?:self|thread-self|[0-9]+)(?:/task/[0-9]+)?/(?:environ|mem|cmdline|fd/|map_files/)"
    # tokens and keys kept outside any workspace, which a read of a path
    # outside it (an ask a launch flag lifts) must not reach unprompted
    r"|(?:^|/)\.config/gh/hosts\.yml$|(?:^|/)\.cargo/credentials(?:\.toml)?$"
    r"|(?:^|/)\.vault-token$|(?:^|/)\.terraform\.d/credentials\.tfrc\.json$"
    r"|(?:^|/)\.local/share/keyrings(?:/|$)"
    r"|^/etc/g?shadow-?$|^/etc/ssh/ssh_host_[A-Za-z0-9]+_key$|^/(?:var/)?run/secrets/",
)
# NUL is the null device only on Windows; bash on a POSIX system creates a file of that name
# Writes that stay in the command's own output. Not /dev/tty: that is the
# operator's terminal, where escape sequences can retitle, rewrite or feed it.
DISCARD = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"}) | (
    frozenset({"NUL", "nul"}) if os.name == "nt" else frozenset()
)
FD_PATH = re.compile(r"^/dev/fd/[0-9]+$")
# Device files a read-only command may name as they are (an argument, or
# `<`). Not /dev/tty: reading it would read what a person types.
_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
        "/dev/full",
    }
)


# Every credential name above and in the file tools' list contains one of
# these once lower-cased: a text without any is not sensitive, which is most
# arguments and most names in a tree walk, at a fraction of the cost.
_MAYBE_SENSITIVE = re.compile(
    r"\.(?:env|npmrc|pypirc|netrc|pgpass|git-credentials|htpasswd|docker|aws|kube|ssh"
    r"|gnupg|azure|gcloud|password-store|boto|s3cfg|pem|key|p12|pfx|jks)"
    r"|id_|_netrc|gcloud|credentials\.json|service-account\.json|^/proc/"
    r"|gh/hosts|\.cargo/credentials|vault-token|credentials\.tfrc|keyrings|shadow|ssh_host_"
    r"|/secrets/",
)


def sensitive_path(value: str) -> bool:
    if value.isascii() and _MAYBE_SENSITIVE.search(value.lower()) is None:
        return False  # (non-ASCII text can case-fold into a credential name: full check)
    # the file tools' list too (key material, credentials.json, .ENV, ...),
    # so the shell is no way around a path the read_file tool would ask about
    return (
        _SENSITIVE.search(value) is not None
        or is_sensitive(value)
        or ("=" in value and is_sensitive(value.split("=", 1)[1]))  # --opt=FILE
    )


def realpath(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _tracked_credential(st: State, prog: str, span: tuple[int, int]) -> bool:
    """Ask when the repository git would use tracks a credential file (git
    diff prints every tracked file's changes, from the whole repository).
    True when the index cannot be read, so that the caller walks instead."""
    found = find_git_dir(os.path.realpath(st.cwd if st.cwd is not None else st.ws))
    if found is None:
        return False  # no repository: git diff of the working tree prints nothing
    tracked = tracked_paths(found[1])
    if tracked is None:
        return True
    for name in tracked:
        if sensitive_path(name):
            st.add(
                "ask",
                "credential-path",
                span,
                f"{prog} prints the changes of every file the repository tracks, and it "
                f"tracks the credential {clip(name)}; it needs approval",
            )
            break
    return False


def check_trees(
    st: State, prog: str, w0: Word, args: tuple[Word, ...] | list[Word], walk: Walk
) -> None:
    """Look through the trees a recursive program reads (see ``walk.py``)."""
    roots: list[tuple[str, tuple[int, int]]] = []
    implicit = not walk.roots
    if walk.workspace:
        if _tracked_credential(st, prog, (w0.start, w0.end)):
            roots.append((st.ws, (w0.start, w0.end)))  # the index is unreadable: walk it all
    elif implicit:
        if st.cwd is None:
            return  # after `cd $X`: the cd already asks, and the tree is unknown
        roots.append((st.cwd, (w0.start, w0.end)))
    for idx, value in walk.roots:
        w = args[idx] if 0 <= idx < len(args) else w0
        if (
            value == UNKNOWN
            or value.startswith("~")
            or w.glob
            or (st.cwd is None and not value.startswith("/"))
        ):
            continue  # an expansion, a home path or a pattern: already a finding
        raw = (
            "/" + value.lstrip("/")
            if value.startswith("/")
            else posixpath.join(st.cwd or "/", value)
        )
        roots.append((raw, (w.start, w.end)))
    budget = Budget()
    for raw, span in roots:
        if walk.revisions and not implicit and not os.path.lexists(raw):
            # git reads a name that is no file as a revision (git grep TOKEN
            # HEAD, git diff main): the files of a commit, secrets ever
            # committed included, which the working tree no longer shows
            st.add(
                "ask",
                "git-history",
                span,
                f"{prog} reads {clip(raw.rsplit('/', 1)[-1])} as a revision and prints "
                "committed file contents, which can hold a credential committed at any time; "
                "it needs approval",
            )
            continue
        if not within(posixpath.normpath(raw), st.ws):
            continue  # outside: the path check has already asked
        real = real_below(st, raw)
        if not within(real, st.ws_real) or not os.path.isdir(real):
            continue  # a file is read as the path it is; nothing to walk
        found = walk_tree(
            real,
            st.ws_real,
            follow=walk.follow,
            hidden=walk.hidden,
            # the whole workspace, when git's index could not be read
            depth=None if walk.workspace and raw == st.ws else walk.depth,
            secret=sensitive_path,
            budget=budget,
            skip_dirs=gitignored_dirs(real) if walk.gitignore else frozenset(),
            whitelists=walk.whitelists,
        )
        if found is None:
            continue
        if found.kind == "credential":
            st.add(
                "ask",
                "credential-path",
                span,
                f"{prog} reads the tree under {clip(raw)}, which holds the credential "
                f"{clip(found.path)}; it needs approval",
            )
        elif found.kind == "outside":
            rule = "credential-path" if sensitive_path(found.target) else "path-outside-workspace"
            st.add(
                "ask",
                rule,
                span,
                f"{prog} follows the symlink {clip(found.path)}, which leads outside the "
                f"workspace to {clip(found.target)}; it needs approval",
            )
        else:
            st.add(
                "ask",
                "tree-too-large",
                span,
                f"{prog} reads the tree under {clip(raw)}, which has more than "
                f"{WALK_LIMIT:,} entries for the guard to check; it needs approval",
            )
        return


def git_repository(st: State, w0: Word, vals: list[str]) -> None:
    """git reads the configuration of the repository it finds, and that
    configuration names programs git runs (diff.external, core.fsmonitor,
    textconv, pagers): only a repository Charter trusts is read-only."""
    if not vals or vals[0] in ("--version", "version", "help", "--help", "-h"):
        return
    if st.cwd is None:
        return  # after `cd $X`: the cd already asks
    real_cwd = real_below(st, st.cwd)
    if _prints_remote_urls(vals) and remote_url_credentials(real_cwd) is not False:
        st.add(
            "ask",
            "credential-path",
            (w0.start, w0.end),
            "the repository's configuration stores a remote URL with a user name or token "
            "(https://user:token@host), which this git command prints; it needs approval",
        )
    problem = untrusted_repository(real_cwd, st.ws_real, resolved=True)
    if problem is not None:
        st.add(
            "ask",
            "untrusted-repository",
            (w0.start, w0.end),
            f"git would use {problem}; its configuration can run programs, so git needs approval "
            "here",
        )


def _prints_remote_urls(vals: list[str]) -> bool:
    """git remote -v / get-url print the stored remote URLs."""
    k = 0
    while k < len(vals) and vals[k].startswith("-"):
        k += 1  # (the global options git allows here take no value)
    rest = vals[k + 1 :] if k < len(vals) and vals[k] == "remote" else None
    if rest is None:
        return False
    return rest[:1] == ["get-url"] or any(a in ("-v", "--verbose") for a in rest)


def generic_args(
    st: State,
    args: tuple[Word, ...] | list[Word],
    text_args: frozenset[int],
    paths: tuple[tuple[int, str], ...] = (),
    *,
    probe: bool = False,
) -> None:
    """Judge every argument that names a file: each word that is not text,
    and each path a program rule found inside a word (``--file=X``, ``-fX``,
    a sed ``r X`` command). ``probe``: the program's options are unknown
    and it may run unprompted ([safe_commands]), so a value glued to its
    flags is looked for on disk too."""
    for idx, w in enumerate(args):
        v = w.value
        if v is None:
            continue
        if sensitive_path(v):
            st.add(
                "ask",
                "credential-path",
                (w.start, w.end),
                f"{clip(v)} names a credential file or directory; it needs approval",
            )
            continue
        if idx in text_args:
            continue
        # (a word that is no option names itself: the common case, inline)
        cands: Sequence[tuple[str, bool]] = ((v, w.tilde),)
        if v[:1] == "-":
            cands = _path_candidates(v, w, st.cwd if probe else None)
        for cand, tilde in cands:
            # the word's own text was checked for a credential name just above
            if _path_finding(st, cand, tilde, (w.start, w.end), w.glob, named=cand == v):
                break
    for idx, value in paths:
        if not 0 <= idx < len(args) or args[idx].value is None or value == UNKNOWN:
            continue
        word = args[idx]
        _path_finding(st, value, value.startswith("~"), (word.start, word.end), False)


def _client_settings(st: State, rel: str, span: tuple[int, int]) -> None:
    """A write to ``rel`` (relative to the workspace's real root) that lands in
    a coding client's settings or instructions: an ask only a person answers."""
    reason = client_settings_path_reason(rel)
    if reason is not None:
        st.add(
            "ask",
            CLIENT_SETTINGS_RULE,
            span,
            f"{rel} is {reason}; only a person can approve writing it (launch flags do not)",
        )


def client_settings_args(
    st: State, args: tuple[Word, ...] | list[Word], text_args: frozenset[int]
) -> None:
    for idx, w in enumerate(args):
        v = w.value
        if v is None or idx in text_args:
            continue
        cands: Sequence[tuple[str, bool]] = ((v, w.tilde),)
        if v[:1] == "-":
            cands = _path_candidates(v, w, st.cwd)
        for cand, tilde in cands:
            if tilde or cand.startswith("~"):
                continue  # outside the workspace: other rules speak about it
            if cand.startswith("/"):
                raw = "/" + cand.lstrip("/")
            elif st.cwd is None:
                # relative to a directory changed earlier: judge the text alone
                if client_settings_path_reason(cand) is not None:
                    _client_settings(st, cand, (w.start, w.end))
                continue
            else:
                raw = join_relative(st.cwd, cand)
            real = real_below(st, raw)
            if within(real, st.ws_real):
                _client_settings(st, relative(real, st.ws_real), (w.start, w.end))


def _path_finding(
    st: State,
    value: str,
    tilde: bool,
    span: tuple[int, int],
    glob_word: bool,
    *,
    named: bool = False,
) -> bool:
    """Add the finding for one path an argument names, if it needs one."""
    problem = _path_problem(st, value, tilde, glob_word, named=named)
    if problem is None:
        return False
    rule, message = problem
    st.add("ask", rule, span, message + "; it needs approval")
    return True


def _path_candidates(v: str, w: Word, cwd: str | None) -> list[tuple[str, bool]]:
    """The paths a word may name when the program's options are not known
    (a [safe_commands] program): the word, or a value attached to an option:
    after any number of bundled flags (`-Rf/etc/x`), a rest that looks like
    a path or names an existing entry (`-fnotes.txt`, where notes.txt may
    be a symlink)."""
    if v.startswith("-") and len(v) > 1:
        if "=" in v:
            val = v.split("=", 1)[1]
            return [(val, val.startswith("~"))]
        if not v.startswith("--") and len(v) > 2:
            out: list[tuple[str, bool]] = []
            for k in range(2, len(v)):
                rest = v[k:]
                if rest.startswith(("/", "~", "..")):
                    return [*out, (rest, rest.startswith("~"))]
                if cwd is not None and os.path.lexists(posixpath.join(cwd, rest)):
                    out.append((rest, False))
            return out
        return []
    return [(v, w.tilde)]


def outside(st: State, value: str, tilde: bool, glob_word: bool = False) -> bool:
    """Whether a path the command names lies outside the workspace (or is a
    credential reached through it); see :func:`_path_problem`."""
    return _path_problem(st, value, tilde, glob_word) is not None


def _path_problem(
    st: State, value: str, tilde: bool, glob_word: bool = False, *, named: bool = False
) -> tuple[str, str] | None:
    """Why reading the path ``value`` needs approval: ``credential-path`` or
    ``path-outside-workspace`` with a message, or None.

    The text is judged first, then where the kernel really leads: a
    symlink's target, ``..`` after a symlink (the kernel climbs from the
    link's target, so there is no lexical normalisation before resolving),
    ``/dev/fd/..`` and ``/proc/self`` (links into the guard's own process
    table, which is not the command's). Only a handful of device files are
    taken as they are: the standard streams, the null device and the random
    sources.
    """
    if not named and sensitive_path(value):
        return "credential-path", f"{clip(value)} names a credential file or directory"
    if tilde or value.startswith("~"):
        return "path-outside-workspace", f"{clip(value)} is outside the workspace"
    if value.startswith("/"):
        raw = "/" + value.lstrip("/")
        if ".." not in raw.split("/"):
            device = posixpath.normpath(raw)
            if device in _DEVICES or FD_PATH.match(device):
                return None
    elif st.cwd is None:
        # relative to a directory changed earlier in the command: only a
        # climb is known to leave; anything else is judged where it runs
        if ".." in value.split("/"):
            return "path-outside-workspace", f"{clip(value)} is outside the workspace"
        return None
    else:
        raw = join_relative(st.cwd, value)
    norm = posixpath.normpath(raw)
    if not within(norm, st.ws):
        if sensitive_path(norm):
            return "credential-path", f"{clip(value)} leads to the credential {clip(norm)}"
        if raw.startswith(("/dev/", "/proc/")):
            # /dev/fd and /dev/stdin are links into /proc/self, whose meaning
            # the kernel decides: resolve them to name what is really read
            real = realpath(raw)
            if sensitive_path(real):
                return "credential-path", f"{clip(value)} leads to the credential {clip(real)}"
        return "path-outside-workspace", f"{clip(value)} is outside the workspace"
    real = real_below(st, raw)
    if not within(real, st.ws_real):
        if sensitive_path(real):
            return "credential-path", f"{clip(value)} leads to the credential {clip(real)}"
        return (
            "path-outside-workspace",
            f"{clip(value)} leads outside the workspace to {clip(real)}",
        )
    lexical = st.ws_real.rstrip("/") + norm[len(st.ws.rstrip("/")) :]
    if real != lexical and real != st.ws_real:
        # a symlink inside the workspace: judge the file it leads to by its name too
        rel = real[len(st.ws_real.rstrip("/")) + 1 :]
        if sensitive_path(rel):
            return "credential-path", f"{clip(value)} leads to the credential file {clip(rel)}"
    # the shell hands the command whatever the pattern matches now
    if glob_word and any(c in value for c in "*?[") and match_outside(st, raw) is not None:
        return "path-outside-workspace", f"{clip(value)} matches a file outside the workspace"
    return None


def match_outside(st: State, pattern: str) -> str | None:
    """The real path of the first existing match of ``pattern`` (at most
    1,000 are looked at) that lies outside the workspace, if any. A pattern
    too long to match in reasonable time (``fnmatch`` is quadratic in its
    wildcards) counts as reaching outside: it asks, never allows."""
    if len(pattern) > 1024:
        return pattern
    for match in itertools.islice(glob.iglob(pattern), 1000):
        found = realpath(match)
        if not within(found, st.ws_real):
            return found
    return None


def real_below(st: State, raw: str) -> str:
    """``os.path.realpath(raw)`` (see :func:`_resolve_below`), looked up once
    per decision: the program rule, the client-settings check and the write
    confinement each ask about the same argument. The memo lives in the
    decision's :class:`State` and dies with it, so it never answers for a
    later command; within one decision a second ``lstat`` of the same path
    could only see a change made after the first, which the command (run
    after the decision) could make anyway."""
    found = st.resolved.get(raw)
    if found is None:
        found = st.resolved[raw] = _resolve_below(st, raw)
    return found


def _resolve_below(st: State, raw: str) -> str:
    """``os.path.realpath(raw)``, cheaper for the common case of a plain path
    below the workspace: the workspace's own real path is known, so only the
    components under it are looked at, one ``lstat`` each, and a component
    that does not exist ends the walk (nothing below it can be a link). A
    ``.`` component is skipped, as ``realpath`` skips it (``find .``, ``./x``
    are most of the paths commands name); any symlink or ``..`` goes to the
    full resolution."""
    ws = st.ws
    if raw == ws:
        return st.ws_real
    prefix = ws.rstrip("/") + "/"
    if not raw.startswith(prefix):
        return realpath(raw)
    parts = raw[len(prefix) :].split("/")
    if ".." in parts:
        return realpath(raw)
    current = st.ws_real.rstrip("/")
    for i, part in enumerate(parts):
        if not part or part == ".":
            continue  # a doubled or trailing slash, or the directory itself
        current += "/" + part
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            rest = "/".join(p for p in parts[i + 1 :] if p and p != ".")
            return current + ("/" + rest if rest else "")
        except (OSError, ValueError):
            return realpath(raw)
        if stat.S_ISLNK(mode):
            return realpath(raw)
    return current or "/"


def relative(real: str, root: str) -> str:
    """``posixpath.relpath(real, root)`` for a ``real`` already known to be
    :func:`within` ``root`` (both absolute and normalised, as real paths
    are): the rest of the string, at a fraction of relpath's cost."""
    if real == root:
        return "."
    return real[len(root.rstrip("/")) + 1 :]


def join_relative(directory: str, name: str) -> str:
    """``posixpath.join(directory, name)`` for a ``name`` that does not start
    with ``/`` (callers have checked): the same string, without join's
    type checks and loop, which cost more than the rest of a path's check."""
    return directory + name if not directory or directory.endswith("/") else directory + "/" + name


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
