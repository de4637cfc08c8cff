"""Text tools: grep, rg, sort, uniq, jq, printf, ps and test."""

from __future__ import annotations

import re
from collections.abc import Sequence

from charter.runtime.shell.options import Read, Spec, read_args
from charter.runtime.shell.programs.base import OK, Checked, Walk, checked_read, one, text
from charter.runtime.shell.programs.files import hidden_list

__all__ = ["bracket", "command_lookup", "grep", "jq", "printf", "ps", "rg", "sort", "test", "uniq"]


_GREP = Spec(
    text="emABCDd",
    path="f",
    long_text=(
        "regexp",
        "max-count",
        "context",
        "after-context",
        "before-context",
        "devices",
        "directories",
        "include",
        "exclude",
        "exclude-dir",
        "group-separator",
        "label",
        "binary-files",
    ),
    long_path=("file", "exclude-from"),
    long_optional=("color", "colour"),
    long_flags=(
        "basic-regexp",
        "binary",
        "byte-offset",
        "count",
        "dereference-recursive",
        "extended-regexp",
        "files-with-matches",
        "files-without-match",
        "fixed-strings",
        "help",
        "ignore-case",
        "initial-tab",
        "invert-match",
        "line-buffered",
        "line-number",
        "line-regexp",
        "no-filename",
        "no-group-separator",
        "no-ignore-case",
        "no-messages",
        "null",
        "null-data",
        "only-matching",
        "perl-regexp",
        "quiet",
        "recursive",
        "silent",
        "text",
        "version",
        "with-filename",
        "word-regexp",
    ),
)


def grep(args: Sequence[str]) -> Checked:
    r = read_args(args, _GREP)
    patterns = r.given("-e", "--regexp", "-f", "--file") is not None
    operands = list(r.operands)
    text_operands = [] if patterns or not operands else [operands.pop(0)]
    walk = None
    directories = r.given("-d", "--directories")
    recursive = r.given("-r", "-R", "--recursive", "--dereference-recursive") is not None or (
        # grep takes any unambiguous prefix of the action (`-d rec`)
        directories is not None
        and bool(directories.value)
        and "recurse".startswith(directories.value or "-")
    )
    if recursive:
        follow = r.given("-R", "--dereference-recursive") is not None
        walk = Walk(tuple((i, args[i]) for i in operands), follow=follow)
    return checked_read(r, text_operands=text_operands, walk=walk)


_RG = Spec(
    text="egmtTABCEjMrd",
    path="f",
    long_text=(
        "regexp",
        "glob",
        "iglob",
        "max-count",
        "type",
        "type-not",
        "after-context",
        "before-context",
        "context",
        "encoding",
        "threads",
        "max-columns",
        "replace",
        "max-depth",
        "pre-glob",
        "type-add",
        "type-clear",
        "sort",
        "sortr",
        "color",
        "colors",
        "max-filesize",
        "path-separator",
        "field-match-separator",
        "field-context-separator",
        "context-separator",
        "engine",
        "dfa-size-limit",
        "regex-size-limit",
        "hyperlink-format",
        "generate",
    ),
    long_path=("file", "ignore-file", "pre", "hostname-bin"),
    abbreviations=False,  # ripgrep takes long options only as spelled
)


