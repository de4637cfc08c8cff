"""Building the shell grammar's LALR table with lark, and shipping it as data.

lark computes the table from ``bash.lark``; that takes lark's import plus
tens of milliseconds, on every process start of ``charter check``, the hook
and ``validate``. The table is plain data, so it ships as JSON
(``data/lalr_table.json``) keyed by the grammar's sha256: the guard loads it
in a millisecond, and rebuilds with lark whenever the grammar changed. It is
never a pickle, and nothing is written at run time. A test fails while the
shipped table is stale; regenerate with
``python -m charter.runtime.shell.tablegen``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from charter.runtime.datafiles import read_text

__all__ = ["TABLE_FILE", "export_table", "grammar_text", "main"]

TABLE_FILE = "lalr_table.json"


def grammar_text() -> str:
    return read_text("charter.runtime.shell", __file__, "bash.lark")


def grammar_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def export_table(grammar: str) -> dict[str, Any]:
    """The LALR table lark computes for ``grammar``, as JSON-ready data:
    ``rules`` lists (name, length, kind) with kind ``splice`` (a rule lark
    inlines into its parent), ``expand1`` or ``build``; ``actions[state][sym]``
    is ``[1, next_state]`` for a shift or ``[0, rule_index]`` for a reduce;
    ``gotos[state][nonterminal]`` is the state after a reduction."""
    from lark import Lark, Token
    from lark.lexer import Lexer

    class _NoLexer(Lexer):
        # lark requires a lexer for declared terminals; Charter lexes itself.
        __future_interface__ = 0

        def __init__(self, lexer_conf: Any) -> None:
            self.conf = lexer_conf

        def lex(self, lexer_state: Any, parser_state: Any = None) -> Iterator[Token]:
            raise RuntimeError("Charter drives the LALR table itself")

    lark = Lark(grammar, parser="lalr", lexer=_NoLexer, maybe_placeholders=False)
    table = lark.parser.parser.parser.parse_table
    nonterminals = {
        str(arg.origin.name)
        for state in table.states.values()
        for action, arg in state.values()
        if action.name == "Reduce"
    }
    start = table.start_states["start"]
    end = table.end_states["start"]
    # lark numbers states in an order that depends on the interpreter's hash
    # seed. Renumbering them breadth-first from the start state, symbols in
    # sorted order, gives the same automaton the same JSON every time.
    order: list[Any] = [start]
    seen = {start}
    for state in order:
        for _sym, (action, arg) in sorted(table.states[state].items(), key=lambda x: str(x[0])):
            if action.name == "Shift" and arg not in seen:
                seen.add(arg)
                order.append(arg)
    for state in table.states:
        if state not in seen:
            seen.add(state)
            order.append(state)
    new_id = {old: i for i, old in enumerate(order)}
    rules: list[list[Any]] = []
    index: dict[Any, int] = {}
    actions: dict[str, dict[str, list[int]]] = {}
    gotos: dict[str, dict[str, int]] = {}
    for old in order:
        acts: dict[str, list[int]] = {}
        goto: dict[str, int] = {}
        for sym_key, (action, arg) in sorted(table.states[old].items(), key=lambda x: str(x[0])):
            sym = str(sym_key)
            if action.name == "Shift":
                if sym in nonterminals:
                    goto[sym] = new_id[arg]
                else:
                    acts[sym] = [1, new_id[arg]]
            else:
                if arg not in index:
                    name = str(arg.origin.name)
                    kind = (
                        "splice"
                        if name.startswith("_")
                        else "expand1"
                        if arg.options.expand1
                        else "build"
                    )
                    index[arg] = len(rules)
                    rules.append([name, len(arg.expansion), kind])
                acts[sym] = [0, index[arg]]
        actions[str(new_id[old])] = acts
        gotos[str(new_id[old])] = goto
    return {
        "grammar_sha256": grammar_digest(grammar),
        "start": new_id[start],
        "end": new_id[end],
        "rules": rules,
        "actions": actions,
        "gotos": gotos,
    }


def table_path() -> Path:
    return Path(__file__).resolve().parent / "data" / TABLE_FILE


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    path = table_path()
    path.write_text(render(export_table(grammar_text())), encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
