"""Which arguments of a program name the files it writes or deletes.

The shell guard holds every file a command writes to the same confinement
as ``write_file``: outside the workspace is a deny, a protected path inside
(``.git/``, credentials, ``.charter/``) gets write_file's answer. A redirect
shows its target; a program such as ``cp`` or ``rm`` hides it among its
arguments, so this module reads the arguments the way the program does
(GNU semantics: options anywhere, bundled flags, attached values, ``--``)
and says which of them are written (``write``) or removed (``delete``).

It knows the programs below, and nothing else: a program not listed is
judged by the rest of the guard (most ask). Arguments are the guard's
symbolic values, where :data:`UNKNOWN` stands for one only known at run
time; the guard treats any unknown argument of a writer as an unnameable
target, since it may be an option that moves the target (``-t DIR``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from charter.runtime.shell.options import Opt, Scanned, expand_long, long_given, scan, short_given

__all__ = ["CONFIGURED", "CWD", "PROGRAMS", "RUN_TIME", "WRITERS", "Target", "write_targets"]

Kind = Literal["write", "delete"]


@dataclass(frozen=True, slots=True)
class Target:
    """One file a command writes or deletes: the argument holding its path,
    where in that argument the path starts (0 for the whole argument, more
    for ``--output=FILE``, ``-oFILE``, ``of=FILE``), and what happens to it."""

    index: int
    offset: int
    kind: Kind


# _Spec is a NamedTuple (a tenth of a frozen dataclass's cost to define at
# start-up); Target keeps the dataclass: its field 'index' would shadow
# tuple.index.
class _Spec(NamedTuple):
    """How one program names the files it changes."""

    short: str = ""  # short options that take a value
    long: tuple[str, ...] = ()  # long options that take a value (without dashes)
    # which operands are written: every one, the last (a destination), every
    # one after the first (chmod MODE FILE...), the second (uniq IN OUT)
    operands: Literal["all", "first", "last", "after-first", "second", "none"] = "all"
    kind: Kind = "write"
    # what happens to the other operands when ``operands`` is "last": mv
    # removes its sources
    sources: Kind | None = None
    # options whose value is a written file or directory ("-o", "--output")
    outputs: tuple[str, ...] = ()
    # -t DIR / --target-directory=DIR: every operand is then a source
    target_dir: bool = False
    # other long options, so that abbreviations read as the program reads them
    flags: tuple[str, ...] = ()
    # options may follow operands (GNU); not for a wrapper, whose first
    # operand starts the command it runs
    permute: bool = True


# long options with a required value (getopt also takes it from the next
# argument); --backup, --reflink and --preserve take theirs only attached
_CP_LONG = ("target-directory", "suffix", "sparse", "no-preserve")
_CP_FLAGS = ("backup", "reflink", "preserve", "parents", "recursive", "update", "force")
# (de)compressors: FILE becomes FILE.gz beside it, or the reverse
_COMPRESSORS = (
    "gzip",
    "gunzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "unzstd",
    "lzma",
    "unlzma",
)
WRITERS: dict[str, _Spec] = {
    "rm": _Spec(kind="delete"),
    "rmdir": _Spec(kind="delete"),
    "unlink": _Spec(kind="delete"),
    "shred": _Spec(short="ns", long=("iterations", "size", "random-source")),
    "touch": _Spec(short="rdt", long=("reference", "date", "time")),
    "mkdir": _Spec(short="m", long=("mode",)),
    "mkfifo": _Spec(short="m", long=("mode",)),
    "mknod": _Spec(short="m", long=("mode",), operands="first"),
    "truncate": _Spec(short="sr", long=("size", "reference")),
    "tee": _Spec(flags=("output-error", "append", "ignore-interrupts")),
    "chmod": _Spec(operands="after-first", long=("reference",)),
    "chown": _Spec(operands="after-first", long=("reference", "from")),
    "chgrp": _Spec(operands="after-first", long=("reference",)),
    "chattr": _Spec(short="pv", operands="all"),
    "setfacl": _Spec(short="mMxX", long=("modify", "modify-file", "remove", "remove-file")),
    "cp": _Spec(short="tS", long=_CP_LONG, operands="last", target_dir=True, flags=_CP_FLAGS),
    "mv": _Spec(
        short="tS",
        long=_CP_LONG,
        operands="last",
        target_dir=True,
        sources="delete",
        flags=_CP_FLAGS,
    ),
    "ln": _Spec(
        short="tS",
        long=("target-directory", "suffix"),
        operands="last",
        target_dir=True,
        flags=("backup", "symbolic", "force"),
    ),
    "link": _Spec(operands="last"),
    "install": _Spec(
        short="tSmog",
        long=("target-directory", "suffix", "mode", "owner", "group", "strip-program", "context"),
        operands="last",
        target_dir=True,
    ),
    "sort": _Spec(
        short="otkST",
        long=(
            "output",
            "key",
            "field-separator",
            "buffer-size",
            "temporary-directory",
            "files0-from",
            "parallel",
            "batch-size",
            "compress-program",
            "random-source",
            "sort",
        ),
        operands="none",
        outputs=("-o", "--output"),
    ),
    "uniq": _Spec(
        short="fsw", long=("skip-fields", "skip-chars", "check-chars"), operands="second"
    ),
    "split": _Spec(
        short="abClnt",
        long=(
            "suffix-length",
            "bytes",
            "line-bytes",
            "lines",
            "number",
            "separator",
            "additional-suffix",
            "filter",
        ),
        operands="second",
    ),
    "csplit": _Spec(
        short="fbn",
        long=("prefix", "suffix-format", "digits"),
        operands="none",
        outputs=("-f", "--prefix"),
    ),
    "patch": _Spec(
        short="pdDioBrVYzFgx",
        long=(
            "strip",
            "directory",
            "ifdef",
            "input",
            "output",
            "prefix",
            "reject-file",
            "version-control",
            "basename-prefix",
            "suffix",
            "fuzz",
            "get",
            "debug",
            "quoting-style",
            "reject-format",
        ),
        operands="first",
        outputs=("-o", "--output", "-d", "--directory", "-r", "--reject-file"),
    ),
    "curl": _Spec(
        short="oDcKbdeEFHrTuUXxyYzAwQmCtP",
        long=(
            "output",
            "output-dir",
            "dump-header",
            "cookie-jar",
            "trace",
            "trace-ascii",
            "stderr",
            "config",
            "cookie",
            "data",
            "header",
            "request",
            "user",
            "proxy",
            "url",
            "upload-file",
            "etag-save",
            "hsts",
            "alt-svc",
        ),
        operands="none",
        outputs=(
            "-o",
            "--output",
            "--output-dir",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--etag-save",
            "--hsts",
            "--alt-svc",
        ),
    ),
    "wget": _Spec(
        short="oaOPeiUTtwQlARDIXB",
        long=(
            "output-file",
            "append-output",
            "output-document",
            "directory-prefix",
            "execute",
            "input-file",
            "user-agent",
            "timeout",
            "tries",
            "wait",
            "quota",
            "level",
            "accept",
            "reject",
            "domains",
            "include-directories",
            "exclude-directories",
            "save-cookies",
            "load-cookies",
        ),
        operands="none",
        outputs=(
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "-O",
            "--output-document",
            "-P",
            "--directory-prefix",
            "--save-cookies",
        ),
    ),
    "unzip": _Spec(short="d", operands="none", outputs=("-d",)),
    # programs that write a file named by an option (else to their output)
    "shuf": _Spec(
        short="oniu",
        long=("output", "head-count", "input-range", "random-source"),
        operands="none",
        outputs=("-o", "--output"),
    ),  # fmt: skip
    "iconv": _Spec(
        short="oft",
        long=("output", "from-code", "to-code"),
        operands="none",
        outputs=("-o", "--output"),
    ),  # fmt: skip
    "uudecode": _Spec(
        short="o", long=("output-file",), operands="none", outputs=("-o", "--output-file")
    ),  # fmt: skip
    # sponge FILE: soaks up its input, then writes FILE
    "sponge": _Spec(),
    "tree": _Spec(
        short="LPIoH",
        long=("charset", "filelimit", "timefmt", "sort"),
        operands="none",
        outputs=("-o",),
    ),
    # xxd also takes long options after one dash (-cols 8), which a getopt
    # reading sees as an operand: every operand after the first counts
    "xxd": _Spec(short="cglsonC", operands="after-first"),
    "time": _Spec(
        short="fo",
        long=("format", "output"),
        operands="none",
        outputs=("-o", "--output"),
        permute=False,
    ),
}
for _compressor in _COMPRESSORS:
    # FILE becomes FILE.gz beside it (and FILE goes), unless -c/--stdout
    WRITERS[_compressor] = _Spec(short="S", long=("suffix",), flags=("stdout", "to-stdout", "keep"))
for _fetch in ("rsync", "scp"):
    # the destination is the last operand; a host:path one is the network;
    # rsync also writes its log, temporary, partial and backup directories
    # and batch files where their options say
    WRITERS[_fetch] = _Spec(
        operands="last",
        short="eFiloPS" if _fetch == "scp" else "eTf",
        outputs=()
        if _fetch == "scp"
        else (
            "-T",
            "--temp-dir",
            "--log-file",
            "--partial-dir",
            "--backup-dir",
            "--write-batch",
            "--only-write-batch",
        ),  # fmt: skip
        flags=() if _fetch == "scp" else ("backup", "partial"),
        long=(
            "write-batch",
            "only-write-batch",
            "read-batch",
            "rsh",
            "rsync-path",
            "temp-dir",
            "filter",
            "exclude",
            "include",
            "exclude-from",
            "include-from",
            "files-from",
            "log-file",
            "partial-dir",
            "backup-dir",
            "compare-dest",
            "copy-dest",
            "link-dest",
            "chmod",
            "out-format",
        ),
    )
del _compressor, _fetch

# vi and its relatives: they write the files they edit, and commands given
# on their command line (-c 'w! /x', +'!cmd', -S script) write anything.
_VIM = frozenset({"vi", "vim", "nvim", "ex", "view", "vimdiff", "gvim", "rvim", "nvi", "elvis"})

# Every program write_targets knows.
PROGRAMS = frozenset(WRITERS) | {"dd", "find", "mktemp", "sed", "tar", "zip", "cpio"} | _VIM

# find's actions that write a file named by their argument
_FIND_FILE_ACTIONS = {"-fprint": 1, "-fprint0": 1, "-fprintf": 1, "-fls": 1}
_FIND_EXEC = ("-exec", "-execdir", "-ok", "-okdir")
# find options before the starting points, and those taking a value
_FIND_LEAD = ("-H", "-L", "-P")
_REMOTE = re.compile(r"^[^/]*:")  # host:path (rsync also host::module)


# Target indexes that are no argument: the working directory itself (find
# without a starting point, tar extracting, ln with one operand), and a
# directory only known at run time ($TMPDIR for mktemp).
CWD = -1
RUN_TIME = -2
# the files are named by a configuration the command reads (curl -K FILE,
# wget --config FILE, a wget -e command the guard does not know)
CONFIGURED = -3


def write_targets(prog: str, args: Sequence[str]) -> tuple[Target, ...] | None:
    """The files ``prog`` writes or deletes among ``args``, or None when the
    program is not one this module knows (``dd``, ``find``, ``mktemp``,
    ``sed -i`` and ``tar`` included). A target's index may be :data:`CWD` or
    :data:`RUN_TIME` instead of an argument's."""
    if prog == "dd":
        return tuple(Target(i, 3, "write") for i, a in enumerate(args) if a.startswith("of="))
    if prog == "find":
        return _find(args)
    if prog == "mktemp":
        return _mktemp(args)
    if prog == "sed":
        return _sed(args)
    if prog == "tar":
        return _tar(args)
    if prog == "zip":
        return _zip(args)
    if prog == "cpio":
        return _cpio(args)
    if prog in _VIM:
        return _vim(prog, args)
    if prog == "unzip" and any(
        a.startswith("-") and ":" in a for a in args[: next(
            (k for k, a in enumerate(args) if not a.startswith("-")), len(args))]
    ):  # fmt: skip
        # -: keeps `../` in member names: the archive names what it writes
        return (*_by_spec(prog, WRITERS["unzip"], args), Target(CONFIGURED, 0, "write"))
    spec = WRITERS.get(prog)
    if spec is None:
        return None
    if prog in ("curl", "wget"):
        return _by_spec(prog, spec, args) + _fetch_configured(prog, spec, args)
    return _by_spec(prog, spec, args)