def rg(args: Sequence[str]) -> Checked:
    r = read_args(args, _RG)
    bad = r.given("--pre", "--hostname-bin", "--search-zip")
    if bad is not None:
        return one(
            "exec-option",
            bad.index,
            f"rg {bad.name} runs another program on the files it searches; "
            "search without it to run unprompted",
        )
    z = r.given("-z")
    if z is not None:
        return one(
            "exec-option",
            z.index,
            "rg -z runs decompression programs on the files it searches; "
            "search without -z to run unprompted",
        )
    operands = list(r.operands)
    listing = r.given("--files", "--type-list") is not None
    patterns = r.given("-e", "--regexp", "-f", "--file") is not None
    text_operands = [] if patterns or listing or not operands else [operands.pop(0)]
    if r.given("--type-list") is not None:
        return checked_read(r, text_operands=text_operands)
    unrestricted = sum(args[o.index].count("u") for o in r.opts if o.name == "-u") + sum(
        o.name == "--unrestricted" for o in r.opts
    )
    # What ripgrep searches beyond its defaults: a glob that includes
    # (`-g '*'`, `--iglob`) overrides every ignore rule and the hidden-file
    # rule; a file type (`-t`, with or without `--type-add`) and any ignore
    # file given by name re-include hidden files. Read as the widest case.
    including_glob = any(
        o.name in ("-g", "--glob", "--iglob") and not (o.value or "").startswith("!")
        for o in r.opts
    )
    typed = r.given("-t", "--type") is not None
    ignore_file = r.given("--ignore-file") is not None
    hidden = (
        r.given("--hidden", "-.") is not None
        or unrestricted >= 2
        or including_glob
        or typed
        or ignore_file
    )
    depth_opt = r.given("--max-depth", "-d")
    depth = (
        int(depth_opt.value)
        if depth_opt and depth_opt.value and depth_opt.value.isdigit()
        else None
    )
    # any -u, --no-ignore* or a parent-less reading turns .gitignore off (or
    # changes which ones count): then every directory is walked
    ignores = (
        unrestricted == 0
        and not including_glob
        and not any(
            o.name.startswith("--no-ignore") or o.name == "--no-require-git" for o in r.opts
        )
    )
    walk = Walk(
        tuple((i, args[i]) for i in operands),
        follow=r.given("-L", "--follow") is not None,
        hidden=hidden,
        depth=depth,
        gitignore=ignores,
        whitelists=True,
    )
    return checked_read(r, text_operands=text_operands, walk=walk)


_SORT = Spec(
    text="kotTSy",
    long_text=(
        "key",
        "output",
        "field-separator",
        "temporary-directory",
        "buffer-size",
        "compress-program",
        "parallel",
        "batch-size",
        "sort",
    ),
    long_path=("random-source", "files0-from"),
    long_optional=("check",),
    long_flags=(
        "ignore-leading-blanks",
        "dictionary-order",
        "ignore-case",
        "general-numeric-sort",
        "ignore-nonprinting",
        "month-sort",
        "human-numeric-sort",
        "numeric-sort",
        "random-sort",
        "reverse",
        "version-sort",
        "debug",
        "merge",
        "stable",
        "unique",
        "zero-terminated",
        "help",
        "version",
    ),
)


def sort(args: Sequence[str]) -> Checked:
    r = read_args(args, _SORT)
    bad = r.given("-o", "--output")
    if bad is not None:
        return one(
            "embedded-write",
            bad.index,
            f"sort {bad.name} writes its result to a file; drop it to run unprompted",
            writes=_values(r, "-o", "--output"),
        )
    bad = r.given("--compress-program")
    if bad is not None:
        return one(
            "exec-option",
            bad.index,
            "sort --compress-program runs another program; drop it to run unprompted",
        )
    bad = r.given("-T", "--temporary-directory")
    if bad is not None:
        return one(
            "embedded-write",
            bad.index,
            f"sort {bad.name} writes temporary files to a chosen directory; "
            "drop it to run unprompted",
            writes=_values(r, "-T", "--temporary-directory"),
        )
    o = r.given("--files0-from")
    issues = [hidden_list(o.index, "sort", "--files0-from", _source(o.value))] if o else []
    return checked_read(r, issues)


def _values(r: Read, *names: str) -> tuple[tuple[int, str | None], ...]:
    """Every value given to the options ``names`` (each may repeat), with
    the argument that holds it."""
    return tuple(
        (o.value_index if o.value_index is not None else o.index, o.value)
        for o in r.opts
        if o.name in names
    )


def _source(value: str | None) -> str:
    return "standard input" if value in (None, "-", "/dev/stdin") else repr(value)


_UNIQ = Spec(
    text="fsw",
    long_text=("skip-fields", "skip-chars", "check-chars"),
    # --group and --all-repeated take a value only when it is attached with `=`
    long_optional=("all-repeated", "group"),
    long_flags=("count", "repeated", "ignore-case", "unique", "zero-terminated", "help", "version"),
)


