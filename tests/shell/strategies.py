"""Hypothesis strategies and oracles shared by the property and differential tests."""

from __future__ import annotations

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
# here-documents, reserved words and separators.

PROGRAMS = ["ls", "cat", "echo", "rm", "id", "grep", "wc", "git", "sed", "head", "x", "printf"]
_PLAIN = ["a", "b", "-n", "-rf", "~", "x.txt", "/", "..", "-", "--", "=", "a=b", "%s", "1"]
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
_ANSI_PIECES = ["a", "\\n", "\\x41", "\\'", "\\\\", "\\\n", "\\t", "\\101", "\\u0041", '"', "$x"]
_OPERATORS = ["; ", " && ", " || ", " | ", "\n", " & ", ";", "|", "&&", " ;\n", " |\n"]
_REDIRECTS = ["> o", ">o", "2>&1", "< x.txt", ">> o", "2>/dev/null", "&>o", ">|o", "<<< w", "{fd}>o"]


def _fragment(draw: st.DrawFn, depth: int) -> str:
    kind = draw(st.integers(min_value=0, max_value=15))
    if kind <= 2:
        return draw(st.sampled_from(_PLAIN + PROGRAMS))
    if kind == 3:
        return "'" + "".join(draw(st.lists(st.sampled_from(_SQ_PIECES), max_size=3))) + "'"
    if kind == 4:
        return '"' + "".join(draw(st.lists(st.sampled_from(_DQ_PIECES), max_size=3))) + '"'
    if kind == 5:
        return "$'" + "".join(draw(st.lists(st.sampled_from(_ANSI_PIECES), max_size=3))) + "'"
    if kind == 6:
        return '$"' + "".join(draw(st.lists(st.sampled_from(_DQ_PIECES[:6]), max_size=2))) + '"'
    if kind == 7 and depth < 2:
        return "$(" + _program(draw, depth + 1) + ")"
    if kind == 8 and depth < 2:
        inner = _program(draw, depth + 1).replace("\\", "\\\\").replace("`", "\\`")
        return "`" + inner + "`"
    if kind == 9:
        return draw(st.sampled_from(["$x", "${x}", "$1", "$@", "$#", "${x#a}", "$((x+1))", "$[1]"]))
    if kind == 10:
        return "\\" + draw(st.sampled_from([" ", "\n", "$", "'", '"', "\\", "a", "#", ";", "|", "("]))
    if kind == 11:
        return draw(st.sampled_from(["*", "?", "[ab]", "{a,b}", "{1..2}", "{}", "{a}", "~/x", "a=~"]))
    if kind == 12:
        return draw(st.sampled_from(["<(id)", ">(id)", "$(<x.txt)", "$( (id) )", "$((id))"]))
    if kind == 13:
        return draw(st.sampled_from(["#", "a#b", "#c", "\r", "\t", " "]))
    return draw(st.sampled_from(PROGRAMS))


def _word(draw: st.DrawFn, depth: int) -> str:
    n = draw(st.integers(min_value=1, max_value=3))
    return "".join(_fragment(draw, depth) for _ in range(n))


def _simple(draw: st.DrawFn, depth: int) -> str:
    out: list[str] = []
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        out.append(draw(st.sampled_from(["x=1", "x='a b'", "x=$(id)", "x=ls"])))
    out.append(draw(st.sampled_from(PROGRAMS)) if draw(st.booleans()) else _word(draw, depth))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        out.append(_word(draw, depth))
    if draw(st.integers(min_value=0, max_value=5)) == 0:
        out.append(draw(st.sampled_from(_REDIRECTS)))
    return " ".join(out)


def _command(draw: st.DrawFn, depth: int) -> str:
    kind = draw(st.integers(min_value=0, max_value=14))
    if kind == 0 and depth < 2:
        return "( " + _program(draw, depth + 1) + " )"
    if kind == 1 and depth < 2:
        return "{ " + _program(draw, depth + 1) + "; }"
    if kind == 2 and depth < 2:
        return "if " + _simple(draw, depth) + "; then " + _program(draw, depth + 1) + "; fi"
    if kind == 3 and depth < 2:
        return "for v in a b; do " + _simple(draw, depth) + " $v; done"
    if kind == 4:
        delim = draw(st.sampled_from(["E", "'E'", '"E"', "\\E", "E\\\n"]))
        dash = draw(st.sampled_from(["<<", "<<-"]))
        body = "".join(draw(st.lists(st.sampled_from(_DQ_PIECES + ["\n", "E", "\tE"]), max_size=4)))
        return f"{_simple(draw, depth)} {dash}{delim}\n{body}\nE"
    if kind == 5:
        return "[[ " + _word(draw, depth) + " == " + _word(draw, depth) + " ]]"
    if kind == 6:
        return "! " + _simple(draw, depth)
    if kind == 7:
        return _simple(draw, depth) + " # " + _word(draw, depth)
    return _simple(draw, depth)


def _program(draw: st.DrawFn, depth: int) -> str:
    n = draw(st.integers(min_value=1, max_value=3 if depth else 4))
    out = [_command(draw, depth)]
    for _ in range(n - 1):
        out.append(draw(st.sampled_from(_OPERATORS)))
        out.append(_command(draw, depth))
    return "".join(out)


@st.composite
def shell_text(draw: st.DrawFn) -> str:
    """A command line from the grammar above, then mutated: line
    continuations and carriage returns put at arbitrary offsets (bash removes
    a backslash-newline before it reads anything, except inside single
    quotes, `$'...'`, comments and quoted here-document bodies)."""
    text = _program(draw, 0)
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:at] + draw(st.sampled_from(["\\\n", "\\\n", "\r", "\\", "'", '"'])) + text[at:]
    return text
