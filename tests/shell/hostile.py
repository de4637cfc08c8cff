"""Hostile command lines for the guard's worst cases (shared by
``test_hostile.py``, which checks their decisions, and
``bench/shell_worst_case.py``, which times them).

Each maker returns a command of about ``n`` characters built to defeat a
naive lexer, parser or pattern: unbalanced quotes, deep nesting, long runs
of one character, huge here-documents, long lists.
"""

from __future__ import annotations

from collections.abc import Callable


def _rep(unit: str, n: int) -> str:
    return unit * max(1, n // len(unit))


MAKERS: dict[str, Callable[[int], str]] = {
    "unbalanced double quotes": lambda n: _rep('"', n),
    "unbalanced single quotes": lambda n: _rep("'", n),
    "alternating quotes": lambda n: _rep("'\"", n),
    "open $(": lambda n: _rep("$(", n),
    "nested $( ... )": lambda n: _rep("$(", n // 2) + _rep(")", n // 2),
    "open $((": lambda n: _rep("$((", n),
    "nested $(( ... ))": lambda n: _rep("$((", n // 2) + _rep("))", n // 3),
    "open ((": lambda n: _rep("((", n),
    "open ${": lambda n: _rep("${", n),
    "nested { ": lambda n: _rep("{ ", n),
    "open backticks": lambda n: _rep("`", n),
    "nested double-quoted $(": lambda n: _rep('"$(', n),
    "backslashes": lambda n: _rep("\\", n),
    "backslash-newlines": lambda n: "ls " + _rep("\\\n", n),
    "quoted backslash-newlines": lambda n: _rep("'\\\n'", n),
    "comment continuations": lambda n: _rep("#\\\n", n),
    "semicolons": lambda n: _rep(";", n),
    "many commands": lambda n: _rep("ls;", n),
    "long pipeline": lambda n: "ls" + _rep(" | cat", n),
    "huge here-document": lambda n: "cat <<E\n" + _rep("x $(id)\n", n),
    "many here-documents": lambda n: _rep("cat <<E <<F\n", n),
    "long word": lambda n: "ls " + _rep("a", n),
    "long name run then (": lambda n: _rep("a", n) + "(){ |",
    "function definitions": lambda n: _rep("a(){ ", n),
    "brace lists": lambda n: "rm " + _rep("{a,b}", n),
    "nested brace lists": lambda n: "rm " + _rep("{a,", n) + _rep("}", n // 3),
    "credential-looking word": lambda n: "cat " + _rep(".env", n) + "!",
    "globs": lambda n: "ls " + _rep("*?[", n),
    "dollar signs": lambda n: "echo " + _rep("$", n),
    "ANSI-C quotes": lambda n: _rep("$'\\x41'", n),
    "redirects": lambda n: "ls" + _rep(" >o", n),
    "assignments": lambda n: _rep("a=1 ", n) + "ls",
    "reserved words": lambda n: _rep("if ", n) + "ls",
    "invisible characters": lambda n: "ls " + _rep("\u200b", n),
    "non-ASCII text": lambda n: "echo " + _rep("é", n),
    "ANSI escapes": lambda n: "echo " + _rep("\x1b[31m", n),
    "IFS words": lambda n: "ls" + _rep("${IFS}x", n),
    "fork bomb shape": lambda n: _rep(":(){ :|:& };", n),
    "arithmetic commands in test": lambda n: "test -v " + _rep("a[$(", n),
    "eval chain": lambda n: _rep("eval ", n) + "ls",
    "bash -c chain": lambda n: _rep("bash -c ", n) + "ls",
}

# Worst cases that are, in fact, one plain read-only command: under the size
# cap they may be allowed (the others never are).
BENIGN = frozenset({"long word", "non-ASCII text", "long pipeline", "many commands"})
