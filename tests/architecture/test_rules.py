"""One registry of rule keys: every key a gate module can put on an outcome
is registered (with the gates that report it), each family matches the
module that decides it, and every key is documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from charter.runtime.gates import GATES
from charter.runtime.gates.rules import DATAFLOW_RULES, GATE_RULES, PATH_RULES, RULES, URL_RULES

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# Where each call puts its rule key: the position of the argument.
RULE_ARG = {"deny": 2, "refusal": 2, "Outcome": 2, "ArgumentRefusal": 1}
_KEY = re.compile(r'"((?:path|dataflow)-[a-z-]+)"')


def _literal_rules(path: Path) -> set[str]:
    """Rule keys written as literals: in the rule position of a refusal or
    an outcome, as ``rule=``, or assigned to a variable named ``rule``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            at = RULE_ARG.get(name)
            values = [node.args[at]] if at is not None and len(node.args) > at else []
            values += [kw.value for kw in node.keywords if kw.arg == "rule"]
        elif isinstance(node, ast.Assign):
            values = []
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == "rule":
                    values.append(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    values += [
                        v
                        for t, v in zip(target.elts, node.value.elts, strict=False)
                        if isinstance(t, ast.Name) and t.id == "rule"
                    ]
        else:
            continue
        for value in values:
            for part in ast.walk(value):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    if re.fullmatch(r"[a-z]+(-[a-z]+)+", part.value):
                        found.add(part.value)
    return found


def test_every_key_a_gate_writes_is_registered() -> None:
    files = [
        *sorted((REPO / "runtime" / "gates").glob("*.py")),
        REPO / "runtime/policy/arguments.py",
    ]
    written: set[str] = set()
    for path in files:
        written |= _literal_rules(path)
    assert len(written) > 20  # the reader found the gates' keys
    assert written - set(RULES) == set()
    # And no gate key is registered that no gate writes (a stale entry).
    assert set(GATE_RULES) - written == set()


def test_each_family_is_the_one_its_module_decides() -> None:
    workspace = set(_KEY.findall((REPO / "runtime/policy/workspace.py").read_text("utf-8")))
    assert {k for k in workspace if k.startswith("path-")} == set(PATH_RULES)
    taint = set(_KEY.findall((REPO / "runtime/policy/taint.py").read_text("utf-8")))
    assert {k for k in taint if k.startswith("dataflow-")} == set(DATAFLOW_RULES)
    policy = (REPO / "runtime/net/urlpolicy.py").read_text("utf-8")
    stale = [k for k in URL_RULES if f'"{k.removeprefix("url-")}"' not in policy]
    assert not stale


def test_every_decision_in_the_golden_data_names_a_registered_rule_of_its_gate() -> None:
    rows = 0
    for line in (REPO / "tests/gates/data/decisions.txt").read_text("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        *_, gate, rule = line.split("\t")
        assert gate in GATES, line
        if rule != "-":
            assert gate in RULES.get(rule, ()), line
            rows += 1
    assert rows > 40


def test_every_key_is_documented() -> None:
    runtime = (DOCS / "runtime.md").read_text("utf-8")
    missing = [k for k in (*GATE_RULES, *PATH_RULES, *DATAFLOW_RULES) if f"`{k}`" not in runtime]
    assert not missing, f"document these rule keys in docs/runtime.md: {missing}"
    url = (DOCS / "url-policy.md").read_text("utf-8")
    missing = [k for k in URL_RULES if f"`{k.removeprefix('url-')}`" not in url]
    assert not missing, f"document these reasons in docs/url-policy.md: {missing}"
