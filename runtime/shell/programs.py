"""What Charter knows about individual programs.

* :data:`READ_ONLY`: programs that only read, each with a checker for the
  arguments that would make it write, execute or reach the network.
* :data:`ASK_PROGRAMS`: programs that are never automatic, with the rule
  key and the reason.
* :func:`destructive`: the payloads that are refused outright.
* :data:`WRAPPERS` and :func:`unwrap`: programs that run another command,
  and how to find that command among their arguments.

Checkers receive decoded argument strings (an argument that expands is the
placeholder :data:`UNKNOWN`, which matches no option and no path) and return
:class:`Issue` s pointing at an argument index.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from charter.runtime.shell.options import Scanned, expand_long, long_given, scan, short_given

__all__ = [
    "ASK_PROGRAMS",
    "INTERPRETERS",
    "READ_ONLY",
    "RESERVED_OPAQUE",
    "RESERVED_PREFIX",
    "SHELLS",
    "UNKNOWN",
    "WRAPPERS",
    "Issue",
    "Unwrapped",
    "block_device",
    "critical_target",
    "destructive",
    "unwrap",
]

UNKNOWN = "\x00"  # stands for an argument whose value is only known at run time


@dataclass(frozen=True, slots=True)
class Issue:
    """A problem a program checker found in one argument, with the decision it calls for."""

    rule: str
    index: int  # argument index (0 = first argument after the program), -1 = the program
    message: str
    decision: str = "ask"


@dataclass(frozen=True, slots=True)
class Checked:
    """A program checker's result: its issues and which arguments are text, not paths."""

    issues: tuple[Issue, ...] = ()
    # Arguments that are text (patterns, scripts, formats), not paths.
    text_args: frozenset[int] = frozenset()


_OK = Checked()
Checker = Callable[[Sequence[str]], Checked]


def _one(rule: str, index: int, message: str) -> Checked:
    return Checked((Issue(rule, index, message),))


# --- read-only programs ---------------------------------------------------------------------


def _plain(args: Sequence[str]) -> Checked:
    return _OK


def _text(args: Sequence[str]) -> Checked:
    """Programs whose arguments are text to print, never files."""
    return Checked((), frozenset(range(len(args))))


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


def _jq(args: Sequence[str]) -> Checked:
    for i, a in enumerate(args):
        if _JQ_READS.search(a):
            return _one(
                "credential-path",
                i,
                "jq env/$ENV reads the environment and import/include read files by path; "
                "it needs approval",
            )
    return _OK


def _ps(args: Sequence[str]) -> Checked:
    # BSD-style `e` (ps e, ps auxe, ps eww) prints every process's environment,
    # the runtime's own credentials included
    for i, a in enumerate(args):
        if not a.startswith("-") and "e" in a:
            return _one(
                "credential-path",
                i,
                "ps e prints the environment of processes, where credentials live; "
                "drop e to run unprompted",
            )
    return _OK


def _printf(args: Sequence[str]) -> Checked:
    # bash's printf -v assigns its output to a shell variable (PATH, IFS, ...)
    if args and args[0].startswith("-v"):
        return _one(
            "shell-state",
            0,
            "printf -v assigns a shell variable; print the text instead to run unprompted",
        )
    return _text(args)


def _grep(args: Sequence[str]) -> Checked:
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


