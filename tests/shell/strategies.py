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