# wget -e/--execute runs one .wgetrc command: these name a file or directory
# it writes (keys compared as wget does, without `_` and `-`, any case);
# those in _WGETRC_PLAIN change nothing on disk; any other may (use_askpass
# runs a program), so what it writes is only known at run time.
_WGETRC_WRITES = frozenset(
    {"outputdocument", "dirprefix", "logfile", "savecookies", "warcfile", "warctempdir",
     "hstsfile"}
)  # fmt: skip
_WGETRC_PLAIN = frozenset(
    {"robots", "tries", "timeout", "wait", "waitretry", "useragent", "checkcertificate",
     "verbose", "quiet", "retryconnrefused", "dnstimeout", "connecttimeout", "readtimeout",
     "limitrate", "header", "timestamping", "continue", "recursive", "noparent",
     "maxredirect", "reclevel", "inet4only", "inet6only", "serverresponse", "spider"}
)  # fmt: skip
_WGETRC_LINE = re.compile(r"^\s*([A-Za-z_-]+)\s*=\s*")


def _fetch_configured(prog: str, spec: _Spec, args: Sequence[str]) -> tuple[Target, ...]:
    s = scan(args, spec.short, spec.long)
    out: list[Target] = []
    for o in s.opts:
        # curl takes no abbreviations; wget (getopt) does
        if prog == "curl":
            config = o.name in ("-K", "--config")
            execute = False
        else:
            config = len(o.name) > 3 and "--config".startswith(o.name)
            execute = o.name == "-e" or (len(o.name) > 3 and "--execute".startswith(o.name))
        if config:
            out.append(Target(CONFIGURED, 0, "write"))
        elif execute and o.value is not None:
            out.extend(_wgetrc_command(args, o))
    return tuple(out)


