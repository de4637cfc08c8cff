"""git: a closed list of read-only shapes."""

from __future__ import annotations

from collections.abc import Sequence

from charter.runtime.shell.options import long_given, scan, short_given
from charter.runtime.shell.programs.base import OK, Checked, one

__all__ = ["git"]


# git: a closed list of read-only shapes.
_GIT_GLOBALOK = frozenset(
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


def git(args: Sequence[str]) -> Checked:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("--version", "--help", "-h"):
            return OK
        if a not in _GIT_GLOBALOK:
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
    if sub in _GIT_READ:
        s = scan(rest, "")
        # git's parse-options accepts abbreviated long options.
        bad = long_given(s, _GIT_EXEC_OPTS, exact_options=_GIT_EXACT)
        if bad is not None:
            rule = "embedded-write" if "output".startswith(bad.name[2:]) else "exec-option"
            return one(
                rule,
                bad.index + offset,
                f"git {sub} {bad.name} runs a helper program or writes a file; "
                "drop it to run unprompted",
            )
        if sub == "var" and short_given(s, "l"):
            return one(
                "git-config", offset, "git var -l lists the configuration, credentials included"
            )
        if sub == "grep" and short_given(s, "O"):
            o = short_given(s, "O")
            assert o is not None
            return one("exec-option", o.index + offset, "git grep -O opens files in a pager")
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
        return one(
            "git-mutation",
            i,
            f"git {sub} with these arguments creates, renames or deletes {sub}es; "
            f"only listing {sub}es runs unprompted",
        )
    if sub == "remote" and (not rest or rest in (["-v"], ["--verbose"]) or rest[0] == "get-url"):
        return OK
    if sub == "worktree" and rest[:1] == ["list"]:
        return OK
    if sub == "stash" and rest[:1] in (["list"], ["show"]):
        # stash list takes log options and stash show diff options
        s = scan(rest[1:], "")
        bad = long_given(s, _GIT_EXEC_OPTS, exact_options=_GIT_EXACT)
        if bad is not None:
            rule = "embedded-write" if "output".startswith(bad.name[2:]) else "exec-option"
            return one(
                rule,
                bad.index + offset + 1,
                f"git stash {rest[0]} {bad.name} runs a helper program or writes a file; "
                "drop it to run unprompted",
            )
        return OK
    if sub == "config":
        return one("git-config", i, "git config can reveal credentials stored in configuration")
    if sub in _GIT_NETWORK:
        return one(
            "git-network",
            i,
            f"git {sub} talks to another repository or changes remotes; it always needs approval",
        )
    return one(
        "git-mutation", i, f"git {sub} is not one of git's read-only subcommands; it needs approval"
    )