def _rg(args: Sequence[str]) -> Checked:
    s = scan(args, _RG_VALUED, _RG_LONG_VALUED)
    # ripgrep does not accept abbreviated long options, so exact names suffice.
    bad = long_given(s, ("pre", "hostname-bin", "search-zip"), abbreviations=False)
    if bad is not None:
        return _one(
            "exec-option",
            bad.index,
            f"rg {bad.name} runs another program on the files it searches; "
            "search without it to run unprompted",
        )
    z = short_given(s, "z")
    if z is not None:
        return _one(
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


_FIND_FORBIDDEN = {
    "-exec": "runs a command for every file",
    "-execdir": "runs a command for every file",
    "-ok": "runs a command for every file",
    "-okdir": "runs a command for every file",
    "-delete": "deletes files",
    "-fprint": "writes its output to a file",
    "-fprint0": "writes its output to a file",
    "-fprintf": "writes its output to a file",
    "-fls": "writes its output to a file",
}


def _find(args: Sequence[str]) -> Checked:
    issues: list[Issue] = []
    text: set[int] = set()
    in_expr = False
    # -H, -L, -P, -D DEBUG and -O LEVEL come before the starting points
    first = 0
    while first < len(args) and (
        args[first] in ("-H", "-L", "-P", "-D") or args[first].startswith(("-D", "-O"))
    ):
        first += 2 if args[first] == "-D" else 1
    for i, a in enumerate(args):
        if i < first:
            continue
        if a in _FIND_FORBIDDEN:
            rule = (
                "file-delete"
                if a == "-delete"
                else ("embedded-write" if a.startswith("-f") else "exec-option")
            )
            issues.append(
                Issue(rule, i, f"find {a} {_FIND_FORBIDDEN[a]}; drop {a} to run unprompted")
            )
        if a.startswith("-") or a in ("(", "!", ")", ","):
            in_expr = True
        elif in_expr:
            text.add(i)  # a test's argument (-name '*.py'), not a starting point
    return Checked(tuple(issues), frozenset(text))


def _sort(args: Sequence[str]) -> Checked:
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
        return _one(
            "embedded-write",
            bad.index,
            f"sort {bad.name} writes its result to a file; drop it to run unprompted",
        )
    bad = long_given(s, ("compress-program",))
    if bad is not None:
        return _one(
            "exec-option",
            bad.index,
            "sort --compress-program runs another program; drop it to run unprompted",
        )
    bad = long_given(s, ("temporary-directory",)) or short_given(s, "T")
    if bad is not None:
        return _one(
            "embedded-write",
            bad.index,
            f"sort {bad.name} writes temporary files to a chosen directory; "
            "drop it to run unprompted",
        )
    return _OK


def _uniq(args: Sequence[str]) -> Checked:
    # --group and --all-repeated take a value only when it is attached with `=`
    s = scan(args, "fsw", ("skip-fields", "skip-chars", "check-chars"))
    if len(s.operands) > 1:
        return _one(
            "embedded-write",
            s.operands[1],
            "uniq with a second file name writes its output there; "
            "drop the output file to run unprompted",
        )
    return _OK


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


def _xxd(args: Sequence[str]) -> Checked:
    operands: list[int] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands.extend(range(i + 1, len(args)))
            break
        if a.startswith("-") and len(a) > 1:
            long_rest = _XXD_VALUED.get(a[1])
            if long_rest is not None and (len(a) == 2 or (long_rest and a[2:] == long_rest)):
                i += 1  # the value is the next argument
        else:
            operands.append(i)
        i += 1
    if len(operands) > 1:
        return _one(
            "embedded-write",
            operands[1],
            "xxd with a second file name writes its output there; "
            "drop the output file to run unprompted",
        )
    return _OK


def _tree(args: Sequence[str]) -> Checked:
    # tree's valued short options take the *next* argument even inside a
    # bundle (`-Po PAT FILE`), so any -o in a short-option word is an output
    # file; -R writes a 00Tree.html into every directory it visits.
    for i, a in enumerate(args):
        if a == "--":
            break
        if a.startswith("-") and not a.startswith("--") and ("o" in a or "R" in a):
            flag = "-o" if "o" in a else "-R"
            return _one(
                "embedded-write",
                i,
                f"tree {flag} writes its output to files; drop {flag} to run unprompted",
            )
    return _OK


def _file(args: Sequence[str]) -> Checked:
    s = scan(args, "emfFP", ("exclude", "magic-file", "files-from", "separator", "parameter"))
    bad = short_given(s, "C") or long_given(s, ("compile",))
    if bad is not None:
        return _one(
            "embedded-write",
            bad.index,
            "file -C writes a compiled magic file; drop -C to run unprompted",
        )
    return _OK


def _date(args: Sequence[str]) -> Checked:
    # -I/--iso-8601 take a value only when attached; --resolution takes none
    s = scan(args, "dfrs", ("date", "file", "reference", "set", "rfc-3339"))
    bad = short_given(s, "s") or long_given(s, ("set",))
    if bad is not None:
        return _one("system-time", bad.index, "date --set changes the system clock")
    for i in s.operands:
        if not args[i].startswith("+"):
            return _one(
                "system-time",
                i,
                "date with an operand that is not a +FORMAT sets the "
                "system clock; use +FORMAT to only print the date",
            )
    return Checked((), frozenset(i for i in s.operands))


def _hostname(args: Sequence[str]) -> Checked:
    s = scan(args, "F", ("file",))
    if s.operands or short_given(s, "F") or long_given(s, ("file",)):
        return _one(
            "system-change",
            s.operands[0] if s.operands else 0,
            "hostname with a name sets the machine's name; run it without one to print it",
        )
    return _OK


def _test(args: Sequence[str]) -> Checked:
    # bash evaluates the subscript of `-v NAME[SUB]` / `-R NAME[SUB]` as
    # arithmetic, expanding it first: test -v 'a[$(cmd)]' runs cmd
    for i, a in enumerate(args[:-1]):
        if a in ("-v", "-R") and "[" in args[i + 1]:
            return _one(
                "exec-option",
                i + 1,
                "test -v with an array subscript evaluates the subscript, which can run "
                "commands; test a plain variable name to run unprompted",
            )
    return _OK


def _bracket(args: Sequence[str]) -> Checked:
    if not args or args[-1] != "]":
        return _one("malformed-command", -1, "[ without a closing ] is not a valid test")
    return _test(args[:-1])


def _command_lookup(args: Sequence[str]) -> Checked:
    # Only `command -v NAME` / `command -V NAME` reach this table (see unwrap).
    return Checked((), frozenset(range(len(args))))


# sed: only scripts made of commands that print, move between lines or
# transform the pattern space are read-only. GNU sed's `e` (execute), `w`/`W`
# (write), `r`/`R` (read another file) and the `e`/`w` flags of `s` are not.
_SED_PLAIN = set("pPlnNdDqQgGhHxz=F{}!")
_SED_TEXT = set("aic")  # append/insert/change: the rest of the line is text


def _sed_script_problem(script: str) -> str | None:
    """None when ``script`` only uses read-only sed commands; otherwise why not."""
    i = 0
    n = len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        # an address: line numbers, $, /regex/, \cREGEXc, first~step, ranges
        if c.isdigit() or c in "$,~+":
            i += 1
            continue
        if c == "/" or c == "\\":
            delim = "/"
            if c == "\\":
                if i + 1 >= n:
                    return "the script ends inside an address"
                delim = script[i + 1]
                i += 1
            j = i + 1
            while j < n and script[j] != delim:
                j += 2 if script[j] == "\\" else 1
            if j >= n:
                return "an address is not terminated"
            i = j + 1
            while i < n and script[i] in "IM":
                i += 1
            continue
        if c in _SED_PLAIN:
            i += 1
            continue
        if c in _SED_TEXT:
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "bt" or c == "T" or c == ":":
            # a branch or label: the label runs to `;` or the end of the line
            j = i + 1
            while j < n and script[j] not in ";\n":
                j += 1
            i = j
            continue
        if c in "sy":
            if i + 1 >= n:
                return f"the {c} command is not terminated"
            delim = script[i + 1]
            if delim in "\n\\":
                return f"the {c} command uses an unsupported delimiter"
            j = i + 2
            for _ in range(2):
                while j < n and script[j] != delim:
                    j += 2 if script[j] == "\\" else 1
                if j >= n:
                    return f"the {c} command is not terminated"
                j += 1
            if c == "s":
                while j < n and script[j] not in ";\n}":
                    f = script[j]
                    if f == "e":
                        return "the s command's e flag executes the pattern space as a command"
                    if f in "wW":
                        return "the s command's w flag writes to a file"
                    if not (f.isdigit() or f in "gpiImM "):
                        return f"unknown s flag {f!r}"
                    j += 1
            i = j
            continue
        if c == "e":
            return "the e command executes a shell command"
        if c in "wW":
            return "the w command writes to a file"
        if c in "rR":
            return "the r command reads another file into the output"
        if c == "v":
            i += 1
            continue
        return f"sed command {c!r} is not known to be read-only"
    return None


# GNU sed's long options, to read their abbreviations (`--e=SCRIPT`, `--expr SCRIPT`).
_SED_LONG = (
    "binary",
    "debug",
    "expression",
    "file",
    "follow-symlinks",
    "help",
    "in-place",
    "line-length",
    "null-data",
    "zero-terminated",
    "posix",
    "quiet",
    "silent",
    "regexp-extended",
    "sandbox",
    "separate",
    "unbuffered",
    "version",
)


def _sed(args: Sequence[str]) -> Checked:
    args = expand_long(args, _SED_LONG)
    s = scan(args, "efl", ("expression", "file", "line-length"), permute=True)
    bad = short_given(s, "i") or long_given(s, ("in-place",))
    if bad is not None:
        return _one(
            "in-place-edit",
            bad.index,
            "sed -i rewrites the files it reads; print the result instead of editing "
            "in place to run unprompted",
        )
    bad = short_given(s, "f") or long_given(s, ("file",))
    if bad is not None:
        return _one(
            "exec-option", bad.index, "sed -f reads its script from a file Charter cannot see"
        )
    scripts: list[tuple[int, str]] = []
    for o in s.opts:
        if o.name in ("-e", "--expression") or (
            o.name.startswith("--") and "expression".startswith(o.name[2:]) and len(o.name) > 3
        ):
            idx = o.index if args[o.index] != o.name else o.index + 1
            scripts.append((idx, o.value or ""))
    text: set[int] = {i for i, _ in scripts}
    if not scripts:
        if not s.operands:
            return _one("sed-script", -1, "sed without a script")
        first = s.operands[0]
        scripts.append((first, args[first]))
        text.add(first)
    for idx, script in scripts:
        problem = _sed_script_problem(script)
        if problem is not None:
            rule = (
                "exec-option"
                if "execut" in problem
                else ("embedded-write" if "writes" in problem else "sed-script")
            )
            return _one(rule, idx, f"sed: {problem}; use a print-only script to run unprompted")
    return Checked((), frozenset(text))


# git: a closed list of read-only shapes.
_GIT_GLOBAL_OK = frozenset(
    {
        "--no-pager",
        "--no-optional-locks",
        "--literal-pathspecs",
        "--no-replace-objects",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-lazy-fetch",
    }
)
_GIT_READ = frozenset(
    {
        "status",
        "diff",
        "log",
        "show",
        "rev-parse",
        "ls-files",
        "grep",
        "describe",
        "blame",
        "shortlog",
        "ls-tree",
        "cat-file",
        "rev-list",
        "merge-base",
        "show-ref",
        "name-rev",
        "diff-tree",
        "diff-files",
        "diff-index",
        "count-objects",
        "for-each-ref",
        "whatchanged",
        "annotate",
        "show-branch",
        "cherry",
        "check-ignore",
        "check-attr",
        "verify-commit",
        "version",
        "var",
    }
)
_GIT_NETWORK = frozenset(
    {
        "clone",
        "fetch",
        "pull",
        "push",
        "ls-remote",
        "submodule",
        "remote",
        "archive",
        "send-email",
        "request-pull",
        "svn",
        "p4",
    }
)
# Options that run helper programs or write files, in any read-only subcommand.
_GIT_EXEC_OPTS = (
    "ext-diff",
    "textconv",
    "output",
    "open-files-in-pager",
    "show-signature",
    "paginate",
    "exec",
    "upload-pack",
    "receive-pack",
    "config-env",
    "run",
    "tool",
    "extcmd",
)
# Real git options that are prefixes of the names above (not abbreviations).
_GIT_EXACT = frozenset({"text"})


def _git(args: Sequence[str]) -> Checked:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("--version", "--help", "-h"):
            return _OK
        if a not in _GIT_GLOBAL_OK:
            return _one(
                "git-global-option",
                i,
                f"git {a} changes where or how git runs (configuration, directory, "
                "pager or helpers); run the subcommand without it",
            )
        i += 1
    if i >= len(args):
        return _OK
    sub = args[i]
    rest = list(args[i + 1 :])
    offset = i + 1
    if sub in _GIT_READ:
        s = scan(rest, "")
        # git's parse-options accepts abbreviated long options.
        bad = long_given(s, _GIT_EXEC_OPTS, exact_options=_GIT_EXACT)
        if bad is not None:
            rule = "embedded-write" if "output".startswith(bad.name[2:]) else "exec-option"
            return _one(
                rule,
                bad.index + offset,
                f"git {sub} {bad.name} runs a helper program or writes a file; "
                "drop it to run unprompted",
            )
        if sub == "var" and short_given(s, "l"):
            return _one(
                "git-config", offset, "git var -l lists the configuration, credentials included"
            )
        if sub == "grep" and short_given(s, "O"):
            o = short_given(s, "O")
            assert o is not None
            return _one("exec-option", o.index + offset, "git grep -O opens files in a pager")
        if sub in ("diff", "log", "show") and any(o.name == "-O" for o in s.opts):
            pass  # -O<orderfile> only reads a file; the path checks look at it
        text = {offset + j for j in range(len(rest))} if sub in ("grep", "log") else set()
        return Checked((), frozenset(text))
    if sub in ("branch", "tag"):
        s = scan(rest, "")
        listing = {
            "--list",
            "-l",
            "-a",
            "--all",
            "-r",
            "--remotes",
            "-v",
            "-vv",
            "--verbose",
            "--show-current",
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--sort",
            "--format",
            "--points-at",
            "-n",
            "--column",
            "--no-column",
            "--color",
            "--no-color",
            "--ignore-case",
            "-i",
        }
        names = {o.name.split("=")[0] for o in s.opts}
        if names <= listing and (not s.operands or names & {"--list", "-l"}):
            return Checked((), frozenset(offset + j for j in s.operands))
        return _one(
            "git-mutation",
            i,
            f"git {sub} with these arguments creates, renames or deletes {sub}es; "
            f"only listing {sub}es runs unprompted",
        )
    if sub == "remote" and (not rest or rest in (["-v"], ["--verbose"]) or rest[0] == "get-url"):
        return _OK
    if sub == "worktree" and rest[:1] == ["list"]:
        return _OK
    if sub == "stash" and rest[:1] in (["list"], ["show"]):
        # stash list takes log options and stash show diff options
        s = scan(rest[1:], "")
        bad = long_given(s, _GIT_EXEC_OPTS, exact_options=_GIT_EXACT)
        if bad is not None:
            rule = "embedded-write" if "output".startswith(bad.name[2:]) else "exec-option"
            return _one(
                rule,
                bad.index + offset + 1,
                f"git stash {rest[0]} {bad.name} runs a helper program or writes a file; "
                "drop it to run unprompted",
            )
        return _OK
    if sub == "config":
        return _one("git-config", i, "git config can reveal credentials stored in configuration")
    if sub in _GIT_NETWORK:
        return _one(
            "git-network",
            i,
            f"git {sub} talks to another repository or changes remotes; it always needs approval",
        )
    return _one(
        "git-mutation", i, f"git {sub} is not one of git's read-only subcommands; it needs approval"
    )


_sed_checker: Checker = _sed

READ_ONLY: dict[str, Checker] = {
    **{
        name: _plain
        for name in (
            "cat",
            "head",
            "tail",
            "wc",
            "cut",
            "nl",
            "stat",
            "du",
            "df",
            "ls",
            "pwd",
            "basename",
            "dirname",
            "realpath",
            "readlink",
            "whoami",
            "id",
            "uname",
            "which",
            "comm",
            "cmp",
            "diff",
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "cksum",
            "base64",
            "base32",
            "od",
            "hexdump",
            "strings",
            "column",
            "fold",
            "fmt",
            "paste",
            "join",
            "expand",
            "unexpand",
            "rev",
            "tac",
            "tr",
            "nproc",
            "arch",
            "groups",
            "jq",
            "ps",
            "uptime",
            "free",
            "tty",
            "locale",
            "lsblk",
        )
    },
    **{
        name: _text
        for name in ("echo", "printf", "true", "false", "sleep", "seq", "type", "expr", ":")
    },
    "printf": _printf,
    "jq": _jq,
    "ps": _ps,
    "grep": _grep,
    "egrep": _grep,
    "fgrep": _grep,
    "rg": _rg,
    "find": _find,
    "sort": _sort,
    "uniq": _uniq,
    "xxd": _xxd,
    "tree": _tree,
    "file": _file,
    "date": _date,
    "hostname": _hostname,
    "sed": _sed_checker,
    "git": _git,
    "command": _command_lookup,
    "test": _test,
    "[": _bracket,
}


# --- programs that always ask ----------------------------------------------------------------

_EXEC_MSG = "runs project code, build scripts or plugins"
ASK_PROGRAMS: dict[str, tuple[str, str]] = {}


def _ask(names: str, rule: str, why: str) -> None:
    for name in names.split():
        ASK_PROGRAMS[name] = (rule, why)


_ask(
    "pytest tox nox make cmake ninja meson cargo go npm npx pnpm yarn bun deno uv uvx pip pip3 "
    "pipx poetry pdm hatch rye conda mvn gradle gradlew ant dotnet rake bundle gem composer "
    "mix swift swiftc rustc gcc g++ cc clang clang++ ld javac java kotlinc tsc ruff mypy pyright "
    "eslint prettier jest vitest mocha pre-commit just task bazel buck sbt lein cabal stack "
    "dune opam nix",
    "executes-code",
    _EXEC_MSG,
)
_ask(
    "awk gawk mawk nawk perl ruby php lua luajit tclsh Rscript osascript node python python2 "
    "python3 jshell irb ipython",
    "executes-code",
    "is an interpreter that can run any code",
)
_ask(
    "curl wget ssh scp sftp rsync nc ncat netcat telnet ftp socat http https aria2c",
    "network",
    "reaches the network",
)
_ask("rm rmdir unlink shred", "file-delete", "deletes files")
_ask(
    "cp mv mkdir touch chmod chown chgrp ln install tee truncate patch dd mktemp mkfifo "
    "split csplit tar zip unzip gzip gunzip bzip2 xz zstd 7z",
    "file-write",
    "writes files",
)
_ask("kill pkill killall", "process-kill", "signals other processes")
_ask("cd pushd popd", "cwd-change", "changes the working directory for the commands after it")
_ask(
    "export unset declare typeset local readonly set shopt alias unalias trap ulimit umask "
    "hash enable",
    "shell-state",
    "changes the shell's own state",
)
_ask("source .", "executes-code", "runs a script file in the current shell")
_ask(
    "systemctl service launchctl docker podman kubectl helm crontab at mount umount "
    "sysctl modprobe insmod rmmod iptables nft ip ifconfig route useradd userdel usermod "
    "passwd chpasswd",
    "system-change",
    "changes the system or its services",
)
_ask(
    "vi vim nvim nano emacs less more man top htop watch screen tmux",
    "interactive",
    "is interactive or can run commands from inside",
)

# Shells and interpreters: what a safe-command entry may never name.
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
INTERPRETERS = (
    frozenset(
        {
            "python",
            "python2",
            "python3",
            "node",
            "perl",
            "ruby",
            "php",
            "lua",
            "awk",
            "gawk",
            "deno",
            "bun",
            "Rscript",
            "tclsh",
            "osascript",
            "eval",
            "source",
            ".",
            "exec",
        }
    )
    | SHELLS
)
for _shell in SHELLS:
    ASK_PROGRAMS[_shell] = ("executes-code", "is a shell that runs a script")
ASK_PROGRAMS["eval"] = ("shell-eval", "runs its arguments as a new shell command")

# Reserved words. Those that prefix a command (`then rm ...`) are stripped so
# the command after them is still judged; the construct itself is opaque.
RESERVED_PREFIX = frozenset({"if", "then", "elif", "else", "do", "while", "until", "{", "!"})
RESERVED_OPAQUE = frozenset(
    {"fi", "done", "esac", "}", "for", "case", "select", "function", "[[", "]]", "coproc", "in"}
)


# --- wrappers --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """The command a wrapper runs (argument indexes into the wrapper's
    arguments), plus anything the wrapper's own options do."""

    inner_start: int | None  # None: the wrapper runs no command
    issues: tuple[Issue, ...] = ()
    script_index: int | None = None  # shells: the index of a -c script
    split_string: str | None = None  # env -S: a string parsed as a command


