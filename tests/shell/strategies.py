"""Hypothesis strategies and oracles shared by the property and differential tests."""

from __future__ import annotations

from abc import ABC, abstractmethod

from hypothesis import strategies as st

WORDS = [
    "ls",
    "cat",
    "rm",
    "echo",
    "git",
    "log",
    "status",
    "sed",
    "-n",
    "-i",
    "p",
    "find",
    ".",
    "-exec",
    "-name",
    "rg",
    "--pre=sh",
    "-z",
    "sort",
    "-o",
    "x",
    "/",
    "~",
    "-rf",
    "-r",
    "--",
    "$HOME",
    "$x",
    "${y}",
    "$(ls)",
    "`id`",
    "$((1+1))",
    "$[2]",
    "'a b'",
    '"q $z"',
    '"plain"',
    "*.py",
    "{a,b}",
    "a=1",
    "sudo",
    "env",
    "bash",
    "-c",
    "'rm -rf /'",
    "eval",
    "xargs",
    "<(ls)",
    ">(wc)",
    "$'\\x72m'",
    "\\rm",
    "r''m",
    "if",
    "then",
    "fi",
    "(",
    ")",
    "{",
    "}",
    "#",
    "# c",
    "'",
    '"',
    "\\",
    "$",
    "/dev/null",
    "out.txt",
    "/tmp/x",
    ".env",
    "..",
]
SEPARATORS = [
    " ",
    " ",
    " ",
    "; ",
    " && ",
    " || ",
    " | ",
    " > ",
    " >> ",
    " < ",
    " 2>&1 ",
    "\n",
    " & ",
    " >| ",
    " <<< ",
    "",
]


@st.composite
def shellish(draw: st.DrawFn) -> str:
    """Command lines assembled from shell-significant fragments."""
    n = draw(st.integers(min_value=1, max_value=12))
    out: list[str] = []
    for i in range(n):
        if i:
            out.append(draw(st.sampled_from(SEPARATORS)))
        out.append(
            draw(
                st.sampled_from(WORDS)
                | st.text(
                    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=4
                )
            )
        )
    return "".join(out)


def has_unquoted_risk(s: str) -> bool:
    """True if ``s`` holds an unquoted ``$`` (not starting a ``$'...'``/``$"..."``
    quote), a backtick outside single quotes, an unquoted ``<(``/``>(``, or an
    unbalanced quote. Written independently of Charter's lexer."""
    i = 0
    n = len(s)
    q: str | None = None
    while i < n:
        c = s[i]
        if q == "'":
            if c == "'":
                q = None
        elif q == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                q = None
            elif c == "`":
                return True
        else:
            if c == "\\":
                i += 1
            elif c == "'":
                q = "'"
            elif c == '"':
                q = '"'
            elif c == "$":
                nxt = s[i + 1 : i + 2]
                if nxt == "'":
                    j = i + 2
                    while j < n and s[j] != "'":
                        j += 2 if s[j] == "\\" else 1
                    if j >= n:
                        return True
                    i = j + 1
                    continue
                if nxt == '"':
                    q = '"'
                    i += 2
                    continue
                return True
            elif c == "`":
                return True
            elif c in "<>" and s[i + 1 : i + 2] == "(":
                return True
        i += 1
    return q is not None


# --- a grammar of shell text, for the bash differential oracle ------------------------------
#
# Programs the oracle's sandbox records (external names, and `echo`, which
# the sandbox turns into a recorded program), and word material rich in the
# constructs where a lexer can disagree with bash: every kind of quote,
# escapes, line continuations in awkward places, expansions, comments,
# here-documents, reserved words and separators. The grammar draws through a
# small chooser, so the same grammar feeds hypothesis (``shell_text``) and a
# plain seeded random generator for big runs (``random_shell_text``).

