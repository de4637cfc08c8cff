"""File and system inspection tools: their option grammars, the options that
write or change state, read file lists the command line does not show, or
walk whole trees.

Every program here has a :class:`Spec` so that a path given to an option is
resolved the same way whether it is attached (``date -fnotes.txt``,
``du --exclude-from=X``) or separate (``date -f notes.txt``).
"""

from __future__ import annotations

from collections.abc import Sequence

from charter.runtime.shell.options import Read, Spec, read_args
from charter.runtime.shell.programs.base import (
    OK,
    Checked,
    Checker,
    Issue,
    Walk,
    checked_read,
    one,
    spec_checker,
)

__all__ = [
    "SPEC_CHECKERS",
    "checksum",
    "date",
    "diff",
    "du",
    "file",
    "hidden_list",
    "hostname",
    "ls",
    "strings",
    "tree",
    "wc",
    "xxd",
]


def hidden_list(index: int, program: str, option: str, source: str) -> Issue:
    """The ask for an option that makes a program read the names of the
    files it opens from a file or stdin (class 4: the guard cannot check
    names it never sees)."""
    return Issue(
        "hidden-file-list",
        index,
        f"{program} {option} reads the names of the files it opens from {source}, "
        "which the guard cannot check; name the files on the command line to run unprompted",
    )


def _source(value: str | None) -> str:
    return "standard input" if value in (None, "-", "/dev/stdin") else repr(value)


# Programs whose only rule is their option grammar. Text-valued options are
# listed where certain (so that `cut -d/` is not taken for a path); path-valued
# ones completely.
_SPECS: dict[str, Spec] = {
    "cat": Spec(),
    "head": Spec(text="cn", long_text=("bytes", "lines")),
    "tail": Spec(
        text="cns",
        long_text=("bytes", "lines", "pid", "sleep-interval", "max-unchanged-stats"),
        long_optional=("follow",),
    ),
    "cut": Spec(
        text="bcdf", long_text=("bytes", "characters", "delimiter", "fields", "output-delimiter")
    ),
    "nl": Spec(
        text="bdfhilnsvw",
        long_text=(
            "body-numbering",
            "section-delimiter",
            "footer-numbering",
            "header-numbering",
            "line-increment",
            "join-blank-lines",
            "number-format",
            "number-separator",
            "starting-line-number",
            "number-width",
        ),
    ),
    "stat": Spec(text="c", long_text=("format", "printf", "cached")),
    "df": Spec(
        text="Btx", long_text=("block-size", "type", "exclude-type"), long_optional=("output",)
    ),
    "pwd": Spec(),
    "basename": Spec(text="s", long_text=("suffix",)),
    "dirname": Spec(),
    "realpath": Spec(long_path=("relative-to", "relative-base")),
    "readlink": Spec(),
    "whoami": Spec(),
    "id": Spec(),
    "uname": Spec(),
    "which": Spec(),
    "comm": Spec(long_text=("output-delimiter",)),
    "cmp": Spec(text="in", long_text=("ignore-initial", "bytes")),
    "base64": Spec(text="w", long_text=("wrap",)),
    "base32": Spec(text="w", long_text=("wrap",)),
    "od": Spec(
        text="AjNSt",
        long_text=("address-radix", "skip-bytes", "read-bytes", "format", "endian"),
        long_optional=("strings", "width"),
    ),
    "hexdump": Spec(text="ens", path="f", abbreviations=False),
    "column": Spec(text="cson", long_text=("columns", "separator", "output-separator")),
    "fold": Spec(text="w", long_text=("width",)),
    "fmt": Spec(text="pwg", long_text=("prefix", "width", "goal")),
    "paste": Spec(text="d", long_text=("delimiters",)),
    "join": Spec(text="aejotv12"),
    "expand": Spec(text="t", long_text=("tabs",)),
    "unexpand": Spec(text="t", long_text=("tabs",)),
    "rev": Spec(),
    "tac": Spec(text="s", long_text=("separator",)),
    "tr": Spec(),
    "nproc": Spec(long_text=("ignore",)),
    "arch": Spec(),
    "groups": Spec(),
    "uptime": Spec(),
    "free": Spec(text="sc", long_text=("seconds", "count")),
    "tty": Spec(),
    "locale": Spec(),
    "lsblk": Spec(text="oxMIE", long_text=("output", "sort", "include", "exclude", "dedup")),
}

