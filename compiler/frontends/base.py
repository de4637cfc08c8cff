"""Loading one document: read the text, parse it with positions, validate it
into a frozen model, and collect every diagnostic on the way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from charter.compiler.diagnostics import Diagnostic, Severity, Span, format_key_path
from charter.compiler.frontends.validation import _is_union_tag, freeze, thaw, validate_model
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import SourceMap
from charter.compiler.sources.text import read_source

__all__ = [
    "Loaded",
    "load_document",
    "parse_document",
    "parse_mapping",
    "salvage",
    "server_id_from_path",
]

M = TypeVar("M", bound=BaseModel)


# A NamedTuple rather than a frozen dataclass: defined at every start-up,
# it costs a tenth as much to define.
class Loaded(NamedTuple, Generic[M]):
    """One loaded file. ``model`` is None when the file could not be read or
    did not validate; ``diagnostics`` then says why."""

    display: str
    model: M | None
    smap: SourceMap
    diagnostics: tuple[Diagnostic, ...] = ()
    raw: Any = None  # the plain data, for checks that need to tell "declared" from "defaulted"

    @property
    def ok(self) -> bool:
        return self.model is not None


def parse_document(
    path: Path, display: str, kind: Literal["yaml", "toml"]
) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Read and parse without validating. Data is None after a fatal problem."""
    src, diags = read_source(path, display)
    if src is None:
        return None, SourceMap(display), diags
    # Each reader is imported on first use: a blueprint-only project never
    # loads the YAML stack, and an agent-core-only project never loads TOML's.
    if kind == "yaml":
        from charter.compiler.sources.yaml_reader import read_yaml as reader
    else:
        from charter.compiler.sources.toml_reader import read_toml as reader
    data, smap, more = reader(src)
    return data, smap, [*diags, *more]


def parse_mapping(
    path: Path,
    display: str,
    kind: Literal["yaml", "toml"],
    *,
    what: str = "the file",
    describe: Callable[[Any], str] = lambda data: type(data).__name__,
) -> tuple[dict[str, Any], SourceMap, list[Diagnostic]] | Loaded[Any]:
    """Read and parse a document whose top level must be a mapping.

    Gives the mapping with its source map and the diagnostics so far, or,
    when the file cannot be read or holds something else (reported as
    ``wrong-type``, naming the file as ``what`` and the value by
    ``describe``), the finished model-less ``Loaded`` to hand back as is.
    """
    data, smap, diags = parse_document(path, display, kind)
    if data is None and any(d.is_error for d in diags):
        return Loaded(display, None, smap, tuple(diags))
    if not isinstance(data, dict):
        diags.append(
            diag(
                "wrong-type",
                f"{what} must hold a mapping of keys to values, not "
                f"{'null' if data is None else describe(data)}",
                smap.value_span(()),
            )
        )
        return Loaded(display, None, smap, tuple(diags), data)
    return data, smap, diags


def load_document(
    path: Path,
    display: str,
    model: type[M],
    kind: Literal["yaml", "toml"],
    *,
    unknown_key_severity: Severity | None = None,
    precheck: Callable[[Any, SourceMap], list[Diagnostic]] | None = None,
    postcheck: Callable[[M, SourceMap], list[Diagnostic]] | None = None,
) -> Loaded[M]:
    """``precheck`` runs on the plain data before validation (for rules that
    need the raw keys); ``postcheck`` runs on a validated model."""
    parsed = parse_mapping(path, display, kind)
    if isinstance(parsed, Loaded):
        return parsed
    data, smap, diags = parsed
    if precheck is not None:
        diags.extend(precheck(data, smap))
    result, more = validate_model(model, data, smap, unknown_key_severity=unknown_key_severity)
    diags.extend(more)
    if result is not None and postcheck is not None:
        diags.extend(postcheck(result, smap))
    if any(d.is_error for d in diags):
        # A model that validated but carries an error from a check is still
        # handed back: later stages may read it, but nothing may compile.
        return Loaded(display, result, smap, tuple(diags), data)
    return Loaded(display, result, smap, tuple(diags), data)


def at(smap: SourceMap, *path: str | int, key: bool = False) -> tuple[Span, str]:
    """The span and rendered key path of ``path`` in ``smap``."""
    span = smap.key_span(path) if key else smap.value_span(path)
    return span, format_key_path(path)


_GONE = object()


def salvage(model: type[M], raw: Any, *, rounds: int = 8) -> M | None:
    """A model built from ``raw`` with every invalid part removed, or None.

    When a file has an error, its diagnostics are already reported; salvaging
    lets the compiler and linter still check everything else in it, so one
    run reports every problem instead of one file-level failure at a time.
    The result is never used to produce a plan (the file's errors stop that).
    """
    if not isinstance(raw, dict):
        return None
    data = thaw(raw)
    for _ in range(rounds):
        try:
            return model.model_validate(freeze(data))
        except ValidationError as exc:
            progress = False
            for err in exc.errors(include_url=False):
                loc = [p for p in err["loc"] if not _is_union_tag(p)]
                if err["type"] == "missing":
                    loc = loc[:-1]
                if not loc:
                    return None
                progress |= _remove(data, loc)
            data = _compact(data)
            if not progress:
                return None
    return None


def _remove(data: Any, loc: list[str | int]) -> bool:
    node = data
    for part in loc[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return False
    last = loc[-1]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    if isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
        node[last] = _GONE  # indexes of later errors stay valid until compaction
        return True
    return False


def _compact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value if v is not _GONE]
    return value


def server_id_from_path(path: Path) -> str:
    """An MCP server's id: its manifest's file name without the extension.
    (Here rather than with the manifest model so that code handling server
    ids need not import the manifest's models.)"""
    return path.stem