# wrapper -> (short options taking a value, long options taking a value)
WRAPPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "env": (
        "uCS",
        ("unset", "chdir", "split-string", "block-signal", "default-signal", "ignore-signal"),
    ),
    "sudo": (
        "ugCDhprtUTc",
        (
            "user",
            "group",
            "close-from",
            "chdir",
            "host",
            "prompt",
            "role",
            "type",
            "other-user",
            "command-timeout",
            "chroot",
        ),
    ),
    "doas": ("uC", ()),
    "nice": ("n", ("adjustment",)),
    "nohup": ("", ()),
    "timeout": ("sk", ("signal", "kill-after")),
    "time": ("fo", ("format", "output")),
    "command": ("", ()),
    "exec": ("a", ()),
    "builtin": ("", ()),
    "xargs": (
        "adEIiLlnPs",
        (
            "arg-file",
            "delimiter",
            "eof",
            "replace",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ),
    ),
    "setsid": ("", ()),
    "stdbuf": ("ioe", ("input", "output", "error")),
    "ionice": ("cnpPut", ("class", "classdata", "pid", "pgid", "uid")),
    "chroot": ("", ("userspec", "groups")),
    "unbuffer": ("", ()),
    "caffeinate": ("tw", ()),
    "strace": ("eoOpPsSuEIXabv", ()),
    "ltrace": ("eoOpPsSuEIXabn", ()),
    "flock": ("wEcn", ("timeout", "conflict-exit-code", "command")),
    "su": ("cgGsw", ("command", "group", "supp-group", "shell", "whitelist-environment")),
    "runuser": ("cgGsuw", ("command", "group", "supp-group", "shell", "user")),
    # busybox runs its first argument as an applet (`busybox rm -rf /`)
    "busybox": ("", ()),
    # -x/--exec and -d/--differences take no separate value
    "watch": ("nq", ("interval", "equexit")),
}