# Programs whose arguments are all text (tr's sets are also text).
_TEXT_PROGRAMS = frozenset({"tr", "whoami", "id", "uname", "arch", "groups", "nproc", "locale"})


def _all_text(spec: Spec) -> Checker:
    def check(args: Sequence[str]) -> Checked:
        return Checked((), frozenset(range(len(args))), read_args(args, spec).path_values())

    return check


SPEC_CHECKERS: dict[str, Checker] = {
    name: (_all_text(spec) if name in _TEXT_PROGRAMS else spec_checker(spec))
    for name, spec in _SPECS.items()
}


# --- programs with more to say -------------------------------------------------------------------

_WC = Spec(
    long_path=("files0-from",),
    long_flags=("bytes", "chars", "lines", "max-line-length", "words", "total"),
)


def wc(args: Sequence[str]) -> Checked:
    r = read_args(args, _WC)
    o = r.given("--files0-from")
    issues = [hidden_list(o.index, "wc", "--files0-from", _source(o.value))] if o else []
    return checked_read(r, issues)


_CHECKSUM = Spec(
    text="al",
    long_text=("algorithm", "length"),
    long_flags=(
        "binary",
        "check",
        "tag",
        "text",
        "zero",
        "ignore-missing",
        "quiet",
        "status",
        "strict",
        "warn",
        "untagged",
        "base64",
        "raw",
        "debug",
    ),
)


def checksum(name: str) -> Checker:
    """md5sum, sha*sum, b2sum, cksum: with -c the files read are named
    inside the list files."""

    def check(args: Sequence[str]) -> Checked:
        r = read_args(args, _CHECKSUM)
        o = r.given("-c", "--check")
        issues = []
        if o is not None:
            lists = [args[i] for i in r.operands] or ["-"]
            issues.append(hidden_list(o.index, name, "-c", ", ".join(_source(v) for v in lists)))
        return checked_read(r, issues)

    return check


_DU = Spec(
    text="Bdt",
    path="X",
    long_text=("block-size", "max-depth", "threshold", "exclude", "time-style"),
    long_path=("exclude-from", "files0-from"),
    long_optional=("time",),
    long_flags=(
        "null",
        "all",
        "apparent-size",
        "bytes",
        "total",
        "dereference-args",
        "human-readable",
        "inodes",
        "dereference",
        "count-links",
        "no-dereference",
        "separate-dirs",
        "si",
        "summarize",
        "one-file-system",
        "help",
        "version",
    ),
)


def du(args: Sequence[str]) -> Checked:
    r = read_args(args, _DU)
    o = r.given("--files0-from")
    issues = [hidden_list(o.index, "du", "--files0-from", _source(o.value))] if o else []
    follow = r.given("-L", "--dereference") is not None
    walk = Walk(tuple((i, args[i]) for i in r.operands), follow=follow)
    return checked_read(r, issues, walk=walk)


_LS = Spec(
    text="ITw",
    long_text=(
        "block-size",
        "format",
        "hide",
        "ignore",
        "indicator-style",
        "quoting-style",
        "sort",
        "time",
        "time-style",
        "tabsize",
        "width",
    ),
    long_optional=("color", "hyperlink", "classify"),
    long_flags=(
        "all",
        "almost-all",
        "author",
        "escape",
        "ignore-backups",
        "directory",
        "dired",
        "file-type",
        "full-time",
        "group-directories-first",
        "no-group",
        "human-readable",
        "si",
        "dereference-command-line",
        "dereference-command-line-symlink-to-dir",
        "inode",
        "kibibytes",
        "dereference",
        "numeric-uid-gid",
        "literal",
        "hide-control-chars",
        "show-control-chars",
        "quote-name",
        "reverse",
        "recursive",
        "size",
        "context",
        "zero",
        "help",
        "version",
    ),
)


def ls(args: Sequence[str]) -> Checked:
    r = read_args(args, _LS)
    walk = None
    if r.given("-R", "--recursive") is not None:
        walk = Walk(
            tuple((i, args[i]) for i in r.operands),
            follow=r.given("-L", "--dereference") is not None,
            hidden=r.given("-a", "-A", "--all", "--almost-all") is not None,
        )
    return checked_read(r, walk=walk)


