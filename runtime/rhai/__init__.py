"""A Rhai interpreter for the scripts Leviath's blueprints carry: script
tools, stage hooks, output validators and custom regions.

There is no Rhai engine usable from Python, so Charter has its own: a
lexer and parser into a small tree (:mod:`.syntax`), and a tree-walking
evaluator with Rhai's bounds (:mod:`.interp`). Host functions reach the
outside world only through what the embedder passes in; the scripts' own
language has no I/O.
"""

from __future__ import annotations

from charter.runtime.rhai.errors import RhaiError, RhaiLimitError, RhaiRuntimeError, RhaiSyntaxError
from charter.runtime.rhai.interp import Engine, HostError, HostFunction, Limits
from charter.runtime.rhai.parser import parse_cached, parse_script
from charter.runtime.rhai.syntax import Script
from charter.runtime.rhai.values import Char, FnPtr, debug_text, display_text

__all__ = [
    "Char",
    "Engine",
    "FnPtr",
    "HostError",
    "HostFunction",
    "Limits",
    "RhaiError",
    "RhaiLimitError",
    "RhaiRuntimeError",
    "RhaiSyntaxError",
    "Script",
    "debug_text",
    "display_text",
    "parse_cached",
    "parse_script",
]
