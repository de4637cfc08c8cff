"""Values the agent host normalises before it uses them.

Demiurge reads its YAML files leniently in a few documented places: it lower-
cases and strips risk and approval words (``Deny`` is ``deny``), turns every
item of an MCP server's ``args``, ``env`` and ``headers`` into text
(``8080`` becomes ``"8080"``), strips tool filter patterns, and ignores keys
its models do not forbid (``dependencies.requirements``). A file that relies
on this runs there, so Charter must read it too, but the author should know
that the file says something other than what is used. Each helper here
rewrites the plain data in place, exactly as the host would, and reports a
``normalized-value`` or ``ignored-key`` warning at the value's position. The
strict models then validate what the host actually uses.

Only values whose normalised form is one the strict model accepts are
rewritten; anything else is left alone for validation to report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from charter.compiler.diagnostics import Diagnostic, suggestion
from charter.compiler.rules import diag_at
from charter.compiler.sources.sourcemap import KeyPath, SourceMap

__all__ = ["Normalizer", "host_text"]


def host_text(value: Any) -> str:
    """What the host's ``str(item)`` makes of a value PyYAML built: Python's
    spelling, so ``yes`` gives ``True``, ``~`` gives ``None`` and a date its
    ISO text. Charter's reader builds the same values, so this is exact."""
    return str(value)


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


class Normalizer:
    """Rewrites one file's plain data the way the host does, collecting warnings."""

    def __init__(self, smap: SourceMap) -> None:
        self.smap = smap
        self.diags: list[Diagnostic] = []

    def _warn(self, path: KeyPath, message: str) -> None:
        self.diags.append(
            diag_at(
                "normalized-value",
                message,
                self.smap,
                path,
            )
        )

    def word(self, parent: Any, key: str | int, path: KeyPath, allowed: Iterable[str]) -> None:
        """A risk or approval word: the host strips and lower-cases it."""
        if not isinstance(parent, dict | list):
            return
        try:
            value = parent[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return
        if not isinstance(value, str):
            return
        fixed = value.strip().lower()
        if fixed != value and fixed in set(allowed):
            parent[key] = fixed  # type: ignore[index]
            self._warn(
                path,
                f"'{value}' is read as '{fixed}' (the agent host lower-cases and strips it); "
                f"write '{fixed}'",
            )

    def words_in_map(self, mapping: Any, path: KeyPath, allowed: Iterable[str]) -> None:
        """Every value of a mapping is a risk or approval word."""
        if isinstance(mapping, dict):
            for key in list(mapping):
                self.word(mapping, key, (*path, key), allowed)

    def default_if_null(self, parent: Any, key: str, path: KeyPath, default: str) -> None:
        """``key: null`` where the host falls back to its default (``x or default``)."""
        if isinstance(parent, dict) and key in parent and parent[key] is None:
            parent[key] = default
            self._warn(path, f"null is read as the default '{default}'; leave the key out")

    def text(
        self,
        parent: Any,
        key: str | int,
        path: KeyPath,
        *,
        strip: bool = False,
        keep_null: bool = False,
    ) -> None:
        """A value the host passes through ``str()`` (and maybe ``.strip()``;
        with ``keep_null`` a null stays null, as the host checks for it first)."""
        try:
            value = parent[key]
        except (KeyError, IndexError, TypeError):
            return
        if value is None and keep_null:
            return
        if isinstance(value, dict | list | tuple):
            return  # str() of a structure is never what the author meant
        fixed = host_text(value)
        if strip:
            fixed = fixed.strip()
        if isinstance(value, str) and fixed == value:
            return
        parent[key] = fixed
        self._warn(
            path,
            f"{_shown(value)} is read as the text '{fixed}' (the agent host converts it); "
            f"write '{fixed}' in quotes",
        )

    def texts_in_list(self, items: Any, path: KeyPath) -> None:
        if isinstance(items, list):
            for i in range(len(items)):
                self.text(items, i, (*path, i))

    def texts_in_map(self, mapping: Any, path: KeyPath) -> None:
        if isinstance(mapping, dict):
            for key in list(mapping):
                self.text(mapping, key, (*path, key))

    def empty_if_null(
        self, parent: Any, key: str, path: KeyPath, empty: list[Any] | dict[str, Any]
    ) -> None:
        """``key: null`` where the host reads an empty list or mapping."""
        if isinstance(parent, dict) and key in parent and parent[key] is None:
            parent[key] = empty
            self._warn(path, "null is read as empty; leave the key out")

    def names_to_mapping(self, parent: Any, key: str, path: KeyPath) -> None:
        """A list of capability names where a mapping of grants is expected:
        the host takes the names as grants without options."""
        value = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return
        parent[key] = dict.fromkeys(value)
        self._warn(
            path,
            "a list of capability names is read as grants without options; write them as a "
            "mapping (name: {})",
        )

    def ignore_keys(self, mapping: Any, path: KeyPath, known: Iterable[str], why: str) -> None:
        """Keys the host's model accepts and drops: removed here, with a warning."""
        if not isinstance(mapping, dict):
            return
        keep = set(known)
        for key in [k for k in mapping if k not in keep]:
            del mapping[key]
            where = (*path, key)
            self.diags.append(
                diag_at(
                    "ignored-key",
                    f"'{key}' is ignored: {why}" + suggestion(str(key), keep),
                    self.smap,
                    where,
                    at="key",
                )
            )
