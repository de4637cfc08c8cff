"""What the check verbs share: one call or a batch of JSON lines, and one
exit-code map.

``charter check``, ``check-path``, ``check-shell`` and ``check-url`` each
judge one operand given on the command line (a tool call, a path, a shell
command, a URL) or, with ``--jsonl``, one JSON object a line on stdin, each
answered by one JSON line on stdout, in order, with the same fields whatever
the verb:

``id``
    the line's own ``id``, echoed (null when it had none or was unreadable);
``decision``
    the verdict (``allow``, ``ask``, ``deny``; ``check-url`` also answers
    ``needs-dns``);
``rule``
    the stable key of what decided;
``reason``
    the explanation, in words;

plus what a verb adds (``check``: ``gate``, ``provenance``...;
``check-url``: ``normalized``). A line that cannot be read (not JSON, not an
object, a field of the wrong type, text that is not Unicode) is answered
``deny`` with rule ``malformed-request``: never skipped, so answers stay in
step with the input, and never read as allowed.

Exit codes are the decision vocabulary's
(:data:`charter.runtime.plan.vocabulary.EXIT_CODES`): 0 allow, 1 deny, 3 ask,
where ``check-url``'s ``needs-dns`` counts as an ask (something other than
the literal URL must decide) and anything unknown as a deny. A batch exits
with its most restrictive answer's code, and 2 when any line was malformed;
a usage error is 2.

Like every helper of the verbs that run without the compiler, this module
imports only the standard library at load time.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from charter.compiler.cli._options import add_format

if TYPE_CHECKING:
    from charter.runtime.plan.vocabulary import Permission

__all__ = [
    "BadLine",
    "add_batch_options",
    "answer_lines",
    "exit_code",
    "one_or_batch",
    "operand_problem",
    "permission_of",
    "text_field",
]

# check-url's answer when the literal host cannot decide: for the exit code,
# a person (or a resolver) must, as for an ask.
_AS_PERMISSION = {"needs-dns": "ask"}


class BadLine(ValueError):
    """A line that cannot be decided; the message says why."""

    def __init__(self, message: str, ident: Any = None) -> None:
        super().__init__(message)
        self.ident = ident


def permission_of(decision: Any) -> Permission:
    """The vocabulary's word for a verb's decision: needs-dns is an ask, and
    anything the vocabulary does not know is a deny (fail closed)."""
    from charter.runtime.plan.vocabulary import PERMISSIONS

    word = _AS_PERMISSION.get(str(decision), str(decision))
    return next((p for p in PERMISSIONS if p == word), "deny")


def exit_code(decision: str) -> int:
    """The exit code of one answer."""
    from charter.runtime.plan.vocabulary import EXIT_CODES

    return EXIT_CODES[permission_of(decision)]


def add_batch_options(p: argparse.ArgumentParser, lines: str) -> None:
    """``--format`` for one answer and ``--jsonl`` for a batch; ``lines`` says
    what the batch's lines hold and what each answer holds."""
    add_format(p)
    p.add_argument("--jsonl", action="store_true", help=lines)


def operand_problem(verb: str, value: str | None, jsonl: bool, *, operand: str, items: str) -> bool:
    """Report, and say whether, the command line gives the operand and
    ``--jsonl`` both or neither: one call names its ``operand`` (TOOL, PATH,
    CMD, URL), a batch reads ``items`` from stdin."""
    if jsonl and value is not None:
        print(
            f"charter {verb}: --jsonl reads {items} from stdin; give no {operand}", file=sys.stderr
        )
        return True
    if not jsonl and value is None:
        print(f"charter {verb}: give a {operand} (or use --jsonl)", file=sys.stderr)
        return True
    return False


def one_or_batch(
    value: str | None,
    jsonl: bool,
    one: Callable[[str], int],
    answer: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    malformed: Mapping[str, Any] | None = None,
) -> int:
    """Judge the one operand (``one`` prints its answer and returns the exit
    code) or, with ``jsonl``, every line of stdin (see :func:`answer_lines`).
    The command line is checked first (:func:`operand_problem`)."""
    if jsonl:
        return answer_lines(sys.stdin, answer, sys.stdout, malformed=malformed)
    assert value is not None
    return one(value)


def text_field(obj: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    """``obj[key]`` when it is a string (or absent and not required)."""
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise BadLine(f"{key!r} must be a string", obj.get("id"))
    return value


def _readable(obj: Any) -> None:
    # A lone surrogate ("\ud800") is no Unicode text: nothing can decide on
    # it, and no UTF-8 output could echo it.
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        ident = obj.get("id") if isinstance(obj, dict) else None
        raise BadLine("the line holds a lone surrogate, which is not text", ident) from None


def answer_lines(
    lines: IO[str],
    answer: Callable[[dict[str, Any]], dict[str, Any]],
    out: IO[str],
    *,
    malformed: Mapping[str, Any] | None = None,
) -> int:
    """Answer every line of ``lines`` with ``answer(obj)`` (which returns the
    verb's fields, without ``id``, or raises :class:`BadLine`); write each
    answer to ``out``; return the exit code described above. ``malformed``
    adds fields to the answer for a bad line (``check``'s ``gate``)."""
    from charter.runtime import jsonbound
    from charter.runtime.plan.vocabulary import stricter

    worst: Permission = "allow"
    bad = False
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        ident: Any = None
        try:
            try:
                obj = jsonbound.loads(raw)
            except (ValueError, RecursionError) as exc:
                detail = (
                    exc.msg if isinstance(exc, json.JSONDecodeError)
                    else str(exc) if isinstance(exc, jsonbound.RepeatedKey)
                    else "nested too deeply"
                )  # fmt: skip
                raise BadLine(f"not JSON ({detail})") from None
            if not isinstance(obj, dict):
                raise BadLine("not a JSON object")
            _readable(obj)
            ident = obj.get("id")
            row = {"id": ident, **answer(obj)}
        except BadLine as exc:
            bad = True
            row = {
                "id": exc.ident if exc.ident is not None else ident,
                "decision": "deny",
                "rule": "malformed-request",
                "reason": f"line {number}: {exc}",
                **(malformed or {}),
            }
        try:
            line = json.dumps(row, ensure_ascii=False)
            line.encode("utf-8")
        except UnicodeEncodeError:
            line = json.dumps(row)  # JSON escapes carry what UTF-8 cannot (an echoed id)
        out.write(line + "\n")
        out.flush()
        worst = stricter(worst, permission_of(row.get("decision")))
    return 2 if bad else exit_code(worst)