def _wgetrc_command(args: Sequence[str], o: Opt) -> tuple[Target, ...]:
    value = o.value or ""
    m = _WGETRC_LINE.match(value)
    if m is None:
        return (Target(CONFIGURED, 0, "write"),)
    key = m.group(1).replace("_", "").replace("-", "").lower()
    if key in _WGETRC_PLAIN:
        return ()
    if key not in _WGETRC_WRITES:
        return (Target(CONFIGURED, 0, "write"),)
    # where the value starts inside its argument (attached or separate)
    arg = args[o.index]
    if len(arg) > len(value) and arg.endswith(value):
        index, start = o.index, len(arg) - len(value)  # -eVALUE, --execute=VALUE
    else:
        index, start = o.index + 1, 0  # -e VALUE
    if index >= len(args):
        return (Target(CONFIGURED, 0, "write"),)
    return (Target(index, start + m.end(), "write"),)


def _by_spec(prog: str, spec: _Spec, args: Sequence[str]) -> tuple[Target, ...]:
    names = (*spec.long, *spec.flags, "target-directory", "no-target-directory")
    full = expand_long(args, names)
    s = scan(full, spec.short, spec.long, permute=spec.permute)
    out: list[Target] = []
    for o in s.opts:
        if o.value is not None and (o.name in spec.outputs or _long_in(o, spec.outputs)):
            out.append(_value_target(full, o, spec, "write"))
    if prog in _COMPRESSORS and (
        short_given(s, "clt") or long_given(s, ("stdout", "to-stdout", "test", "list"))
    ):
        return tuple(out)  # to standard output: the files are only read
    operands = list(s.operands)
    if prog in ("rsync", "scp"):
        operands = [i for i in operands if not _REMOTE.match(full[i])]
        if len(s.operands) < 2 or not s.operands or s.operands[-1] not in operands:
            return tuple(out)  # the destination is remote (or there is none)
    target_dir = None
    if spec.target_dir:
        target_dir = short_given(s, "t") or long_given(s, ("target-directory",))
    if target_dir is not None and target_dir.value is not None:
        out.append(_value_target(full, target_dir, spec, "write"))
        if spec.sources is not None:
            out.extend(Target(i, 0, spec.sources) for i in operands)
        return tuple(out)
    if prog == "install" and (short_given(s, "d") or long_given(s, ("directory",))):
        return (*out, *(Target(i, 0, "write") for i in operands))
    if prog == "ln" and len(operands) == 1:
        # ln TARGET: the link is made in the working directory
        return (*out, Target(CWD, 0, "write"))
    if prog == "chmod" and any(re.fullmatch(r"-[rwxXst]+", full[i]) for i in range(len(full))):
        # chmod -w FILE: the mode is written like an option, every operand is a file
        return (*out, *(Target(i, 0, spec.kind) for i in operands))
    if spec.operands == "all":
        out.extend(Target(i, 0, spec.kind) for i in operands)
    elif spec.operands == "first" and operands:
        out.append(Target(operands[0], 0, spec.kind))
    elif spec.operands == "last" and operands:
        out.append(Target(operands[-1], 0, spec.kind))
        if spec.sources is not None:
            out.extend(Target(i, 0, spec.sources) for i in operands[:-1])
    elif spec.operands == "after-first":
        chosen = operands if long_given(s, ("reference",)) else operands[1:]
        out.extend(Target(i, 0, spec.kind) for i in chosen)
    elif spec.operands == "second" and len(operands) >= 2:
        out.append(Target(operands[1], 0, spec.kind))
    return tuple(out)