def uniq(args: Sequence[str]) -> Checked:
    r = read_args(args, _UNIQ)
    if len(r.operands) > 1:
        return one(
            "embedded-write",
            r.operands[1],
            "uniq with a second file name writes its output there; "
            "drop the output file to run unprompted",
            writes=((r.operands[1], args[r.operands[1]]),),
        )
    return checked_read(r)


# jq's `env` and `$ENV` read the environment (where bound secrets live),
# `import`/`include` read any JSON or jq file by path and `modulemeta` reads
# a module's file. Looked for as words anywhere in the program, strings
# included (`"\(env)"` interpolates) and whatever precedes them (`$ ENV`
# and `$ #comment` + newline + `ENV` are $ENV too); `.env` as a field name
# asks anyway, as a credential file name.
_JQ_READS = re.compile(r"\b(?:env|ENV|import|include|modulemeta)\b")
_JQ_FLAGS = frozenset("cnesrjaCMSRh")
_JQ_LONG_FLAGS = frozenset(
    {
        "--compact-output",
        "--null-input",
        "--exit-status",
        "--slurp",
        "--raw-output",
        "--raw-output0",
        "--join-output",
        "--ascii-output",
        "--color-output",
        "--monochrome-output",
        "--sort-keys",
        "--raw-input",
        "--tab",
        "--seq",
        "--stream",
        "--stream-errors",
        "--unbuffered",
        "--help",
        "--version",
        "--build-configuration",
    }
)


def jq(args: Sequence[str]) -> Checked:
    """jq [options] FILTER [FILE...]: its own option reader (short flags
    bundle, ``--arg NAME VALUE`` takes two words, ``--args``/``--jsonargs``
    turn the remaining operands into values)."""
    text_idx: set[int] = set()
    paths: list[tuple[int, str]] = []
    program: int | None = None
    values_only = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if a == "--":
            text_idx.add(i)
            rest = list(range(i + 1, n))
            if program is None and rest:
                program = rest.pop(0)
                text_idx.add(program)
            if values_only:
                text_idx.update(rest)
            break
        if a.startswith("--"):
            text_idx.add(i)
            if a in ("--arg", "--argjson"):
                text_idx.update(range(i + 1, min(i + 3, n)))
                i += 3
                continue
            if a in ("--slurpfile", "--rawfile", "--argfile"):
                text_idx.update(range(i + 1, min(i + 3, n)))
                if i + 2 < n:
                    paths.append((i + 2, args[i + 2]))
                i += 3
                continue
            if a in ("--indent",):
                text_idx.update(range(i + 1, min(i + 2, n)))
                i += 2
                continue
            if a == "--library-path" and i + 1 < n:
                text_idx.add(i + 1)
                paths.append((i + 1, args[i + 1]))
                i += 2
                continue
            if a in ("--args", "--jsonargs"):
                values_only = True
                i += 1
                continue
            if a == "--from-file":
                return _jq_from_file(i)
            if a not in _JQ_LONG_FLAGS:
                return one(
                    "exec-option", i, f"jq {a} is not an option Charter knows; it needs approval"
                )
            i += 1
            continue
        if a.startswith("-") and len(a) > 1:
            text_idx.add(i)
            if a.startswith("-L"):
                value, at = (a[2:], i) if len(a) > 2 else (args[i + 1] if i + 1 < n else "", i + 1)
                text_idx.add(at)
                paths.append((at, value))
                i = at + 1
                continue
            for ch in a[1:]:
                if ch == "f":
                    return _jq_from_file(i)
                if ch not in _JQ_FLAGS:
                    return one(
                        "exec-option",
                        i,
                        f"jq -{ch} is not an option Charter knows; it needs approval",
                    )
            i += 1
            continue
        if program is None:
            program = i
            text_idx.add(i)
        elif values_only:
            text_idx.add(i)
        i += 1
    if program is not None and _JQ_READS.search(args[program]):
        return one(
            "credential-path",
            program,
            "jq env/$ENV reads the environment and import/include read files by path; "
            "it needs approval",
        )
    return Checked((), frozenset(text_idx), tuple(paths))


def _jq_from_file(index: int) -> Checked:
    return one(
        "exec-option",
        index,
        "jq -f reads its program from a file Charter cannot see (a program can read the "
        "environment); give the filter on the command line to run unprompted",
    )


