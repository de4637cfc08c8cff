"""git: a closed list of read-only shapes.

A subcommand is read-only only in the shapes listed here; everything else
asks. Within a read-only subcommand, options that run helper programs
(``--ext-diff``, ``--textconv``, ``cat-file --filters``, pagers,
``--show-signature`` and the ``verify-*`` commands, which run gpg) or write
files (``--output``) ask, and options that name files (``-O``,
``--pathspec-from-file``, ``ls-files -X``, ``blame --contents``, ``grep
-f``) are resolved like any path, attached or not.

What git does on its own, from the repository's configuration
(``diff.external``, ``core.fsmonitor``, textconv drivers), is judged by the
guard from the repository git would use (``charter.runtime.shell.gitrepo``),
not from the arguments.
"""

from __future__ import annotations

from collections.abc import Sequence

from charter.runtime.shell.options import Spec, long_given, read_args, scan, short_given
from charter.runtime.shell.programs.base import OK, Checked, Walk, one

__all__ = ["git"]

_GLOBAL_OK = frozenset(
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
_READ = frozenset(
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
        "version",
        "var",
    }
)
_NETWORK = frozenset(
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
_EXEC_OPTS = (
    "ext-diff",
    "textconv",
    "filters",
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
_EXACT = frozenset({"text"})

# Path-valued options, by subcommand family. Operands of the log family are
# revisions and pathspecs (text); those of diff, blame, grep's files and the
# check-* commands are judged as paths (`git diff --no-index A B` reads A, B).
_DIFF_SPEC = Spec(path="O", long_path=("output", "pathspec-from-file"), unknown_values="text")
_SPECS: dict[str, Spec] = {
    **{
        sub: _DIFF_SPEC
        for sub in (
            "diff",
            "log",
            "show",
            "whatchanged",
            "shortlog",
            "diff-tree",
            "diff-files",
            "diff-index",
            "rev-list",
        )
    },
    "ls-files": Spec(
        text="x",
        path="X",
        long_text=("exclude", "exclude-per-directory", "format", "with-tree"),
        long_path=("exclude-from", "pathspec-from-file"),
        unknown_values="text",
    ),
    "blame": Spec(
        text="L",
        path="S",
        long_path=("contents", "ignore-revs-file"),
        long_text=("ignore-rev", "date"),
        unknown_values="text",
    ),
    "grep": Spec(
        text="eABCm",
        path="f",
        long_text=(
            "regexp",
            "max-depth",
            "threads",
            "context",
            "after-context",
            "before-context",
            "max-count",
        ),
        long_path=("file",),
        unknown_values="text",
    ),
}
_SPECS["annotate"] = _SPECS["blame"]
_PATH_OPERANDS = frozenset({"diff", "blame", "annotate", "check-ignore", "check-attr", "status"})


def git(args: Sequence[str]) -> Checked:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("--version", "--help", "-h"):
            return OK
        if a not in _GLOBAL_OK:
            return one(
                "git-global-option",
                i,
                f"git {a} changes where or how git runs (configuration, directory, "
                "pager or helpers); run the subcommand without it",
            )
        i += 1
    if i >= len(args):
        return OK
    sub = args[i]
    rest = list(args[i + 1 :])
    offset = i + 1
    if sub in _READ:
        return _read_only(sub, rest, offset)
    if sub in ("verify-commit", "verify-tag"):
        return one(
            "exec-option",
            i,
            f"git {sub} runs gpg to check signatures; it needs approval",
        )
    if sub in ("branch", "tag"):
        return _branch_or_tag(sub, rest, offset, i)
    if sub == "remote" and (not rest or rest in (["-v"], ["--verbose"]) or rest[0] == "get-url"):
        return _all_text(offset, len(rest))
    if sub == "worktree" and rest[:1] == ["list"]:
        return _all_text(offset, len(rest))
    if sub == "stash" and rest[:1] in (["list"], ["show"]):
        # stash list takes log options and stash show diff options
        checked = _read_only("log", rest[1:], offset + 1, name=f"stash {rest[0]}")
        return Checked(checked.issues, checked.text_args | {offset}, checked.paths)
    if sub == "config":
        return one("git-config", i, "git config can reveal credentials stored in configuration")
    writes = _subcommand_writes(sub, rest, offset)
    if sub in _NETWORK:
        return one(
            "git-network",
            i,
            f"git {sub} talks to another repository or changes remotes; it always needs approval",
            writes=writes,
        )
    if writes:
        return one(
            "git-mutation",
            i,
            f"git {sub} writes files; it needs approval",
            writes=writes,
        )
    return one(
        "git-mutation", i, f"git {sub} is not one of git's read-only subcommands; it needs approval"
    )


# Subcommands whose option names a file or folder they write: each target is
# confined like a redirect's (the subcommand asks anyway; a flag that lifts
# the ask must not lift the confinement).
_OUTPUT_OPTIONS = {
    "format-patch": ("-o", "--output-directory"),
    "archive": ("-o", "--output"),
}


# subcommand -> (words before its options, short options with a value,
# long options with a value, which operand is the directory it creates)
_MAKES_DIRECTORY: dict[str, tuple[int, str, tuple[str, ...], int]] = {
    "clone": (
        0,
        "obuc",
        (
            "origin",
            "branch",
            "upload-pack",
            "reference",
            "reference-if-able",
            "separate-git-dir",
            "depth",
            "template",
            "config",
            "jobs",
            "filter",
            "shallow-since",
            "shallow-exclude",
            "bundle-uri",
            "server-option",
            "ref-format",
        ),
        1,
    ),  # fmt: skip
    "init": (
        0,
        "b",
        ("template", "separate-git-dir", "initial-branch", "object-format", "ref-format"),
        0,
    ),  # fmt: skip
    "worktree add": (1, "bB", ("reason",), 0),
    "submodule add": (1, "b", ("name", "reference", "depth"), 1),
}


def _subcommand_writes(
    sub: str, rest: list[str], offset: int
) -> tuple[tuple[int, str | None], ...]:
    found: list[tuple[int, str | None]] = []
    short, long_ = "", ""
    for name in _OUTPUT_OPTIONS.get(sub, ()):
        if name.startswith("--"):
            long_ = name
        else:
            short = name
    # the directories clone, init, worktree add and submodule add create,
    # and --separate-git-dir (for clone and init)
    made = _MAKES_DIRECTORY.get(sub if sub not in ("worktree", "submodule") else
                                f"{sub} {rest[0] if rest else ''}")  # fmt: skip
    if made is not None:
        skip, short_values, long_values, position = made
        s = scan(rest[skip:], short_values, long_values)
        operands = list(s.operands)
        if position < len(operands):
            found.append((offset + skip + operands[position], rest[skip + operands[position]]))
        for o in s.opts:
            if o.value is not None and "--separate-git-dir".startswith(o.name) and len(o.name) > 3:
                found.append((offset + skip + o.index, o.value))
    if sub == "bundle" and rest[:1] == ["create"]:
        # git bundle create [options] FILE ...: the first word no option is the file
        k = next((k for k in range(1, len(rest)) if not rest[k].startswith("-")), None)
        if k is not None:
            found.append((offset + k, rest[k]))
    for k, a in enumerate(rest):
        if a == "--":
            break
        if (a == short or a == long_) and k + 1 < len(rest):
            found.append((offset + k + 1, rest[k + 1]))
        elif long_ and a.startswith(long_ + "="):
            found.append((offset + k, a.split("=", 1)[1]))
        elif short and a.startswith(short) and len(a) > len(short):
            found.append((offset + k, a[len(short) :]))
    return tuple(found)


def _all_text(offset: int, count: int) -> Checked:
    return Checked((), frozenset(range(offset - 1, offset + count)))


def _read_only(sub: str, rest: list[str], offset: int, *, name: str | None = None) -> Checked:
    shown = name or sub
    s = scan(rest, "")
    # git's parse-options accepts abbreviated long options.
    bad = long_given(s, _EXEC_OPTS, exact_options=_EXACT)
    if bad is not None:
        writes: tuple[tuple[int, str | None], ...] = ()
        if "output".startswith(bad.name[2:]):
            rule = "embedded-write"
            # --output=FILE, or the file in the next argument
            if bad.value is not None:
                writes = ((bad.index + offset, bad.value),)
            elif bad.index + 1 < len(rest):
                writes = ((bad.index + 1 + offset, rest[bad.index + 1]),)
        else:
            rule = "exec-option"
        return one(
            rule,
            bad.index + offset,
            f"git {shown} {bad.name} runs a helper program or writes a file; "
            "drop it to run unprompted",
            writes=writes,
        )
    if sub == "var" and short_given(s, "l"):
        return one("git-config", offset, "git var -l lists the configuration, credentials included")
    if sub == "grep":
        o = short_given(s, "O")
        if o is not None:
            return one("exec-option", o.index + offset, "git grep -O opens files in a pager")
    history = _prints_history(sub, rest)
    if history is not None:
        return one(
            "git-history",
            history + offset,
            f"git {shown} prints file contents from commits, which can hold a credential "
            "committed at any time (even one deleted since); it needs approval "
            "(--stat, --name-only or -s print no contents)",
        )
    spec = _SPECS.get(sub)
    if spec is None:
        return _all_text(offset, len(rest))
    r = read_args(rest, spec)
    text = {offset - 1} | {offset + k for k in r.option_words}
    paths = tuple((offset + k, v) for k, v in r.path_values())
    operands = list(r.operands)
    walk = None
    if sub == "grep":
        if r.given("-e", "--regexp", "-f", "--file") is None and operands:
            text.add(offset + operands.pop(0))
        # git grep reads every file below the pathspecs (tracked ones, or all
        # with --untracked / --no-index)
        walk = Walk(
            tuple((offset + k, rest[k]) for k in operands if not rest[k].startswith(":")),
            follow=False,
            revisions=r.given("--no-index", "--untracked") is None,
        )
    elif sub in ("diff", "diff-index", "diff-files"):
        # an operand that names no file is a revision (git diff main): no
        # tree to walk below it (depth 0), only that check; and a diff of the
        # working tree prints the changes of every file the repository
        # tracks, a tracked .env included, wherever it runs (workspace: the
        # guard reads the index). diff-files and diff-index print a patch
        # only when asked to.
        before = _before_dashdash(rest, operands)
        patch = sub == "diff" or _patch_option(_options(rest)) is not None
        if r.given("--no-index") is not None:
            # two directories are compared file by file, at every depth
            walk = Walk(tuple((offset + k, rest[k]) for k in operands), follow=False)
        elif not _quiet(rest) and (patch or before):
            walk = Walk(tuple((offset + k, rest[k]) for k in before), follow=False, depth=0,
                        revisions=True, workspace=patch)  # fmt: skip
    if sub not in _PATH_OPERANDS and sub != "grep":
        text.update(offset + k for k in operands)
    return Checked((), frozenset(text), paths, walk)


def _before_dashdash(rest: list[str], operands: list[int]) -> list[int]:
    end = rest.index("--") if "--" in rest else len(rest)
    return [k for k in operands if k < end]


# What makes a log-family command print patches (file contents), and what
# keeps show/diff from printing them.
_PATCH_LONG = (
    "--patch", "--unified", "--cc", "--dd", "--word-diff", "--color-words",
    "--remerge-diff", "--textconv", "--binary", "--full-index", "--patch-with",
)  # fmt: skip
# Not here: `--oneline` (a log format: `git show --oneline` still prints
# the patch) and `--check` (prints every added line with a whitespace error).
_NO_CONTENT = frozenset(
    {
        "-s", "--no-patch", "--stat", "--shortstat", "--numstat", "--name-only",
        "--name-status", "--summary", "--raw", "--quiet", "--dirstat", "--compact-summary",
    }
)  # fmt: skip
_LOG_FAMILY = frozenset({"log", "whatchanged", "diff-tree", "rev-list", "shortlog"})


def _prints_history(sub: str, rest: list[str]) -> int | None:
    """The index of the argument that makes ``sub`` print file contents
    stored in commits or objects, or None. Read widely: a false ask costs a
    prompt, a miss prints a committed secret."""
    end = rest.index("--") if "--" in rest else len(rest)
    opts = [(k, a) for k, a in enumerate(rest[:end]) if a.startswith("-")]
    if sub == "cat-file":
        # -t, -s and -e tell type, size and existence; everything else
        # (-p, blob, --batch, --batch-all-objects, --textconv) prints objects
        if all(a in ("-t", "-s", "-e", "--allow-unknown-type") for _, a in opts) and opts:
            return None
        return 0
    if sub == "show":
        if any(":" in a for a in rest[:end] if not a.startswith("-")):
            return 0  # REV:PATH prints a blob whatever the flags
        patch = _patch_option(opts)
        if patch is not None:
            return patch
        return None if _quiet(rest) else 0
    if sub in _LOG_FAMILY:
        return _patch_option(opts)
    if sub == "status":
        # -v shows the staged changes as a patch (-vv the unstaged ones too)
        for k, a in opts:
            if a.startswith("--v") or (not a.startswith("--") and "v" in a):
                return k
        return None
    if sub == "grep":
        # --cached searches the index: staged contents, which may hold a
        # file the working tree (and so the walk) no longer has
        return next((k for k, a in opts if a == "--cached"), None)
    if sub in ("diff", "diff-index", "diff-files"):
        if _quiet(rest):
            return None
        staged = next((k for k, a in opts if a in ("--cached", "--staged", "--merge-base")), None)
        return staged
    return None


def _patch_option(opts: list[tuple[int, str]]) -> int | None:
    """The index of the first option that asks for a patch (file contents),
    or None. git applies its output options in order, so a patch option
    after ``-s``/``--stat`` (``git show -s -p``) prints the patch again:
    any patch option counts, wherever it stands."""
    for k, a in opts:
        name = a.split("=", 1)[0]
        if a.startswith("--"):
            if name.startswith(_PATCH_LONG):
                return k
        elif a[1] in "SGOn":
            continue  # pickaxe, order file and count values are text
        elif a[1] in "UL" or "p" in a or "u" in a or a == "-c":
            # -p/-u (patch, also in bundles: -5p, -np, -sp), -U<n>, -L (line
            # history), -c (combined patch)
            return k
    return None


def _options(rest: list[str]) -> list[tuple[int, str]]:
    end = rest.index("--") if "--" in rest else len(rest)
    return [(k, a) for k, a in enumerate(rest[:end]) if a.startswith("-")]


def _quiet(rest: list[str]) -> bool:
    """Whether the options print no file contents: one of them suppresses
    the patch and none turns it back on."""
    opts = _options(rest)
    if _patch_option(opts) is not None:
        return False
    return any(a.split("=", 1)[0] in _NO_CONTENT for _, a in opts)


_LISTING = frozenset(
    {
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
)


def _branch_or_tag(sub: str, rest: list[str], offset: int, at: int) -> Checked:
    s = scan(rest, "")
    names = {o.name.split("=")[0] for o in s.opts}
    if names <= _LISTING and (not s.operands or names & {"--list", "-l"}):
        return _all_text(offset, len(rest))
    return one(
        "git-mutation",
        at,
        f"git {sub} with these arguments creates, renames or deletes {sub}es; "
        f"only listing {sub}es runs unprompted",
    )