def _long_in(o: Opt, outputs: tuple[str, ...]) -> bool:
    return o.name.startswith("--") and o.name in outputs


def _value_target(args: Sequence[str], o: Opt, spec: _Spec, kind: Kind) -> Target:
    """Where the value of option ``o`` is: inside its own argument
    (``--output=F``, ``-oF``, ``-xoF``) or the next argument (``-o F``)."""
    arg = args[o.index]
    if o.name.startswith("--"):
        eq = arg.find("=")
        return Target(o.index, eq + 1, kind) if eq != -1 else Target(o.index + 1, 0, kind)
    if arg.startswith("--"):
        return Target(o.index + 1, 0, kind)
    # a bundle: the first letter that takes a value ends it
    for pos in range(1, len(arg)):
        if arg[pos] in spec.short:
            if pos + 1 < len(arg):
                return Target(o.index, pos + 1, kind)
            return Target(o.index + 1, 0, kind)
    return Target(o.index + 1, 0, kind)


def _find(args: Sequence[str]) -> tuple[Target, ...]:
    """``find``: what ``-delete`` removes (the starting points, and all under
    them), the file of ``-fprint``/``-fls``, and the starting points again
    when ``-exec`` runs a writer on ``{}`` (``find /etc -exec chmod 777 {} +``).

    A find that ``-exec`` runs is itself a find, whose own ``-exec`` runs to
    the same terminator: such a chain is worked out innermost first on an
    explicit stack, each level reading only its own words, so a chain of any
    length costs linear time and no depth of Python stack."""
    n = len(args)
    # the first ";" or "+" at or after each index (an -exec's end)
    ends = [n] * (n + 1)
    for k in range(n - 1, -1, -1):
        ends[k] = k if args[k] in (";", "+") else ends[k + 1]
    done: dict[int, tuple[Target, ...]] = {}
    stack = [(0, n)]
    while stack:
        lo, hi = stack[-1]
        missing: list[tuple[int, int]] = []
        found = _find_level(args, lo, hi, ends, done, missing)
        if missing:
            stack.extend(missing)  # its inner finds first; then this level again
            continue
        assert found is not None
        done[lo] = found
        stack.pop()
    return done[0]


