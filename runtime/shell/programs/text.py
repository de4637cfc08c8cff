"""Text tools: grep, rg, sort, uniq, jq, printf, ps and test."""

from __future__ import annotations

import re
from collections.abc import Sequence

from charter.runtime.shell.options import expand_long, long_given, scan, short_given
from charter.runtime.shell.programs.base import OK, Checked, one, text

__all__ = ["bracket", "command_lookup", "grep", "jq", "printf", "ps", "rg", "sort", "test", "uniq"]


# GNU grep's long options, to read their abbreviations (`--reg=PAT` is --regexp).
_GREP_LONG = (
    "after-context",
    "basic-regexp",
    "before-context",
    "binary",
    "binary-files",
    "byte-offset",
    "color",
    "colour",
    "context",
    "count",
    "dereference-recursive",
    "devices",
    "directories",
    "exclude",
    "exclude-dir",
    "exclude-from",
    "extended-regexp",
    "file",
    "files-with-matches",
    "files-without-match",
    "fixed-strings",
    "group-separator",
    "help",
    "ignore-case",
    "include",
    "initial-tab",
    "invert-match",
    "label",
    "line-buffered",
    "line-number",
    "line-regexp",
    "max-count",
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
    "regexp",
    "silent",
    "text",
    "version",
    "with-filename",
    "word-regexp",
)


# jq's `env` and `$ENV` read the environment (where bound secrets live), and
# `import`/`include` read any JSON or jq file by path.
_JQ_READS = re.compile(r"\$ENV\b|(?<![\w.$])env\b|\b(?:import|include)\b")


def jq(args: Sequence[str]) -> Checked:
    for i, a in enumerate(args):
        if _JQ_READS.search(a):
            return one(
                "credential-path",
                i,
                "jq env/$ENV reads the environment and import/include read files by path; "
                "it needs approval",
            )
    return OK


def ps(args: Sequence[str]) -> Checked:
    # BSD-style `e` (ps e, ps auxe, ps eww) prints every process's environment,
    # the runtime's own credentials included
    for i, a in enumerate(args):
        if not a.startswith("-") and "e" in a:
            return one(
                "credential-path",
                i,
                "ps e prints the environment of processes, where credentials live; "
                "drop e to run unprompted",
            )
    return OK


def printf(args: Sequence[str]) -> Checked:
    # bash's printf -v assigns its output to a shell variable (PATH, IFS, ...)
    if args and args[0].startswith("-v"):
        return one(
            "shell-state",
            0,
            "printf -v assigns a shell variable; print the text instead to run unprompted",
        )
    return text(args)


def grep(args: Sequence[str]) -> Checked:
    args = expand_long(args, _GREP_LONG)
    # --color/--colour take a value only when it is attached with `=`
    s = scan(
        args,
        "efmABCDd",
        (
            "regexp",
            "file",
            "max-count",
            "context",
            "after-context",
            "before-context",
            "devices",
            "directories",
            "include",
            "exclude",
            "exclude-dir",
            "exclude-from",
            "group-separator",
            "label",
            "binary-files",
        ),
    )
    text = {
        o.index + (0 if o.value and args[o.index] != o.name else 1)
        for o in s.opts
        if o.name in ("-e", "--regexp")
    }
    # An ambiguous abbreviation (`--fi`) that might name --regexp or --file
    # also means the first operand may be a file: it is checked as a path.
    patterns = any(
        o.name in ("-e", "-f")
        or (len(o.name) > 2 and ("regexp".startswith(o.name[2:]) or "file".startswith(o.name[2:])))
        for o in s.opts
    )
    if not patterns and s.operands:
        text.add(s.operands[0])
    return Checked((), frozenset(text))


_RG_VALUED = "efgmtTABCEjMrd"
_RG_LONG_VALUED = (
    "regexp",
    "file",
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
    "pre",
    "pre-glob",
    "hostname-bin",
    "type-add",
    "type-clear",
    "sort",
    "sortr",
    "color",
    "colors",
    "max-filesize",
    "path-separator",
    "ignore-file",
    "field-match-separator",
    "field-context-separator",
    "context-separator",
    "engine",
    "dfa-size-limit",
    "regex-size-limit",
    "hyperlink-format",
)


def rg(args: Sequence[str]) -> Checked:
    s = scan(args, _RG_VALUED, _RG_LONG_VALUED)
    # ripgrep does not accept abbreviated long options, so exact names suffice.
    bad = long_given(s, ("pre", "hostname-bin", "search-zip"), abbreviations=False)
    if bad is not None:
        return one(
            "exec-option",
            bad.index,
            f"rg {bad.name} runs another program on the files it searches; "
            "search without it to run unprompted",
        )
    z = short_given(s, "z")
    if z is not None:
        return one(
            "exec-option",
            z.index,
            "rg -z runs decompression programs on the files it searches; "
            "search without -z to run unprompted",
        )
    text = {o.index + 1 for o in s.opts if o.name in ("-e", "--regexp") and args[o.index] == o.name}
    text |= {o.index for o in s.opts if o.name in ("-e", "--regexp") and args[o.index] != o.name}
    if not any(o.name in ("-e", "--regexp", "-f", "--file") for o in s.opts) and s.operands:
        if not any(o.name in ("--files", "--type-list") for o in s.opts):
            text.add(s.operands[0])
    return Checked((), frozenset(text))


def sort(args: Sequence[str]) -> Checked:
    s = scan(
        args,
        "kotTSy",
        (
            "key",
            "output",
            "field-separator",
            "temporary-directory",
            "buffer-size",
            "compress-program",
            "random-source",
            "files0-from",
            "parallel",
            "batch-size",
            "sort",
        ),
    )
    bad = long_given(s, ("output",)) or short_given(s, "o")
    if bad is not None:
        return one(
            "embedded-write",
            bad.index,
            f"sort {bad.name} writes its result to a file; drop it to run unprompted",
        )
    bad = long_given(s, ("compress-program",))
    if bad is not None:
        return one(
            "exec-option",
            bad.index,
            "sort --compress-program runs another program; drop it to run unprompted",
        )
    bad = long_given(s, ("temporary-directory",)) or short_given(s, "T")
    if bad is not None:
        return one(
            "embedded-write",
            bad.index,
            f"sort {bad.name} writes temporary files to a chosen directory; "
            "drop it to run unprompted",
        )
    return OK


def uniq(args: Sequence[str]) -> Checked:
    # --group and --all-repeated take a value only when it is attached with `=`
    s = scan(args, "fsw", ("skip-fields", "skip-chars", "check-chars"))
    if len(s.operands) > 1:
        return one(
            "embedded-write",
            s.operands[1],
            "uniq with a second file name writes its output there; "
            "drop the output file to run unprompted",
        )
    return OK


# xxd matches an option on its first two characters (`-ps` is `-p`, `-bits` is
# `-b`) and never bundles; a valued option takes the rest of the word unless


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