_DIFF = Spec(
    text="CUFIxDLSW",
    path="X",
    long_text=(
        "ifdef",
        "show-function-line",
        "ignore-matching-lines",
        "exclude",
        "starting-file",
        "label",
        "width",
        "tabsize",
        "horizon-lines",
        "line-format",
        "old-line-format",
        "new-line-format",
        "unchanged-line-format",
        "old-group-format",
        "new-group-format",
        "unchanged-group-format",
        "changed-group-format",
        "palette",
    ),
    long_path=("exclude-from", "from-file", "to-file"),
    long_optional=("context", "unified", "color"),
    long_flags=(
        "normal",
        "brief",
        "report-identical-files",
        "ed",
        "rcs",
        "side-by-side",
        "left-column",
        "suppress-common-lines",
        "show-c-function",
        "expand-tabs",
        "initial-tab",
        "suppress-blank-empty",
        "no-dereference",
        "new-file",
        "unidirectional-new-file",
        "ignore-file-name-case",
        "no-ignore-file-name-case",
        "recursive",
        "text",
        "strip-trailing-cr",
        "ignore-case",
        "ignore-tab-expansion",
        "ignore-trailing-space",
        "ignore-space-change",
        "ignore-all-space",
        "ignore-blank-lines",
        "minimal",
        "speed-large-files",
        "paginate",
        "help",
        "version",
    ),
)


def diff(args: Sequence[str]) -> Checked:
    r = read_args(args, _DIFF)
    # GNU diff follows symlinks unless --no-dereference. Given two
    # directories it compares the files they share, and with -N prints one
    # only one of them holds: without -r it reads their top level (depth 1).
    follow = r.given("--no-dereference") is None
    recursive = r.given("-r", "--recursive") is not None
    walk = Walk(
        tuple((i, args[i]) for i in r.operands), follow=follow, depth=None if recursive else 1
    )
    return checked_read(r, walk=walk)


def strings(args: Sequence[str]) -> Checked:
    # binutils reads @FILE as more command-line options (and file names)
    for i, a in enumerate(args):
        if a.startswith("@") and len(a) > 1:
            return Checked((hidden_list(i, "strings", a, repr(a[1:])),), frozenset(), ((i, a[1:]),))
    r = read_args(
        args,
        Spec(text="ntesT", long_text=("bytes", "radix", "encoding", "target", "output-separator")),
    )
    return checked_read(r)


# xxd matches an option on its first two characters (`-ps` is `-p`, `-bits` is
# `-b`) and never bundles; a valued option takes the rest of the word unless
# the rest is its long spelling (`-cols 8`), in which case it takes the next.
_XXD_VALUED = {
    "c": "ols",
    "g": "roupsize",
    "l": "en",
    "n": "ame",
    "o": "ffset",
    "s": "eek",
    "R": "",
}


def xxd(args: Sequence[str]) -> Checked:
    operands: list[int] = []
    text: set[int] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            text.add(i)
            operands.extend(range(i + 1, len(args)))
            break
        if a.startswith("-") and len(a) > 1:
            text.add(i)
            long_rest = _XXD_VALUED.get(a[1])
            if long_rest is not None and (len(a) == 2 or (long_rest and a[2:] == long_rest)):
                i += 1  # the value is the next argument
                text.add(i)
        else:
            operands.append(i)
        i += 1
    if len(operands) > 1:
        return one(
            "embedded-write",
            operands[1],
            "xxd with a second file name writes its output there; "
            "drop the output file to run unprompted",
        )
    return Checked((), frozenset(text))


# tree reads its options itself: a valued short option takes the *next*
# argument even inside a bundle (`-Po PAT FILE`), in the order of its letters.
_TREE_VALUED = "LPIHTo"
_TREE_LONG_TEXT = frozenset({"--filelimit", "--charset", "--timefmt", "--sort"})
_TREE_LONG_PATH = frozenset({"--gitfile", "--infofile", "--hintro", "--houtro"})
_TREE_LONG_FLAGS = frozenset(
    {
        "--help",
        "--version",
        "--inodes",
        "--device",
        "--noreport",
        "--nolinks",
        "--dirsfirst",
        "--filesfirst",
        "--si",
        "--du",
        "--prune",
        "--matchdirs",
        "--ignore-case",
        "--fromfile",
        "--fromtabfile",
        "--fflinks",
        "--gitignore",
        "--info",
        "--metafirst",
        "--noindent",
        "--condense",
        "--hyperlink",
    }
)