def _find_level(
    args: Sequence[str],
    lo: int,
    hi: int,
    ends: list[int],
    done: dict[int, tuple[Target, ...]],
    missing: list[tuple[int, int]],
) -> tuple[Target, ...] | None:
    """The targets of the find whose arguments are ``args[lo:hi]`` (indexes
    relative to ``lo``), or None with the inner finds it needs in ``missing``."""
    lead = lo
    while lead < hi and (args[lead] in _FIND_LEAD or args[lead].startswith(("-D", "-O"))):
        lead += 2 if args[lead] == "-D" else 1
    starts = lead
    while starts < hi and not (args[starts].startswith("-") or args[starts] in ("(", "!")):
        starts += 1
    points = range(lead - lo, starts - lo)
    out: list[Target] = []
    changes_found: Kind | None = None
    i = starts
    while i < hi:
        a = args[i]
        if a == "-delete":
            changes_found = "delete"
        elif a in _FIND_FILE_ACTIONS and i + 1 < hi:
            out.append(Target(i + 1 - lo, 0, "write"))
            i += 1
        elif a in _FIND_EXEC:
            j = min(ends[i + 1], hi)
            if j > i + 1:
                # the inner command is args[i + 1 : j]; its targets' indexes
                # count from its first argument, args[i + 2]
                prog = posixpath.basename(args[i + 1])
                inner: tuple[Target, ...] | None
                if prog == "find":
                    inner = done.get(i + 2)
                    if inner is None:
                        missing.append((i + 2, j))
                        inner = ()
                else:
                    inner = write_targets(prog, args[i + 2 : j]) or ()
                for t in inner:
                    # (a negative index counts back from the inner command's end)
                    word = args[i + 2 + t.index] if t.index >= -1 else args[j + 1 + t.index]
                    if "{}" in word[t.offset :]:
                        changes_found = changes_found or t.kind
            i = j
        i += 1
    if missing:
        return None
    if changes_found is not None:
        # without a starting point find searches `.`
        out.extend(Target(k, 0, changes_found) for k in points)
        if not points:
            out.append(Target(CWD, 0, changes_found))
    return tuple(out)


