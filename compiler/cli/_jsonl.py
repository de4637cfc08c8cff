"""``--jsonl``: the batch form shared by the check verbs.

``charter check``, ``check-path``, ``check-shell`` and ``check-url`` read the
same way with ``--jsonl``: one JSON object a line on stdin, each answered by
one JSON line on stdout, in order, with the same fields whatever the verb:

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

The exit code is that of the most restrictive answer, as for a single call:
1 when any line was denied, else 3 when any asks (or needs DNS), else 0; and
2 when any line was malformed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import IO, Any

__all__ = ["BadLine", "answer_lines", "text_field"]

_EXIT = {"allow": 0, "ask": 3, "needs-dns": 3, "deny": 1}
_RANK = {0: 0, 3: 1, 1: 2}  # exit code -> how restrictive, for the worst of many


class BadLine(ValueError):
    """A line that cannot be decided; the message says why."""

    def __init__(self, message: str, ident: Any = None) -> None:
        super().__init__(message)
        self.ident = ident


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
    worst = 0
    bad = False
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        ident: Any = None
        try:
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
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
        code = _EXIT.get(str(row.get("decision")), 1)
        worst = max(worst, code, key=_RANK.__getitem__)
    return 2 if bad else worst