def unwrap(wrapper: str, args: Sequence[str]) -> Unwrapped:
    """Find the command ``wrapper`` runs among ``args``."""
    short, long_ = WRAPPERS[wrapper]
    s: Scanned = scan(args, short, long_, permute=False)
    issues: list[Issue] = []
    first = s.operands[0] if s.operands else None
    if wrapper == "env":
        bad = short_given(s, "C") or long_given(s, ("chdir",))
        if bad is not None:
            issues.append(
                Issue(
                    "cwd-change",
                    bad.index,
                    "env -C runs the command in another "
                    "directory; run it from the working directory instead",
                )
            )
        split = short_given(s, "S") or long_given(s, ("split-string",))
        j = first
        while j is not None and j < len(args) and _ASSIGN.match(args[j]):
            issues.append(
                Issue(
                    "inline-assignment",
                    j,
                    "env sets environment variables for "
                    "the command; set none to let it run unprompted",
                )
            )
            j += 1
        if split is not None and split.value is not None:
            return Unwrapped(None, tuple(issues), split_string=split.value)
        return Unwrapped(j if j is not None and j < len(args) else None, tuple(issues))
    if wrapper == "sudo":
        bad = short_given(s, "D") or long_given(s, ("chdir",))
        if bad is not None:
            issues.append(Issue("cwd-change", bad.index, "sudo -D changes directory"))
        j = first
        while j is not None and j < len(args) and _ASSIGN.match(args[j]):
            issues.append(Issue("inline-assignment", j, "sudo sets environment variables"))
            j += 1
        if (
            j is not None
            and j < len(args)
            and (short_given(s, "si") or long_given(s, ("shell", "login")))
        ):
            # sudo -s/-i CMD hands CMD to the shell's -c
            return Unwrapped(None, tuple(issues), split_string=" ".join(args[j:]))
        return Unwrapped(j if j is not None and j < len(args) else None, tuple(issues))
    if wrapper == "timeout":
        # the first operand is the duration
        if first is None or first + 1 >= len(args):
            return Unwrapped(None, tuple(issues))
        return Unwrapped(first + 1, tuple(issues))
    if wrapper == "time":
        out = short_given(s, "o") or long_given(s, ("output",))
        if out is not None:
            issues.append(Issue("embedded-write", out.index, "time -o writes to a file"))
    if wrapper in ("su", "runuser", "flock"):
        # su USER -c CMD and flock FILE -c CMD: -c may follow the operand
        late = scan(args, short, long_, permute=True)
        cmd = short_given(late, "c") or long_given(late, ("command",))
        if cmd is not None and cmd.value is not None:
            return Unwrapped(None, tuple(issues), split_string=cmd.value)
    if wrapper in ("chroot", "flock"):
        # the first operand is the new root or the lock file
        if first is None or first + 1 >= len(args):
            return Unwrapped(None, tuple(issues))
        return Unwrapped(first + 1, tuple(issues))
    if wrapper in ("su", "runuser"):
        cmd = short_given(s, "c") or long_given(s, ("command",))
        if cmd is not None and cmd.value is not None:
            return Unwrapped(None, tuple(issues), split_string=cmd.value)
        if wrapper == "runuser" and (short_given(s, "u") or long_given(s, ("user",))):
            return Unwrapped(first, tuple(issues))  # runuser -u USER [--] COMMAND
        return Unwrapped(None, tuple(issues))
    if wrapper == "flock":
        cmd = short_given(s, "c") or long_given(s, ("command",))
        if cmd is not None and cmd.value is not None:
            return Unwrapped(None, tuple(issues), split_string=cmd.value)
    if wrapper == "watch" and first is not None:
        # watch joins its arguments and runs them through `sh -c`
        return Unwrapped(None, tuple(issues), split_string=" ".join(args[first:]))
    return Unwrapped(first, tuple(issues))