def _mktemp(args: Sequence[str]) -> tuple[Target, ...]:
    """``mktemp`` creates a file or directory: under ``-p DIR`` /
    ``--tmpdir=DIR``, else from a template with a directory part, else in
    the current directory for a bare template, and in ``$TMPDIR`` (index
    -2: only known at run time) without one or with ``-t``."""
    full = expand_long(args, ("tmpdir", "dry-run", "directory", "quiet", "suffix"))
    s = scan(full, "p", ("suffix",))
    if short_given(s, "u") or long_given(s, ("dry-run",)):
        return ()
    where = short_given(s, "p")
    if where is not None and where.value:
        return (_value_target(full, where, _Spec(short="p"), "write"),)
    tmpdir = next((o for o in s.opts if o.name == "--tmpdir"), None)
    if tmpdir is not None and tmpdir.value:
        return (Target(tmpdir.index, full[tmpdir.index].find("=") + 1, "write"),)
    if s.operands and tmpdir is None and short_given(s, "t") is None:
        return (Target(s.operands[0], 0, "write"),)  # the template, from the working directory
    return (Target(RUN_TIME, 0, "write"),)


_SED_LONG = ("expression", "file", "line-length", "separate", "in-place", "null-data")


def _sed(args: Sequence[str]) -> tuple[Target, ...]:
    """``sed -i`` / ``--in-place`` rewrites its input files (the operands
    after the script, or all of them with ``-e``/``-f``)."""
    full = expand_long(args, _SED_LONG)
    s: Scanned = scan(full, "efl", ("expression", "file", "line-length"))
    # -i, bundled (-ni) or with its suffix attached (-i.bak), or --in-place[=SUFFIX]
    if short_given(s, "i") is None and not any(o.name == "--in-place" for o in s.opts):
        return ()
    scripted = short_given(s, "ef") or long_given(s, ("expression", "file"))
    files = s.operands if scripted else s.operands[1:]
    return tuple(Target(i, 0, "write") for i in files)