def ps(args: Sequence[str]) -> Checked:
    why = _ps_shows_command_lines(args)
    if why is not None:
        index, what = why
        if what == "e":
            # BSD-style `e` (ps e, ps auxe) prints every process's
            # environment, the runtime's own credentials included
            return one(
                "credential-path",
                index,
                "ps e prints the environment of processes, where credentials live; "
                "drop e to run unprompted",
            )
        return one(
            "credential-path",
            index,
            f"ps {what} prints other processes' command lines, where credentials are often "
            "passed (the guard treats /proc/N/cmdline the same way); use -o with fields "
            "other than args/cmd/command to run unprompted",
        )
    return Checked((), frozenset(range(len(args))))


# procps options that take a value (short: in a bundle the rest of the word,
# or the next argument; long: `=VALUE` or the next argument).
_PS_SHORT_VALUED = frozenset("CGgOopqsTtUuk")
_PS_LONG_VALUED = frozenset(
    {
        "cols", "columns", "width", "lines", "rows", "format", "group", "Group", "pid",
        "ppid", "quick-pid", "sid", "sort", "tty", "user", "User", "context",
    }
)  # fmt: skip
# Format fields that print the whole command line rather than the program name.
_PS_ARG_FIELDS = frozenset({"args", "cmd", "command", "cmdline"})


def _ps_shows_command_lines(args: Sequence[str]) -> tuple[int, str] | None:
    """Where ``ps`` is asked for other processes' full command lines: BSD
    syntax (its formats print them), ``-f``/``-F`` and the long formats, or
    a format naming args/cmd/command. Anything else prints program names."""
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in _PS_LONG_VALUED and not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            if name == "format" and _names_arg_field(value):
                return i, f"--format {value}"
            if name not in _PS_LONG_VALUED and name not in (
                "forest",
                "headers",
                "no-headers",
                "help",
                "version",
                "info",
            ):
                return i, f"--{name}"
        elif a.startswith("-") and len(a) > 1:
            for k, ch in enumerate(a[1:], 1):
                if ch in "fFw":
                    # full formats print command lines; -w only widens them
                    # (and some ps print them by default)
                    return i, f"-{ch}"
                if ch in _PS_SHORT_VALUED:
                    value = a[k + 1 :]
                    if not value:
                        i += 1
                        value = args[i] if i < len(args) else ""
                    if ch in "oO" and _names_arg_field(value):
                        return i, f"-{ch} {value}"
                    break
        else:
            # BSD syntax (aux, x, u, a PID list): its formats print COMMAND,
            # and `e` adds each process's environment
            return i, "e" if "e" in a else a
        i += 1
    return None


def _names_arg_field(fmt: str) -> bool:
    if "%a" in fmt:
        return True  # AIX-style descriptors: %a is args
    fields = re.split(r"[\s,]+", fmt)
    return any(f.split(":", 1)[0].split("=", 1)[0] in _PS_ARG_FIELDS for f in fields)


def printf(args: Sequence[str]) -> Checked:
    # bash's printf -v assigns its output to a shell variable (PATH, IFS, ...)
    if args and args[0].startswith("-v"):
        return one(
            "shell-state",
            0,
            "printf -v assigns a shell variable; print the text instead to run unprompted",
        )
    return text(args)


def test(args: Sequence[str]) -> Checked:
    # bash evaluates the subscript of `-v NAME[SUB]` / `-R NAME[SUB]` as
    # arithmetic, expanding it first: test -v 'a[$(cmd)]' runs cmd
    for i, a in enumerate(args[:-1]):
        if a in ("-v", "-R") and "[" in args[i + 1]:
            return one(
                "exec-option",
                i + 1,
                "test -v with an array subscript evaluates the subscript, which can run "
                "commands; test a plain variable name to run unprompted",
            )
    return OK


def bracket(args: Sequence[str]) -> Checked:
    if not args or args[-1] != "]":
        return one("malformed-command", -1, "[ without a closing ] is not a valid test")
    return test(args[:-1])


def command_lookup(args: Sequence[str]) -> Checked:
    # Only `command -v NAME` / `command -V NAME` reach this table (see unwrap).
    return Checked((), frozenset(range(len(args))))
