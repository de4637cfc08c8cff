"""docs/builtin-tools.md carries two tables generated from the catalog data.

The test fails when they are stale. Refresh them with:

    /work/venv/bin/python tests/catalog/test_doc.py --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from charter.compiler.catalog.builtin import BuiltinTool, builtin_tools

DOC = Path(__file__).resolve().parents[2] / "docs" / "builtin-tools.md"
START = "<!-- generated:{name}:start (tests/catalog/test_doc.py --write) -->"
END = "<!-- generated:{name}:end -->"


def _flags(tool: BuiltinTool) -> str:
    flags = [
        ("blocks", tool.blocks_on_person),
        ("work", tool.counts_as_work),
        ("outbound", tool.outbound),
        ("host-only", tool.host_only),
    ]
    return ", ".join(label for label, on in flags if on) or "-"


def metadata_table() -> str:
    rows = [
        "| Tool | Aliases | Seeds | Toolsets | Family | impl | Default | Capability | Risk "
        "| Approval | Flags |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tool in builtin_tools().values():
        cells = [
            f"`{tool.name}`",
            ", ".join(f"`{a}`" for a in tool.aliases) or "-",
            ", ".join(tool.seeds),
            ", ".join(tool.toolsets) or "-",
            tool.family,
            f"`{tool.impl}`",
            tool.default_permission,
            f"`{tool.capability}`" if tool.capability else "-",
            tool.risk,
            tool.approval,
            _flags(tool),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def arguments_table() -> str:
    rows = ["| Tool | Required | Optional | Cross-field rules |", "|---|---|---|---|"]
    for tool in builtin_tools().values():
        schema = tool.schema_dict()
        required = schema.get("required", [])
        optional = [p for p in schema["properties"] if p not in required]
        extra = []
        if "minProperties" in schema:
            extra.append("exactly one of " + ", ".join(optional))
        if tool.input_rules is not None:
            extra.append(_describe_rules(json.loads(tool.input_rules)))
        rows.append(
            "| "
            + " | ".join(
                [
                    f"`{tool.name}`",
                    ", ".join(f"`{p}`" for p in required) or "-",
                    ", ".join(f"`{p}`" for p in optional) or "-",
                    "; ".join(extra) or "-",
                ]
            )
            + " |"
        )
    return "\n".join(rows)


def _describe_rules(rules: dict[str, Any]) -> str:
    parts = []
    for rule in rules["allOf"]:
        cond = rule["if"]
        (prop,) = cond["required"]
        test = cond["properties"][prop]
        then = rule["then"]
        if "required" in then:
            outcome = "needs " + ", ".join(f"`{p}`" for p in then["required"])
        else:
            (field, spec) = next(iter(then["properties"].items()))
            outcome = f"`{field}` must be {json.dumps(spec['const'])}"
        if "const" in test:
            parts.append(f"`{prop}`={test['const']} {outcome}")
        elif "enum" in test:
            parts.append(f"`{prop}` in {'/'.join(test['enum'])} {outcome}")
        else:
            parts.append(f"non-empty `{prop}`: {outcome}")
    return "; ".join(parts)


GENERATED = {"metadata": metadata_table, "arguments": arguments_table}


def render(text: str) -> str:
    for name, make in GENERATED.items():
        start, end = START.format(name=name), END.format(name=name)
        head, sep, rest = text.partition(start)
        _, sep2, tail = rest.partition(end)
        if not sep or not sep2:
            raise AssertionError(f"{DOC.name} lacks the {name} markers")
        text = f"{head}{start}\n{make()}\n{end}{tail}"
    return text


def test_doc_tables_are_fresh() -> None:
    current = DOC.read_text("utf-8")
    assert render(current) == current, (
        "docs/builtin-tools.md is stale: run python tests/catalog/test_doc.py --write"
    )


def test_prose_explains_every_shared_implementation() -> None:
    # Outside the generated tables, the mapping section must name every impl
    # key that more than one model-visible tool shares.
    text = DOC.read_text("utf-8")
    for name in GENERATED:
        head, _, rest = text.partition(START.format(name=name))
        text = head + rest.partition(END.format(name=name))[2]
    counts: dict[str, int] = {}
    for tool in builtin_tools().values():
        counts[tool.impl] = counts.get(tool.impl, 0) + 1
    for impl, n in counts.items():
        if n > 1:
            assert f"`{impl}`" in text, impl


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: test_doc.py --write")
    DOC.write_text(render(DOC.read_text("utf-8")), "utf-8")