PROGRAMS = [
    "ls", "cat", "echo", "rm", "id", "grep", "wc", "git", "sed", "head", "x", "printf",
    "awk", "rg", "ps",
]  # fmt: skip
_PLAIN = [
    "a", "b", "-n", "-rf", "~", "x.txt", "/", "..", "-", "--", "=", "a=b", "%s", "1", "-la",
    # option shapes of the programs whose arguments are a language or widen
    # what they read (awk, rg, git, ps): the guard must see the same words
    "-F:", "-v", "x=1", "-g", "--iglob", "-uu", "-L", "-tx", "--type-add=x:*", "log", "-p",
    "show", "--output=o", "cat-file", "--batch", "-ef", "aux",
]  # fmt: skip
_DQ_PIECES = [
    "a b",
    "$x",
    "${x}",
    "${x:-d}",
    "$(id)",
    "`id`",
    '\\"',
    "\\$",
    "\\\\",
    "\\`",
    "\\a",
    "'",
    "#",
    "$",
    "$'q'",
    "\\\n",
    "$\\\n(id)",
    "$((1+2))",
    "*",
    "{a,b}",
    "\t",
    "\r",
]
_SQ_PIECES = ["a b", "\\", "\\\n", '"', "$x", "$(id)", "`id`", "#", "\n", "*"]
_ANSI_PIECES = [
    "a",
    "\\n",
    "\\x41",
    "\\'",
    "\\\\",
    "\\\n",
    "\\t",
    "\\101",
    "\\u0041",
    '"',
    "$x",
    "\\0",
]
_OPERATORS = ["; ", " && ", " || ", " | ", "\n", " & ", ";", "|", "&&", " ;\n", " |\n"]
_REDIRECTS = [
    "> o",
    ">o",
    "2>&1",
    "< x.txt",
    ">> o",
    "2>/dev/null",
    "&>o",
    ">|o",
    "<<< w",
    "{fd}>o",
]
_QUOTED_LITERALS = [
    "'{print $1}'",
    "'BEGIN{x=1system(\"id\")}'",
    "'{print > \"o\"}'",
    "'*'",
    "'!*.js'",
    "'a b'",
    '"a b"',
    "\\ ",
    "\\a",
    "'#'",
    '"#"',
    "$'\\x41'",
    "'\\'",
    "\\\n",
    '""',
    "''",
]


class Chooser(ABC):
    """Where the grammar's choices come from: hypothesis draws in the suite,
    a seeded random generator in the bench."""

    @abstractmethod
    def one(self, options: list[str]) -> str: ...

    @abstractmethod
    def number(self, low: int, high: int) -> int: ...

    def some(self, options: list[str], most: int) -> str:
        return "".join(self.one(options) for _ in range(self.number(0, most)))


class _Drawn(Chooser):
    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def one(self, options: list[str]) -> str:
        return self.draw(st.sampled_from(options))

    def number(self, low: int, high: int) -> int:
        return self.draw(st.integers(min_value=low, max_value=high))


