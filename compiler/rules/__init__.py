"""The rule catalog: every diagnostic Charter can report.

Codes are stable forever once published; a retired rule keeps its code
reserved. Each group of codes has its own module, and importing this package
registers them all into one catalog (:data:`RULES`):

=====================  ==================================================
module                 codes
=====================  ==================================================
:mod:`.ch1_files`      CH1xx files and syntax
:mod:`.ch2_values`     CH2xx structure and values (CH25x: Leviath's defaults, regions)
:mod:`.ch3_names`      CH3xx names
:mod:`.ch4_permissions` CH4xx permissions, capabilities, secrets (CH45x, CH47x sandbox)
:mod:`.ch5_shell`      CH5xx shell policy
:mod:`.ch6_stages`     CH6xx stage graph (CH65x: Leviath's stage lints)
:mod:`.ch7_tools`      CH7xx tools and MCP
:mod:`.ch8_selftests`  CH8xx policy self-tests and suppressions
=====================  ==================================================

A new rule is one ``register(...)`` call in its group's module; where the
check that reports it goes depends on the fact it needs, and ARCHITECTURE.md
("Where new work goes") has the one map of those homes. Each rule's doc has
four parts (what it checks, why it matters, an example, how to fix),
rendered by ``charter rule CODE``; ``tests/rules`` holds a triggering and a
clean fixture for every code.
"""

from __future__ import annotations

# The group modules register on import; the order is irrelevant (every
# listing sorts by code) but each must be imported exactly once, here.
from charter.compiler.rules import (  # noqa: F401
    ch1_files,
    ch2_values,
    ch3_names,
    ch4_permissions,
    ch5_shell,
    ch6_stages,
    ch7_tools,
    ch8_selftests,
)
from charter.compiler.rules.catalog import RULES, Rule, by_name, diag, diag_at, has_rule, rule

__all__ = ["RULES", "Rule", "by_name", "diag", "diag_at", "has_rule", "rule"]