def _tar(args: Sequence[str]) -> tuple[Target, ...]:
    """``tar``: the archive of a create, append or update (``-f``), and the
    directory an extract writes into (``-C``, else the working directory).
    The old form without a dash (``tar czf out.tgz``) reads its letters'
    values from the next arguments in order."""
    letters = ""
    values: list[tuple[str, int]] = []  # (letter, index of its value)
    k = 0
    if args and not args[0].startswith("-"):
        letters = args[0]
        k = 1
        for ch in args[0]:
            if ch in "fCTXbgKLNV":
                values.append((ch, k))
                k += 1
    full = expand_long(
        args[k:],
        (
            "file",
            "directory",
            "create",
            "extract",
            "append",
            "update",
            "get",
            "concatenate",
            "catenate",
        ),
    )
    s = scan(
        full,
        "fCTXbgKLNV",
        (
            "file",
            "directory",
            "files-from",
            "exclude-from",
            "blocking-factor",
            "listed-incremental",
            "starting-file",
            "tape-length",
            "newer",
            "volno-file",
            "index-file",
            "transform",
            "xform",
            "to-command",
            "use-compress-program",
            "info-script",
            "new-volume-script",
            "rsh-command",
            "checkpoint-action",
            "owner",
            "group",
            "mode",
            "mtime",
            "format",
            "label",
            "exclude",
            "suffix",
        ),
    )
    for o in s.opts:
        if len(o.name) == 2:
            letters += o.name[1]
    creates = any(c in letters for c in "cruA") or long_given(
        s, ("create", "append", "update", "concatenate", "catenate")
    )
    extracts = "x" in letters or long_given(s, ("extract", "get"))
    out: list[Target] = []
    for ch, idx in values:
        if idx < len(args) and ((ch == "f" and creates) or (ch == "C" and extracts)):
            out.append(Target(idx, 0, "write"))
    spec = _Spec(short="fCTXbgKLNV")
    for o in s.opts:
        if o.value is None:
            continue
        is_file = o.name == "-f" or o.name == "--file"
        is_dir = o.name == "-C" or o.name == "--directory"
        if (is_file and creates) or (is_dir and extracts):
            t = _value_target(full, o, spec, "write")
            out.append(Target(t.index + k, t.offset, "write"))
    for ch, idx in values:
        if ch == "g" and idx < len(args):
            out.append(Target(idx, 0, "write"))  # the snapshot file it updates
    for o in s.opts:
        name = o.name
        writes_value = name == "-g" or (
            len(name) > 3 and any(f.startswith(name) for f in ("--listed-incremental",
                                                               "--index-file"))
        )  # fmt: skip
        if writes_value and o.value is not None:
            t = _value_target(full, o, spec, "write")
            out.append(Target(t.index + k, t.offset, "write"))
        if extracts and (
            name == "-P"
            or (len(name) > 3 and any(f.startswith(name) for f in ("--absolute-names",
                                                                   "--transform", "--xform")))
        ):  # fmt: skip
            # members keep a leading / or are renamed: the archive names the files
            out.append(Target(CONFIGURED, 0, "write"))
    if extracts and "P" in letters:
        out.append(Target(CONFIGURED, 0, "write"))
    if creates and long_given(s, ("remove-files",)):
        # --remove-files deletes what it archived
        out.extend(Target(k + i, 0, "delete") for i in s.operands)
    if (
        extracts
        and not any(ch == "C" for ch, _ in values)
        and not any(o.name in ("-C", "--directory") for o in s.opts)
    ):
        out.append(Target(CWD, 0, "write"))  # into the working directory
    return tuple(out)


# Info-ZIP zip's options that take the next argument as their value (its
# own parser: multi-letter short options, no bundling of these), and those
# whose value is a file or directory it writes.
_ZIP_VALUED = frozenset(
    {"-b", "-n", "-t", "-tt", "-P", "-Z", "-s", "-sp", "-O", "-ds", "-lf", "-TT", "-I", "-Y",
     "--temp-path", "--suffixes", "--from-date", "--before-date", "--password",
     "--compression-method", "--split-size", "--output-file", "--dot-size", "--logfile-path",
     "--unzip-command"}
)  # fmt: skip
_ZIP_WRITES = frozenset({"-b", "-O", "-lf", "--temp-path", "--output-file", "--logfile-path"})
_ZIP_LISTS = frozenset({"-x", "-i", "--exclude", "--include"})


