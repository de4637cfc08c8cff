"""How many of the shell guard's asks a contained run no longer asks about.

Reads every case of the golden corpora (``tests/fixtures/shell/*.tsv``),
keeps those the guard answers with ``ask``, and counts how many become
``allow`` when the command runs in a complete sandbox (charter run) with
the default ``auto_allow`` groups (outside, network) and with ``code``
added, per corpus file and in total. Prints figures; asserts nothing.

    python bench/contained_asks.py
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

from charter.runtime.sandbox.contained import allow_contained, rules_for_groups
from charter.runtime.shell import ShellPolicy, evaluate

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO / "tests" / "fixtures" / "shell"
WS = Path("/ws/proj")


def cases() -> list[tuple[str, str]]:
    out = []
    for path in sorted(CORPORA.glob("*.tsv")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            command = line.split("\t")[0]
            if command.startswith("py:"):
                command = ast.literal_eval(command[3:])
            out.append((path.stem, command))
    return out


def main() -> int:
    default = frozenset(rules_for_groups(("outside", "network"), network_none=True))
    with_code = frozenset(rules_for_groups(("outside", "network", "code"), network_none=True))
    asks: Counter[str] = Counter()
    lifted: Counter[tuple[str, str]] = Counter()
    for corpus, command in cases():
        verdict = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
        if verdict.decision != "ask":
            continue
        asks[corpus] += 1
        for label, rules in (("default", default), ("code", with_code)):
            if allow_contained(verdict, rules).decision == "allow":
                lifted[(corpus, label)] += 1
    total = sum(asks.values())
    print(f"{'corpus':16} {'asks':>5} {'default':>8} {'+code':>8}")
    for corpus in sorted(asks):
        print(
            f"{corpus:16} {asks[corpus]:5} {lifted[(corpus, 'default')]:8} "
            f"{lifted[(corpus, 'code')]:8}"
        )
    d = sum(v for (c, k), v in lifted.items() if k == "default")
    c = sum(v for (c_, k), v in lifted.items() if k == "code")
    print(f"{'total':16} {total:5} {d:8} {c:8}")
    print(
        f"share of ask commands a contained run no longer asks about: {100 * d / total:.1f}% "
        f"(auto_allow outside+network), {100 * c / total:.1f}% (+code)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
