"""The shell lexer: command text to grammar tokens.

The lexer is hand-written because shell lexing is contextual: inside
``"..."`` a ``$(`` re-enters command syntax, ``#`` opens a comment only at
the start of a word, ``$((`` is arithmetic only if its parentheses balance,
and a heredoc's body is the text after the next newline. Each rule below
says what bash does; where bash is subtler than this lexer, the lexer
refuses (a :class:`~.tree.ShellSyntaxError`), and the classifier turns every
refusal into "ask". Line continuations are removed first, exactly where bash
removes them (see :mod:`.splice`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from charter.runtime.shell.splice import Spliced, splice
from charter.runtime.shell.tree import HereDoc, ShellSyntaxError, ShellTooLong, Tok
from charter.runtime.shell.words import decode_ansi_c

__all__ = ["REDIRECT_OPERATOR", "Lexed", "expansions_in_heredoc", "lex", "tokenize"]


# --- the lexer ------------------------------------------------------------------------------

# An unquoted literal run: anything but blanks, quotes, `\`, `$`, backtick and
# the metacharacters | & ; ( ) < >. A backslash escapes any one character.
# Only space, tab and newline are blanks to bash; `\r` and Unicode spaces are
# ordinary word characters, so they are word characters here too.
_LIT = re.compile(r"(?:[^ \t\n'\"\\$`|&;()<>]|\\[\s\S])+")
_BLANKS = re.compile(r"(?:[ \t]|\\\n)+")
_SQ = re.compile(r"'[^']*'")
_ANSIC = re.compile(r"\$'(?:[^'\\]|\\[\s\S])*'")
_DQ_TEXT = re.compile(r"(?:[^\"\\$`]|\\[\s\S]|\$(?![A-Za-z_0-9@*#?$!{(\[-]))+")
_PARAM = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])")
REDIRECT_OPERATOR = re.compile(r"([0-9]+)?(&>>|&>|>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)")
_OPERATOR_KIND = {"&&": "ANDIF", "||": "ORIF", "|&": "PIPE", "|": "PIPE", ";": "SEMI", "&": "AMP"}
# One match per token in command syntax. Alternatives are tried in order:
# blanks; process substitution; a redirect with its optional fd number (so
# `2>x` is fd 2, while `22abc>x` fails here and becomes the word `22abc`);
# control operators (`;;` and `;&` only occur in `case`, which is refused);
# and a literal run. Quotes, `$`, backticks, parentheses, newlines and `#`
# are handled by hand because their meaning depends on context.
_NORMAL = re.compile(
    r"(?P<B>(?:[ \t]|\\\n)+)"
    r"|(?P<P>[<>]\()"
    r"|(?P<R>[0-9]*(?P<rop>&>>|&>|>>|>\||>&|>|<<<|<<-|<<|<>|<&|<))"
    r"|(?P<O>;;|;&|&&|\|\||\|&|\||;|&)"
    r"|(?P<L>(?:[^ \t\n'\"\\$`|&;()<>]|\\[\s\S])+)"
)
# Tokens that end inside a word: digits right after one are not a descriptor.
_WORD_PART_TOKENS = frozenset(
    {
        "SQ",
        "ANSIC",
        "DQ_CLOSE",
        "PARAM",
        "PARAM_BRACE",
        "ARITH",
        "LEGACY_ARITH",
        "BACKTICK",
        "DOLLAR",
    }
)
# Where `#` may start a comment: at the start, or after a blank or operator.
_COMMENT_AFTER = frozenset(" \t\n;&|()<>")


# Mutable output nothing compares by value: identity equality.
@dataclass(slots=True, eq=False)
class Lexed:
    """The lexer's output: tokens, here-document bodies and comment spans."""

    tokens: list[Tok]
    heredocs: dict[int, HereDoc]  # keyed by the redirect token's start
    comments: list[tuple[int, int]]
    # the text the tokens index: the input with its line continuations removed
    text: str = ""
    spliced: Spliced | None = None
    # literal values taken from the original text (a quote that held a
    # backslash-newline, which is not a continuation there), by token start
    values: dict[int, str] = field(default_factory=dict)