class RandomChooser(Chooser):
    """Choices from a seeded ``random.Random`` (fast, for a benchmark)."""

    def __init__(self, seed: int) -> None:
        import random

        self.rng = random.Random(seed)

    def one(self, options: list[str]) -> str:
        return options[self.rng.randrange(len(options))]

    def number(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


def _fragment(c: Chooser, depth: int) -> str:
    kind = c.number(0, 19)
    if kind <= 5:
        return c.one(_PLAIN + PROGRAMS)
    if kind <= 7:
        return c.one(_QUOTED_LITERALS)
    if kind == 8:
        return "'" + c.some(_SQ_PIECES, 3) + "'"
    if kind == 9:
        return '"' + c.some(_DQ_PIECES, 3) + '"'
    if kind == 10:
        return "$'" + c.some(_ANSI_PIECES, 3) + "'"
    if kind == 11:
        return '$"' + c.some(_DQ_PIECES[:6], 2) + '"'
    if kind == 12 and depth < 1:
        return "$(" + _program(c, depth + 1) + ")"
    if kind == 13 and depth < 1:
        inner = _program(c, depth + 1).replace("\\", "\\\\").replace("`", "\\`")
        return "`" + inner + "`"
    if kind == 14:
        return c.one(["$x", "${x}", "$1", "$@", "$#", "${x#a}", "$((x+1))", "$[1]"])
    if kind == 15:
        return "\\" + c.one([" ", "\n", "$", "'", '"', "\\", "a", "#", ";", "|", "("])
    if kind == 16:
        return c.one(["*", "?", "[ab]", "{a,b}", "{1..2}", "{}", "{a}", "~/x", "a=~"])
    if kind == 17:
        return c.one(["<(id)", ">(id)", "$(<x.txt)", "$( (id) )", "$((id))"])
    if kind == 18:
        return c.one(["#", "a#b", "#c", "\r", "\t", " "])
    return c.one(PROGRAMS)


def _word(c: Chooser, depth: int) -> str:
    return "".join(_fragment(c, depth) for _ in range(c.number(1, 3)))


def _simple(c: Chooser, depth: int) -> str:
    out: list[str] = []
    if c.number(0, 9) == 0:
        out.append(c.one(["x=1", "x='a b'", "x=$(id)", "x=ls"]))
    out.append(c.one(PROGRAMS) if c.number(0, 2) else _word(c, depth))
    for _ in range(c.number(0, 3 if depth == 0 else 1)):
        out.append(_word(c, depth))
    if c.number(0, 5) == 0:
        out.append(c.one(_REDIRECTS))
    return " ".join(out)


def _command(c: Chooser, depth: int) -> str:
    kind = c.number(0, 14)
    if kind == 0 and depth < 2:
        return "( " + _program(c, depth + 1) + " )"
    if kind == 1 and depth < 2:
        return "{ " + _program(c, depth + 1) + "; }"
    if kind == 2 and depth < 2:
        return "if " + _simple(c, depth) + "; then " + _program(c, depth + 1) + "; fi"
    if kind == 3 and depth < 2:
        return "for v in a b; do " + _simple(c, depth) + " $v; done"
    if kind == 4:
        delim = c.one(["E", "'E'", '"E"', "\\E", "E\\\n"])
        dash = c.one(["<<", "<<-"])
        body = c.some(_DQ_PIECES + ["\n", "E", "\tE"], 4)
        return f"{_simple(c, depth)} {dash}{delim}\n{body}\nE"
    if kind == 5:
        return "[[ " + _word(c, depth) + " == " + _word(c, depth) + " ]]"
    if kind == 6:
        return "! " + _simple(c, depth)
    if kind == 7:
        return _simple(c, depth) + " # " + _word(c, depth)
    return _simple(c, depth)


def _program(c: Chooser, depth: int) -> str:
    out = [_command(c, depth)]
    for _ in range(c.number(1, 2 if depth else 3) - 1):
        out.append(c.one(_OPERATORS))
        out.append(_command(c, depth))
    return "".join(out)


def grammar_text(c: Chooser) -> str:
    """A command line from the grammar above, then mutated: line
    continuations, carriage returns, backslashes and quotes put at arbitrary
    offsets (bash removes a backslash-newline before it reads anything,
    except inside single quotes, `$'...'`, comments and quoted here-document
    bodies)."""
    text = _program(c, 0)
    for _ in range(c.number(0, 2)):
        at = c.number(0, len(text))
        text = text[:at] + c.one(["\\\n", "\\\n", "\r", "\\", "'", '"']) + text[at:]
    return text


@st.composite
def shell_text(draw: st.DrawFn) -> str:
    """Hypothesis strategy: :func:`grammar_text` drawn by hypothesis."""
    return grammar_text(_Drawn(draw))


def random_shell_text(count: int, seed: int) -> list[str]:
    """``count`` command lines of :func:`grammar_text` from a seeded generator."""
    chooser = RandomChooser(seed)
    return [grammar_text(chooser) for _ in range(count)]
