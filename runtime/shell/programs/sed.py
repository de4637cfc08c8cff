"""sed: the script language, read the way GNU sed reads it."""

from __future__ import annotations

from collections.abc import Sequence

from charter.runtime.shell.options import expand_long, long_given, scan, short_given
from charter.runtime.shell.programs.base import Checked, one

__all__ = ["sed"]


# sed: only scripts made of commands that print, move between lines or
# transform the pattern space are read-only. GNU sed's `e` (execute), `w`/`W`
# (write), `r`/`R` (read another file) and the `e`/`w` flags of `s` are not.
_SED_PLAIN = set("pPlnNdDqQgGhHxz=F{}!")
_SED_TEXT = set("aic")  # append/insert/change: the rest of the line is text


def _sed_script_problem(script: str) -> str | None:
    """None when ``script`` only uses read-only sed commands; otherwise why not."""
    i = 0
    n = len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        # an address: line numbers, $, /regex/, \cREGEXc, first~step, ranges
        if c.isdigit() or c in "$,~+":
            i += 1
            continue
        if c == "/" or c == "\\":
            delim = "/"
            if c == "\\":
                if i + 1 >= n:
                    return "the script ends inside an address"
                delim = script[i + 1]
                i += 1
            j = i + 1
            while j < n and script[j] != delim:
                j += 2 if script[j] == "\\" else 1
            if j >= n:
                return "an address is not terminated"
            i = j + 1
            while i < n and script[i] in "IM":
                i += 1
            continue
        if c in _SED_PLAIN:
            i += 1
            continue
        if c in _SED_TEXT:
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "bt" or c == "T" or c == ":":
            # a branch or label: the label runs to `;` or the end of the line
            j = i + 1
            while j < n and script[j] not in ";\n":
                j += 1
            i = j
            continue
        if c in "sy":
            if i + 1 >= n:
                return f"the {c} command is not terminated"
            delim = script[i + 1]
            if delim in "\n\\":
                return f"the {c} command uses an unsupported delimiter"
            j = i + 2
            for _ in range(2):
                while j < n and script[j] != delim:
                    j += 2 if script[j] == "\\" else 1
                if j >= n:
                    return f"the {c} command is not terminated"
                j += 1
            if c == "s":
                while j < n and script[j] not in ";\n}":
                    f = script[j]
                    if f == "e":
                        return "the s command's e flag executes the pattern space as a command"
                    if f in "wW":
                        return "the s command's w flag writes to a file"
                    if not (f.isdigit() or f in "gpiImM "):
                        return f"unknown s flag {f!r}"
                    j += 1
            i = j
            continue
        if c == "e":
            return "the e command executes a shell command"
        if c in "wW":
            return "the w command writes to a file"
        if c in "rR":
            return "the r command reads another file into the output"
        if c == "v":
            i += 1
            continue
        return f"sed command {c!r} is not known to be read-only"
    return None


# GNU sed's long options, to read their abbreviations (`--e=SCRIPT`, `--expr SCRIPT`).
_SED_LONG = (
    "binary",
    "debug",
    "expression",
    "file",
    "follow-symlinks",
    "help",
    "in-place",
    "line-length",
    "null-data",
    "zero-terminated",
    "posix",
    "quiet",
    "silent",
    "regexp-extended",
    "sandbox",
    "separate",
    "unbuffered",
    "version",
)


def sed(args: Sequence[str]) -> Checked:
    args = expand_long(args, _SED_LONG)
    s = scan(args, "efl", ("expression", "file", "line-length"), permute=True)
    bad = short_given(s, "i") or long_given(s, ("in-place",))
    if bad is not None:
        return one(
            "in-place-edit",
            bad.index,
            "sed -i rewrites the files it reads; print the result instead of editing "
            "in place to run unprompted",
        )
    bad = short_given(s, "f") or long_given(s, ("file",))
    if bad is not None:
        return one(
            "exec-option", bad.index, "sed -f reads its script from a file Charter cannot see"
        )
    scripts: list[tuple[int, str]] = []
    for o in s.opts:
        if o.name in ("-e", "--expression") or (
            o.name.startswith("--") and "expression".startswith(o.name[2:]) and len(o.name) > 3
        ):
            idx = o.index if args[o.index] != o.name else o.index + 1
            scripts.append((idx, o.value or ""))
    text: set[int] = {i for i, _ in scripts}
    if not scripts:
        if not s.operands:
            return one("sed-script", -1, "sed without a script")
        first = s.operands[0]
        scripts.append((first, args[first]))
        text.add(first)
    for idx, script in scripts:
        problem = _sed_script_problem(script)
        if problem is not None:
            rule = (
                "exec-option"
                if "execut" in problem
                else ("embedded-write" if "writes" in problem else "sed-script")
            )
            return one(rule, idx, f"sed: {problem}; use a print-only script to run unprompted")
    return Checked((), frozenset(text))