_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")


# --- destructive payloads --------------------------------------------------------------------

SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/usr",
        "/var",
        "/usr/bin",
        "/usr/lib",
        "/usr/local",
        "/usr/sbin",
        "/usr/share",
        "/var/lib",
        "/System",
        "/Library",
        "/Applications",
        "/Users",
        "/private",
        "/Volumes",
        "/nix",
        "/snap",
        "/tmp",
    }
)
_BLOCK_DEVICE = re.compile(
    r"^/dev/(?:sd[a-z]+|hd[a-z]+|vd[a-z]+|xvd[a-z]+|nvme\d+n\d+(?:p\d+)?|nvme\d+|mmcblk\d+"
    r"(?:p\d+)?|disk\d+(?:s\d+)?|rdisk\d+(?:s\d+)?|dm-\d+|md\d+|sr\d+|loop\d+|mapper/.+"
    r"|root|sd[a-z]+\d+|nbd\d+|disk/by-[a-z-]+/.+)\d*$"
)


def block_device(path: str) -> bool:
    return bool(_BLOCK_DEVICE.match(posixpath.normpath("/" + path.lstrip("/"))))


def critical_target(target: str, cwd: str | None, workspace: str) -> str | None:
    """Why deleting ``target`` recursively would be catastrophic, or None.
    ``target`` is a decoded argument in which ``$HOME``/``${HOME}`` has been
    written as ``~``."""
    if target == UNKNOWN or not target:
        return None
    if target.startswith("~+") and target[2:3] in ("", "/") and cwd is not None:
        target = cwd + target[2:]  # ~+ is the working directory
    if cwd is not None and cwd.startswith("~") and not target.startswith(("/", "~")):
        target = posixpath.join(cwd, target)  # after `cd ~`: relative to home
    if target.startswith("~"):
        rest = target[1:]
        if "/" in rest and not rest.startswith("/"):
            return None  # ~user/something
        norm = posixpath.normpath("/" + rest.lstrip("/")) if rest not in ("", "/") else "/"
        if norm in ("/", "/*", "/.*") or rest in ("", "/", "/*", "/.", "/..") or rest.isalnum():
            return "the home directory"
        return None
    if target.startswith("/"):
        path = "/" + target.lstrip("/")
    elif cwd is not None:
        path = posixpath.join(cwd, target)
    else:
        return None
    norm = posixpath.normpath(path)
    if norm.endswith("/*"):
        norm = posixpath.dirname(norm) or "/"
    elif norm.endswith("/.*"):
        norm = posixpath.dirname(norm) or "/"
    norm = "/" + norm.lstrip("/")
    if norm in SYSTEM_DIRS:
        return "the root directory" if norm == "/" else f"the system directory {norm}"
    ws = posixpath.normpath(workspace)
    if norm == ws:
        return "the workspace itself"
    if ws.startswith(norm.rstrip("/") + "/"):
        return "a directory that contains the workspace"
    return None