def _skip_quoted_dq(text: str, i: int) -> int:
    """``text[i]`` is the ``"`` opening a string; return the index after its
    closing quote, stepping over substitutions that hold their own quotes."""
    n = len(text)
    i += 1
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif c == "`":
            i = _skip_backtick(text, i)
        elif c == "$" and text.startswith("$(", i):
            i = _skip_parens(text, i + 1)
        elif c == "$" and text.startswith("${", i):
            i = _skip_braces(text, i + 1)
        else:
            i += 1
    raise ShellSyntaxError(n, "unterminated double quote")


def _skip_backtick(text: str, i: int) -> int:
    n = len(text)
    j = i + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
        elif c == "`":
            return j + 1
        else:
            j += 1
    raise ShellSyntaxError(i, "unterminated backtick substitution")


def _skip_balanced(text: str, i: int, opener: str, closer: str, unclosed: str) -> int:
    """``text[i]`` is ``opener``; return the index after its matching ``closer``.

    Quotes, backticks and escapes are stepped over so a bracket inside them
    does not count. Inside ``${...}`` a nested ``$(`` is skipped whole, so a
    ``}`` inside a command substitution does not close the expansion; inside
    parentheses the depth count already covers ``$(`` without recursing.

    Every opener the scan passes is matched by the same scan, so the result
    for each is remembered (for the text being lexed): the lexer asks again
    at each nested ``$((`` or ``${``, and without the memo a long run of
    unclosed ones would cost quadratic time.
    """
    memo = _memo(text)
    known = memo.get((opener, i))
    if known is not None:
        if isinstance(known, ShellSyntaxError):
            raise known
        return known
    n = len(text)
    opened: list[int] = []  # positions of the openers not yet closed
    try:
        while i < n:
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == opener:
                if opened:
                    seen = memo.get((opener, i))
                    if isinstance(seen, int):
                        i = seen  # matched before: step over it whole
                        continue
                    if seen is not None:
                        raise seen
                opened.append(i)
            elif c == closer:
                memo[(opener, opened.pop())] = i + 1
                if not opened:
                    return i + 1
            elif c == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise ShellSyntaxError(i, "unterminated single quote")
                i = end
            elif c == '"':
                i = _skip_quoted_dq(text, i)
                continue
            elif c == "`":
                i = _skip_backtick(text, i)
                continue
            elif opener != "(" and c == "$" and text.startswith("$(", i):
                i = _skip_parens(text, i + 1)
                continue
            i += 1
        raise ShellSyntaxError(i, unclosed)
    except ShellSyntaxError as exc:
        # every opener still open fails the same way from where it stands
        for k in opened:
            memo[(opener, k)] = exc
        raise


# The memo of _skip_balanced for the text being lexed (one per thread).
_MEMO = threading.local()


def _memo(text: str) -> dict[tuple[str, int], int | ShellSyntaxError]:
    if getattr(_MEMO, "text", None) is not text:
        _MEMO.text = text
        _MEMO.table = {}
    table: dict[tuple[str, int], int | ShellSyntaxError] = _MEMO.table
    return table


def _skip_parens(text: str, i: int) -> int:
    """``text[i]`` is ``(``; return the index after the matching ``)``."""
    return _skip_balanced(text, i, "(", ")", "unbalanced parenthesis")


def _skip_braces(text: str, i: int) -> int:
    """``text[i]`` is ``{`` of ``${``; return the index after its ``}``."""
    return _skip_balanced(text, i, "{", "}", "unterminated ${...} expansion")


def _arith_end(text: str, i: int) -> int | None:
    """``text[i:]`` starts with ``$((``. Bash reads arithmetic only when the
    parentheses close as ``))``; otherwise it is a command substitution whose
    body starts with a subshell. Return the end of the arithmetic or None."""
    try:
        end = _skip_parens(text, i + 1)
    except ShellSyntaxError:
        return None
    return end if text[end - 2 : end] == "))" else None


