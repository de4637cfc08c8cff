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
from typing import Literal, NamedTuple

__all__ = [
    "Given",
    "Kind",
    "Opt",
    "Read",
    "Scanned",
    "Spec",
    "expand_long",
    "long_given",
    "read_args",
    "scan",
    "short_given",
]


@dataclass(frozen=True, slots=True)
class Opt:
    """One option as written, its value if it took one, and the argument it came from."""

    name: str  # "-o" or "--output" (as written, possibly abbreviated)
    value: str | None
    index: int  # the argument it was read from


# Records are NamedTuples where they can be (a tenth of a frozen dataclass's
# cost to define at start-up); Opt and Given keep the dataclass because a
# field named ``index`` would shadow tuple.index.
class Scanned(NamedTuple):
    """A command's arguments split into options and operand indexes."""

    opts: tuple[Opt, ...]
    # indexes of non-option arguments (a range when they run to the end, so
    # a chain of wrappers, each scanning the rest, costs no list per level)
    operands: Sequence[int]


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
            if not operands:
                return Scanned(tuple(opts), range(i + 1, n))
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
            if not permute and not operands:
                return Scanned(tuple(opts), range(i, n))
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


# --- a program's whole option grammar ---------------------------------------------------------

Kind = Literal["flag", "text", "path"]


class Spec(NamedTuple):
    """How one program reads its options (getopt_long unless said otherwise).

    Path-valued options must be listed completely: a value the guard does not
    know is a path is never resolved. Text-valued ones only where certain: an
    unlisted one leaves its value to be checked as a path, which at worst asks
    more often.
    """

    text: str = ""  # short options that take a text value
    path: str = ""  # short options that take a path value
    long_text: tuple[str, ...] = ()  # long options that take a text value
    long_path: tuple[str, ...] = ()  # long options that take a path value
    long_optional: tuple[str, ...] = ()  # --opt[=VALUE]: a value only when attached
    long_flags: tuple[str, ...] = ()  # the other long names, to read abbreviations
    abbreviations: bool = True
    permute: bool = True
    # How the value of an unknown `--opt=value` is judged: as a path (at
    # worst a false ask), or as text where every path option is listed (git).
    unknown_values: Kind = "path"


@dataclass(frozen=True, slots=True)
class Given:
    """One option as the program reads it."""

    name: str  # "-f", or the full long name ("--file") when the spelling resolves
    kind: Kind
    value: str | None
    index: int  # the argument the option is in
    value_index: int | None  # the argument holding the value (the same one when attached)


class Read(NamedTuple):
    """A command's arguments read with its :class:`Spec`."""

    opts: tuple[Given, ...]
    operands: tuple[int, ...]
    option_words: frozenset[int]  # option words and separate option values

    def given(self, *names: str) -> Given | None:
        """The first option named one of ``names`` ("-c", "--check")."""
        for o in self.opts:
            if o.name in names:
                return o
        return None

    def path_values(self) -> tuple[tuple[int, str], ...]:
        """Every path an option names, with the argument it is written in."""
        return tuple(
            (o.value_index, o.value)
            for o in self.opts
            if o.kind == "path" and o.value is not None and o.value_index is not None
        )


def _long_kind(name: str, spec: Spec) -> tuple[str, Kind | Literal["optional"]] | None:
    tables: tuple[tuple[tuple[str, ...], Kind | Literal["optional"]], ...] = (
        (spec.long_path, "path"),
        (spec.long_text, "text"),
        (spec.long_optional, "optional"),
        (spec.long_flags, "flag"),
    )
    for names, kind in tables:
        if name in names:
            return name, kind
    if not spec.abbreviations or not name:
        return None
    found = [(n, kind) for names, kind in tables for n in names if n.startswith(name)]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    # Ambiguous: the program refuses it, but read it the strictest way in
    # case a version of the program has fewer names (a path beats text).
    for want in ("path", "text", "optional"):
        for n, kind in found:
            if kind == want:
                return n, kind
    return found[0]


def read_args(args: Sequence[str], spec: Spec) -> Read:
    """Read ``args`` the way a program with ``spec`` does: bundled short
    flags, attached and separate values, ``--opt=value``, unambiguous long
    abbreviations, ``--``, and (unless ``spec.permute`` is off) options after
    operands."""
    opts: list[Given] = []
    operands: list[int] = []
    words: set[int] = set()
    n = len(args)
    i = 0
    while i < n:
        a = args[i]
        if a == "--":
            words.add(i)
            operands.extend(range(i + 1, n))
            break
        if a.startswith("--") and len(a) > 2:
            words.add(i)
            name, eq, val = a[2:].partition("=")
            hit = _long_kind(name, spec)
            full, kind = (name, "unknown") if hit is None else hit
            if eq:
                # an unknown option's value is judged as a path: at worst a false ask
                k: Kind = (
                    spec.unknown_values
                    if kind == "unknown"
                    else ("text" if kind in ("text", "flag") else "path")
                )
                opts.append(Given("--" + full, k, val, i, i))
            elif kind in ("text", "path") and i + 1 < n:
                valued: Kind = "text" if kind == "text" else "path"
                opts.append(Given("--" + full, valued, args[i + 1], i, i + 1))
                words.add(i + 1)
                i += 1
            else:
                opts.append(Given("--" + full, "flag", None, i, None))
        elif a.startswith("-") and len(a) > 1:
            words.add(i)
            j = 1
            while j < len(a):
                ch = a[j]
                if ch in spec.path or ch in spec.text:
                    kind2: Kind = "path" if ch in spec.path else "text"
                    val = a[j + 1 :]
                    if val:
                        opts.append(Given("-" + ch, kind2, val, i, i))
                    elif i + 1 < n:
                        opts.append(Given("-" + ch, kind2, args[i + 1], i, i + 1))
                        words.add(i + 1)
                        i += 1
                    else:
                        opts.append(Given("-" + ch, kind2, None, i, None))
                    break
                opts.append(Given("-" + ch, "flag", None, i, None))
                j += 1
        else:
            operands.append(i)
            if not spec.permute:
                operands.extend(range(i + 1, n))
                break
        i += 1
    return Read(tuple(opts), tuple(operands), frozenset(words))