def tree(args: Sequence[str]) -> Checked:
    text: set[int] = set()
    paths: list[tuple[int, str]] = []
    operands: list[int] = []
    letters: set[str] = set()
    longs: set[str] = set()
    depth: int | None = None
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if a == "--":
            text.add(i)
            operands.extend(range(i + 1, n))
            break
        if a.startswith("--"):
            text.add(i)
            name, eq, value = a.partition("=")
            if name in _TREE_LONG_TEXT or name in _TREE_LONG_PATH:
                at = i
                if not eq and i + 1 < n:
                    i += 1
                    value, at = args[i], i
                    text.add(i)
                if name in _TREE_LONG_PATH:
                    paths.append((at, value))
            elif name not in _TREE_LONG_FLAGS:
                return one("malformed-command", i, f"tree {name} is not an option Charter knows")
            longs.add(name)
        elif a.startswith("-") and len(a) > 1:
            text.add(i)
            for ch in a[1:]:
                letters.add(ch)
                if ch in _TREE_VALUED and i + 1 < n:
                    i += 1
                    text.add(i)
                    if ch == "L" and args[i].isdigit():
                        depth = int(args[i])
        else:
            operands.append(i)
        i += 1
    for flag in ("o", "R"):
        if flag in letters:
            # -R writes a 00Tree.html into every directory it visits
            return one(
                "embedded-write",
                next(k for k in sorted(text) if args[k].startswith("-") and flag in args[k]),
                f"tree -{flag} writes its output to files; drop -{flag} to run unprompted",
            )
    if "--fromfile" in longs or "--fromtabfile" in longs:
        # the operands are listings to draw, read as files: no tree is walked
        return Checked((), frozenset(text), tuple(paths))
    walk = Walk(
        tuple((k, args[k]) for k in operands),
        follow="l" in letters,
        hidden="a" in letters,
        depth=depth,
    )
    return Checked((), frozenset(text), tuple(paths), walk)


_FILE = Spec(
    text="eFP",
    path="mf",
    long_text=("exclude", "exclude-quiet", "separator", "parameter"),
    long_path=("magic-file", "files-from"),
    long_flags=(
        "apple",
        "brief",
        "compile",
        "checking-printout",
        "debug",
        "extension",
        "mime",
        "mime-type",
        "mime-encoding",
        "keep-going",
        "list",
        "dereference",
        "no-dereference",
        "no-buffer",
        "no-pad",
        "print0",
        "preserve-date",
        "raw",
        "special-files",
        "uncompress",
        "uncompress-noreport",
        "version",
        "help",
    ),
)


def file(args: Sequence[str]) -> Checked:
    r = read_args(args, _FILE)
    bad = r.given("-C", "--compile")
    if bad is not None:
        return one(
            "embedded-write",
            bad.index,
            "file -C writes a compiled magic file; drop -C to run unprompted",
        )
    issues: list[Issue] = []
    o = r.given("-f", "--files-from")
    if o is not None:
        issues.append(hidden_list(o.index, "file", o.name, _source(o.value)))
    # -m takes a colon-separated list of magic files
    paths = [
        (o.value_index, part)
        for o in r.opts
        if o.kind == "path" and o.value and o.value_index is not None
        for part in (o.value.split(":") if o.name in ("-m", "--magic-file") else [o.value])
        if part
    ]
    return Checked(tuple(issues), r.option_words, tuple(paths))


_DATE = Spec(
    text="ds",
    path="fr",
    long_text=("date", "set", "rfc-3339"),
    long_path=("file", "reference"),
    long_optional=("iso-8601",),
    long_flags=("debug", "resolution", "rfc-email", "utc", "universal", "help", "version"),
)


def date(args: Sequence[str]) -> Checked:
    r = _date_read(args)
    bad = r.given("-s", "--set")
    if bad is not None:
        return one("system-time", bad.index, "date --set changes the system clock")
    for i in r.operands:
        if not args[i].startswith("+"):
            return one(
                "system-time",
                i,
                "date with an operand that is not a +FORMAT sets the "
                "system clock; use +FORMAT to only print the date",
            )
    return checked_read(r, text_operands=r.operands)


def _date_read(args: Sequence[str]) -> Read:
    # -I takes a value only when attached (-Iseconds), never the next word
    fixed = [("-I" if a.startswith("-I") and not a.startswith("--") else a) for a in args]
    return read_args(fixed, _DATE)


def hostname(args: Sequence[str]) -> Checked:
    r = read_args(args, Spec(path="F", long_path=("file",)))
    if r.operands or r.given("-F", "--file"):
        return one(
            "system-change",
            r.operands[0] if r.operands else 0,
            "hostname with a name sets the machine's name; run it without one to print it",
        )
    return OK
