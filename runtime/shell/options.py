"""Reading a program's arguments the way the program itself does.

Every per-program rule in the guard asks questions like "is ``-o`` given?"
or "is ``--pre`` given?". Answering them by looking for the string ``-o``
misses ``-no``, ``-o=x`` and ``-ofile``, and mistakes the value of another
option for a flag. :func:`scan` reads arguments as getopt does: bundled
short flags (``-rf``), attached values (``-ofile``), ``--opt=value``,
separate values for options that take one, ``--`` ending the options, and
(for GNU tools) options after operands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Opt", "Scanned", "expand_long", "long_given", "scan", "short_given"]


@dataclass(frozen=True, slots=True)
class Opt:
    """One option as written, its value if it took one, and the argument it came from."""

    name: str  # "-o" or "--output" (as written, possibly abbreviated)
    value: str | None
    index: int  # the argument it was read from


@dataclass(frozen=True, slots=True)
class Scanned:
    """A command's arguments split into options and operand indexes."""

    opts: tuple[Opt, ...]
    operands: tuple[int, ...]  # indexes of non-option arguments


def scan(
    args: Sequence[str],
    short_with_value: str = "",
    long_with_value: Iterable[str] = (),
    *,
    permute: bool = True,
    long_single_dash: bool = False,
) -> Scanned:
    """Split ``args`` into options and operands.

    ``short_with_value`` lists the short option letters that take a value;
    ``long_with_value`` the long names (without dashes) that take one when it
    is not attached with ``=``. With ``permute`` (GNU behaviour) options may
    follow operands; without it the first operand ends the options.
    """
    long_vals = frozenset(long_with_value)
    opts: list[Opt] = []
    operands: list[int] = []
    n = len(args)
    i = 0
    while i < n:
        a = args[i]
        if a == "--":
            operands.extend(range(i + 1, n))
            break
        if (
            a.startswith("--")
            and len(a) > 2
            or long_single_dash
            and a.startswith("-")
            and len(a) > 2
        ):
            body = a[2:] if a.startswith("--") else a[1:]
            name, eq, val = body.partition("=")
            if eq:
                opts.append(Opt("--" + name, val, i))
            elif name in long_vals and i + 1 < n:
                opts.append(Opt("--" + name, args[i + 1], i))
                i += 1
            else:
                opts.append(Opt("--" + name, None, i))
        elif a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                ch = a[j]
                if ch in short_with_value:
                    val = a[j + 1 :]
                    if not val and i + 1 < n:
                        val = args[i + 1]
                        opts.append(Opt("-" + ch, val, i))
                        i += 1
                    else:
                        opts.append(Opt("-" + ch, val, i))
                    break
                opts.append(Opt("-" + ch, None, i))
                j += 1
        else:
            operands.append(i)
            if not permute:
                operands.extend(range(i + 1, n))
                break
        i += 1
    return Scanned(tuple(opts), tuple(operands))


def short_given(s: Scanned, letters: str) -> Opt | None:
    for o in s.opts:
        if len(o.name) == 2 and o.name[1] in letters:
            return o
    return None


def long_given(
    s: Scanned,
    names: Iterable[str],
    *,
    abbreviations: bool = True,
    exact_options: frozenset[str] = frozenset(),
) -> Opt | None:
    """The first long option that is one of ``names``. With
    ``abbreviations`` (getopt_long, git), an unambiguous prefix counts too
    (``--out`` is ``--output``) unless it is itself one of the program's
    ``exact_options`` (``git diff --text`` is not ``--textconv``)."""
    wanted = tuple(names)
    for o in s.opts:
        if not o.name.startswith("--"):
            continue
        given = o.name[2:]
        for w in wanted:
            if given == w:
                return o
            if abbreviations and given and w.startswith(given) and given not in exact_options:
                return o
    return None


def expand_long(args: Sequence[str], names: Iterable[str]) -> list[str]:
    """``args`` with every unambiguous abbreviation of one of the program's
    long option ``names`` written out (``--expr=x`` becomes
    ``--expression=x``), the way getopt_long reads them, so that :func:`scan`
    sees which options take a value. Ambiguous or unknown names are left as
    they are (the program rejects them). Stops at ``--``."""
    full = tuple(names)
    out = list(args)
    for i, a in enumerate(out):
        if a == "--":
            break
        if not a.startswith("--") or len(a) <= 2:
            continue
        name, eq, val = a[2:].partition("=")
        if name in full:
            continue
        matches = [n for n in full if n.startswith(name)]
        if len(matches) == 1:
            out[i] = "--" + matches[0] + eq + val
    return out
