"""The tables: read-only programs with their checkers, programs that always
ask, shells, interpreters and reserved words."""

from __future__ import annotations

from charter.runtime.shell.programs import awk, files, find, git, sed, text
from charter.runtime.shell.programs.base import Checker
from charter.runtime.shell.programs.base import text as text_args

__all__ = [
    "ASK_PROGRAMS",
    "INTERPRETERS",
    "READ_ONLY",
    "RESERVED_OPAQUE",
    "RESERVED_PREFIX",
    "SHELLS",
]


READ_ONLY: dict[str, Checker] = {
    **files.SPEC_CHECKERS,
    **{
        name: text_args
        for name in ("echo", "printf", "true", "false", "sleep", "seq", "type", "expr", ":")
    },
    **{
        name: files.checksum(name)
        for name in (
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "cksum",
        )
    },
    **{name: awk.awk for name in ("awk", "gawk", "mawk", "nawk")},
    "wc": files.wc,
    "du": files.du,
    "ls": files.ls,
    "diff": files.diff,
    "strings": files.strings,
    "printf": text.printf,
    "jq": text.jq,
    "ps": text.ps,
    "grep": text.grep,
    "egrep": text.grep,
    "fgrep": text.grep,
    "rg": text.rg,
    "find": find.find,
    "sort": text.sort,
    "uniq": text.uniq,
    "xxd": files.xxd,
    "tree": files.tree,
    "file": files.file,
    "date": files.date,
    "hostname": files.hostname,
    "sed": sed.sed,
    "git": git.git,
    "command": text.command_lookup,
    "test": text.test,
    "[": text.bracket,
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