_RECURSIVE_RM = ("recursive",)
# find expression words that do not narrow which files -delete removes
_FIND_UNFILTERED = frozenset(
    {
        "-delete",
        "-depth",
        "-xdev",
        "-mount",
        "-mindepth",
        "-maxdepth",
        "-ignore_readdir_race",
        "-noleaf",
        "-daystart",
        "-follow",
        "-true",
        "-print",
        "-print0",
        "-ls",
        "-nowarn",
        "-warn",
    }
)


def destructive(prog: str, args: Sequence[str], cwd: str | None, workspace: str) -> Issue | None:
    """The refusal for a known destructive payload, or None."""
    if prog == "rm":
        s = scan(args, "")
        recursive = short_given(s, "rR") or long_given(s, _RECURSIVE_RM)
        if recursive is None:
            return None
        for i in s.operands:
            why = critical_target(args[i], cwd, workspace)
            if why is not None:
                return Issue("destructive-rm", i, f"recursive rm of {why} is never run", "deny")
        return None
    if prog in ("chmod", "chown", "chgrp"):
        s = scan(args, "", ("reference", "from"))
        if (short_given(s, "R") or long_given(s, ("recursive",))) is None:
            return None
        # the first operand is the mode or owner, unless --reference gives it
        # or the mode is written like an option (chmod -R -w /)
        no_mode = long_given(s, ("reference",)) is not None or (
            prog == "chmod" and any(re.fullmatch(r"-[rwxXst]+", a) for a in args)
        )
        for i in s.operands if no_mode else s.operands[1:]:
            why = critical_target(args[i], cwd, workspace)
            if why is not None:
                return Issue(
                    "destructive-chmod", i, f"recursive {prog} of {why} is never run", "deny"
                )
        return None
    if prog.startswith("mkfs") or prog in ("mke2fs", "mkswap", "wipefs", "mkdosfs", "newfs"):
        return Issue("mkfs", -1, f"{prog} erases a file system and is never run", "deny")
    if prog in ("shutdown", "reboot", "halt", "poweroff"):
        return Issue("power-control", -1, f"{prog} stops the machine and is never run", "deny")
    if prog in ("init", "telinit") and any(a in ("0", "6") for a in args):
        return Issue("power-control", -1, f"{prog} 0/6 stops the machine and is never run", "deny")
    if prog == "systemctl" and any(
        a.removesuffix(".target") in ("poweroff", "reboot", "halt", "kexec", "emergency", "rescue")
        for a in args
    ):
        return Issue("power-control", -1, "systemctl power actions are never run", "deny")
    if prog == "kill":
        for i, a in enumerate(args):
            if re.fullmatch(r"-0*1", a) and (i > 0 or len(args) == 1):
                return Issue(
                    "kill-all", i, "kill -1 signals every process and is never run", "deny"
                )
        return None
    if prog == "dd":
        for i, a in enumerate(args):
            if a.startswith("of=") and block_device(a[3:]):
                return Issue(
                    "block-device-write",
                    i,
                    "dd onto a block device destroys its data and is never run",
                    "deny",
                )
        return None
    if prog in ("cp", "mv", "tee", "shred", "install", "ln", "cat", "pv", "truncate"):
        for i, a in enumerate(args):
            if a.startswith("/dev/") and block_device(a) and (prog != "cat"):
                return Issue(
                    "block-device-write",
                    i,
                    f"{prog} onto a block device destroys its data and is never run",
                    "deny",
                )
        return None
    if prog == "find":
        # `find / -delete` and `find / -exec rm {} +` are `rm -rf /` by other
        # names; with a test in the expression (-name, -type, ...) they
        # remove only some files
        lead = 0  # -H/-L/-P/-D X/-OLEVEL come before the starting points
        while lead < len(args) and (
            args[lead] in ("-H", "-L", "-P", "-D") or args[lead].startswith(("-D", "-O"))
        ):
            lead += 2 if args[lead] == "-D" else 1
        starts = lead
        while starts < len(args) and not (
            args[starts].startswith("-") or args[starts] in ("(", "!")
        ):
            starts += 1
        expr: list[str] = []
        removes = "-delete" in args
        i = starts
        while i < len(args):
            a = args[i]
            if a in ("-exec", "-execdir", "-ok", "-okdir"):
                # (-ok and -okdir ask before each file: not a blind removal)
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                inner = args[i + 1 : j]
                if (
                    a in ("-exec", "-execdir")
                    and inner
                    and posixpath.basename(inner[0]) in ("rm", "shred", "unlink", "rmdir")
                ):
                    removes = True
                else:
                    expr.append(a)  # some other command: not a plain removal
                i = j + 1
                continue
            if not a.isdigit():
                expr.append(a)
            i += 1
        if not removes or not set(expr) <= _FIND_UNFILTERED:
            return None
        # without a starting point find searches `.`
        points = list(enumerate(args[lead:starts], lead)) or [(-1, ".")]
        for i, a in points:
            why = critical_target(a, cwd, workspace)
            if why is not None:
                return Issue(
                    "destructive-rm", i, f"removing every file under {why} is never run", "deny"
                )
        return None
    return None