def expansions_in_heredoc(body: str) -> list[tuple[str, int, int]]:
    """The expansions bash performs in an unquoted here-document's ``body``,
    as ``(kind, start, end)`` with kind ``cmdsub``, ``backtick`` or
    ``param`` (``${...}`` and ``$((...))``, whose text may hold a command
    substitution). Bash reads such a body as it reads a double-quoted
    string: only ``$``, backquotes and backslashes mean anything, and a line
    break separates nothing. Linear in ``body``; raises
    :class:`ShellSyntaxError` where an expansion is not closed."""
    out: list[tuple[str, int, int]] = []
    n = len(body)
    i = 0
    while i < n:
        c = body[i]
        if c == "\\":
            i += 2
        elif c == "`":
            j = _skip_backtick(body, i)
            out.append(("backtick", i, j))
            i = j
        elif c == "$" and body.startswith("$((", i) and (arith := _arith_end(body, i)):
            out.append(("param", i, arith))
            i = arith
        elif c == "$" and body.startswith("$(", i):
            j = _skip_parens(body, i + 1)
            out.append(("cmdsub", i, j))
            i = j
        elif c == "$" and body.startswith("${", i):
            j = _skip_braces(body, i + 1)
            out.append(("param", i, j))
            i = j
        else:
            i += 1
    return out


def tokenize(raw: str) -> Lexed:
    """Split ``raw`` into grammar tokens (see ``bash.lark``), after removing
    its line continuations as bash does (see :mod:`.splice`); the tokens
    index the result's ``text``."""
    sp = splice(raw)
    return lex(raw if sp is None else sp.text, sp)