def _zip(args: Sequence[str]) -> tuple[Target, ...]:
    """``zip``: the archive (its first operand, which it creates or
    rewrites), ``-O``/``--output-file``, the temporary directory ``-b`` and
    the log file ``-lf``. The name lists after ``-x``/``-i`` run to the next
    option."""
    out: list[Target] = []
    archive = False
    listing = False
    k = 0
    while k < len(args):
        a = args[k]
        if a.startswith("-") and len(a) > 1:
            listing = False
            name, eq, _value = a.partition("=")
            if name in _ZIP_LISTS:
                listing = True
            elif a in _ZIP_VALUED:
                if a in _ZIP_WRITES and k + 1 < len(args):
                    out.append(Target(k + 1, 0, "write"))
                k += 1
            elif eq and name in _ZIP_WRITES:
                out.append(Target(k, len(name) + 1, "write"))
        elif not listing and not archive:
            archive = True
            out.append(Target(k, 0, "write"))
        k += 1
    return tuple(out)


def _cpio(args: Sequence[str]) -> tuple[Target, ...]:
    """``cpio``: copy-in (-i) and pass-through (-p) write the names the
    archive or the input list holds, absolute ones included; copy-out (-o)
    writes its archive to -F/-O FILE (else to its output)."""
    valued = ("file", "format", "message", "owner", "rsh-command", "block-size", "io-size",
              "pattern-file", "rename-batch-file")  # fmt: skip
    s = scan(args, "FOIHMERCc", valued)
    letters = "".join(o.name[1:] for o in s.opts if not o.name.startswith("--"))
    longs = {o.name for o in s.opts if o.name.startswith("--")}
    if "i" in letters or "p" in letters or longs & {"--extract", "--pass-through"}:
        return (Target(CONFIGURED, 0, "write"),)
    out: list[Target] = []
    for o in s.opts:
        if o.value is not None and (o.name in ("-F", "-O") or o.name == "--file"):
            out.append(_value_target(args, o, _Spec(short="FOIHMERCc", long=("file",)), "write"))
    return tuple(out)


# vim's options that take the next argument; those marked run commands or
# scripts (the rest name a terminal, a tag, a server...). -w/-W write every
# typed key to a file.
_VIM_VALUED = frozenset({"-c", "--cmd", "-S", "-s", "-u", "-U", "-i", "-T", "-t", "-q", "-w",
                         "-W", "--servername", "--startuptime", "--remote-send",
                         "--remote-expr"})  # fmt: skip
_VIM_RUNS = frozenset({"-c", "--cmd", "-S", "-s", "-u", "-U", "-w", "-W", "--remote-send",
                       "--remote-expr", "--startuptime", "-i"})  # fmt: skip


def _vim(prog: str, args: Sequence[str]) -> tuple[Target, ...]:
    """vi/vim/nvim: every file named is one it may write (unless read-only:
    -R, -M, view), and a command or script from its command line
    (``-c``, ``--cmd``, ``+CMD`` other than a line number, ``-S``, ``-s``,
    ``-u``) may write anything: unnameable."""
    out: list[Target] = []
    read_only = prog in ("view",)
    operands: list[int] = []
    k = 0
    while k < len(args):
        a = args[k]
        if a == "--":
            operands.extend(range(k + 1, len(args)))
            break
        if a in _VIM_VALUED:
            if a in _VIM_RUNS:
                out.append(Target(CONFIGURED, 0, "write"))
            k += 2
            continue
        if a.startswith("+"):
            if not re.fullmatch(r"\+[0-9]*", a):
                out.append(Target(CONFIGURED, 0, "write"))  # +CMD (+/pattern too: rare)
        elif a.startswith("-") and len(a) > 1:
            if a.startswith(("-c", "-S", "-s", "-u", "-w", "-W")) and not a.startswith("--"):
                out.append(Target(CONFIGURED, 0, "write"))  # an attached value
            elif a in ("-R", "-M", "-m"):
                read_only = True
        else:
            operands.append(k)
        k += 1
    if not read_only:
        out.extend(Target(i, 0, "write") for i in operands)
    return tuple(out)