def lex(text: str, sp: Spliced | None, max_tokens: int = -1) -> Lexed:
    if max_tokens < 0:
        max_tokens = len(text) + 1  # a token holds at least one character
    values: dict[int, str] = {}
    tokens: list[Tok] = []
    heredocs: dict[int, HereDoc] = {}
    comments: list[tuple[int, int]] = []
    pending: list[tuple[int, str, bool, bool]] = []  # (redirect start, delimiter, quoted, strip)
    # A stack of modes: "n" (command syntax) or "d" (inside double quotes).
    # Each "n" frame opened by `$(`, `<(` or `>(` counts its own parentheses so
    # the `)` that closes it returns to the enclosing mode.
    modes: list[str] = ["n"]
    depths: list[int] = [0]
    n = len(text)
    i = 0
    expect_delim: tuple[int, bool] | None = None  # (redirect start, strip tabs)
    sub_close = -1  # the offset just after the `)` that closed a substitution
    # where a line starts although no newline precedes it in the spliced
    # text: after a comment's backslash-newline (bash ended the line there)
    line_start = 0
    append = tokens.append

    def tok(kind: str, start: int, end: int) -> None:
        append((kind, start, end))

    while i < n:
        if len(tokens) > max_tokens:
            raise ShellTooLong(i, f"more than {max_tokens} tokens")
        mode = modes[-1]
        c = text[i]
        if mode == "d":
            if c == '"':
                tok("DQ_CLOSE", i, i + 1)
                modes.pop()
                depths.pop()
                i += 1
                continue
            if c == "$":
                j = _dollar(text, i, tok, modes, depths, in_dq=True)
                if j:
                    i = j
                    continue
            elif c == "`":
                j = _skip_backtick(text, i)
                tok("BACKTICK", i, j)
                i = j
                continue
            m = _DQ_TEXT.match(text, i)
            if m is None:
                raise ShellSyntaxError(i, "unterminated double quote")
            tok("DQ_TEXT", i, m.end())
            i = m.end()
            continue

        # command syntax
        if c == "#" and (i == line_start or (text[i - 1] in _COMMENT_AFTER and i != sub_close)):
            end = text.find("\n", i)
            end = n if end < 0 else end
            cut = None if sp is None else sp.cut_between(i, end)
            if cut is not None:
                # a comment ends at the first newline of the original, even
                # one that follows a backslash: bash reads comments verbatim
                comments.append((i, cut))
                tok("NEWLINE", cut, cut)
                i = cut
                if pending:
                    i = _read_heredocs(text, i, pending, heredocs, sp)
                    pending.clear()
                # the next line starts here: a `#` right after is a comment
                # too, though the spliced text shows the first comment's end
                line_start = i
                continue
            comments.append((i, end))
            i = end
            continue
        if expect_delim is not None and c not in " \t\n|&;()<>":
            start, strip = expect_delim
            expect_delim = None
            raw = text[i : _word_end(text, i)]
            quoted = any(q in raw for q in "'\"\\")
            pending.append((start, _unquote_delimiter(raw), quoted, strip))
            # the delimiter is still lexed below as an ordinary word
        m = _NORMAL.match(text, i)
        if m is not None:
            group = m.lastgroup
            j = m.end()
            if group == "B":
                i = j
            elif group == "L":
                append(("LIT", i, j))
                i = j
            elif group == "R":
                k = i
                if (
                    text[i].isdigit()
                    and tokens
                    and tokens[-1][2] == i
                    and (
                        tokens[-1][0] in _WORD_PART_TOKENS
                        or (tokens[-1][0] == "RPAREN" and i == sub_close)
                    )
                ):
                    # digits glued to a quote or expansion (`""2>x`) are part
                    # of that word, not a descriptor number
                    k = i + len(m.group()) - len(m.group("rop"))
                    append(("LIT", i, k))
                append(("REDIR", k, j))
                i = k
                if m.group("rop") in ("<<", "<<-"):
                    expect_delim = (i, m.group("rop") == "<<-")
                i = j
            elif group == "O":
                kind = _OPERATOR_KIND.get(m.group())
                if kind is None:
                    raise ShellSyntaxError(i, "case-statement separators are not supported")
                append((kind, i, j))
                i = j
            else:  # "P": `<(` or `>(`
                append(("PROCSUB_OPEN", i, j))
                modes.append("n")
                depths.append(0)
                i = j
            continue
        if c == "\n":
            tok("NEWLINE", i, i + 1)
            i += 1
            if pending:
                i = _read_heredocs(text, i, pending, heredocs, sp)
                pending.clear()
            continue
        if c == "$":
            j = _dollar(text, i, tok, modes, depths, in_dq=False)
            if j:
                if sp is not None and tokens[-1][0] == "ANSIC" and sp.cut_between(i + 1, j - 1):
                    # inside $'...' a backslash-newline is kept (and decoded)
                    body = sp.raw[sp.raw_at(i + 1) + 1 : sp.raw_at(j - 1)]
                    values[i] = decode_ansi_c(body)
                i = j
                continue
            tok("DOLLAR", i, i + 1)
            i += 1
            continue
        if c == "'":
            m = _SQ.match(text, i)
            if m is None:
                raise ShellSyntaxError(i, "unterminated single quote")
            tok("SQ", i, m.end())
            if sp is not None and sp.cut_between(i, m.end() - 1) is not None:
                # inside single quotes a backslash-newline is two characters
                values[i] = sp.raw[sp.raw_at(i) + 1 : sp.raw_at(m.end() - 1)]
            i = m.end()
            continue
        if c == '"':
            tok("DQ_OPEN", i, i + 1)
            modes.append("d")
            depths.append(0)
            i += 1
            continue
        if c == "`":
            j = _skip_backtick(text, i)
            tok("BACKTICK", i, j)
            i = j
            continue
        if c == "(":
            depths[-1] += 1
            tok("LPAREN", i, i + 1)
            i += 1
            continue
        if c == ")":
            tok("RPAREN", i, i + 1)
            i += 1
            if depths[-1] == 0:
                if len(modes) > 1:
                    modes.pop()
                    depths.pop()
                    # `$(...)` and `<(...)` are inside a word, which goes on:
                    # a `#` right after them is a character, not a comment
                    sub_close = i
                # else a stray `)`: the parser reports it
            else:
                depths[-1] -= 1
            continue
        raise ShellSyntaxError(i, "a lone backslash at the end of the command")
    if len(modes) > 1:
        what = "double quote" if modes[-1] == "d" else "parenthesis"
        raise ShellSyntaxError(n, f"unterminated {what}")
    if expect_delim is not None:
        raise ShellSyntaxError(n, "a heredoc without a delimiter")
    if pending:
        # bash accepts a heredoc whose body never arrives; so does Charter, as
        # an empty body (the command is never allowed automatically anyway).
        for start, delim, quoted, _strip in pending:
            heredocs[start] = HereDoc(delim, quoted, "", False)
    return Lexed(tokens, heredocs, comments, text, sp, values)


def _word_end(text: str, i: int) -> int:
    """The end of the raw shell word starting at ``i`` (quotes included)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t\n|&;()<>":
            return i
        if c == "\\":
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError(i, "unterminated single quote")
            i = end + 1
        elif c == '"':
            i = _skip_quoted_dq(text, i)
        else:
            i += 1
    return n


def _unquote_delimiter(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
        elif c in "'\"":
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _read_heredocs(
    text: str,
    i: int,
    pending: list[tuple[int, str, bool, bool]],
    heredocs: dict[int, HereDoc],
    sp: Spliced | None,
) -> int:
    """Read the bodies of the pending here-documents from ``i``, the start
    of the line after their command; return where the command text resumes.
    An unquoted body is read like the rest of the text, continuations
    removed (so a delimiter can be joined from two lines, as bash joins
    it); a quoted one verbatim from the original text."""
    for start, delim, quoted, strip in pending:
        if quoted and sp is not None:
            raw_end = _read_heredoc(sp.raw, sp.raw_at(i), start, delim, quoted, strip, heredocs)
            i = sp.spliced_at(raw_end)
        else:
            i = _read_heredoc(text, i, start, delim, quoted, strip, heredocs)
    return i


def _read_heredoc(
    text: str,
    i: int,
    start: int,
    delim: str,
    quoted: bool,
    strip: bool,
    heredocs: dict[int, HereDoc],
) -> int:
    n = len(text)
    body: list[str] = []
    terminated = False
    while i < n:
        end = text.find("\n", i)
        line_end = n if end < 0 else end
        line = text[i:line_end]
        i = n if end < 0 else end + 1
        check = line.lstrip("\t") if strip else line
        if check == delim:
            terminated = True
            break
        body.append(line)
    heredocs[start] = HereDoc(delim, quoted, "\n".join(body), terminated)
    return i


def _dollar(
    text: str,
    i: int,
    tok: Any,
    modes: list[str],
    depths: list[int],
    *,
    in_dq: bool,
) -> int:
    """Lex the ``$`` construct at ``i``; return the index after it, or 0 when
    the ``$`` is literal there."""
    nxt = text[i + 1 : i + 2]
    if nxt == "(":
        if text.startswith("$((", i):
            end = _arith_end(text, i)
            if end is not None:
                tok("ARITH", i, end)
                return end
        tok("CMDSUB_OPEN", i, i + 2)
        modes.append("n")
        depths.append(0)
        return i + 2
    if nxt == "{":
        end = _skip_braces(text, i + 1)
        tok("PARAM_BRACE", i, end)
        return end
    if nxt == "[":
        end = text.find("]", i)
        if end < 0:
            raise ShellSyntaxError(i, "unterminated $[...] expansion")
        tok("LEGACY_ARITH", i, end + 1)
        return end + 1
    if not in_dq:
        if nxt == "'":
            m = _ANSIC.match(text, i)
            if m is None:
                raise ShellSyntaxError(i, "unterminated $'...' string")
            tok("ANSIC", i, m.end())
            return m.end()
        if nxt == '"':
            # $"..." (locale translation) is a double-quoted string to Charter.
            tok("DQ_OPEN", i, i + 2)
            modes.append("d")
            depths.append(0)
            return i + 2
    m = _PARAM.match(text, i)
    if m is not None:
        tok("PARAM", i, m.end())
        return m.end()
    return 0
