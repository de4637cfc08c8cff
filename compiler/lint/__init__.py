"""Lint checks: findings that read what the compiler has built and change
nothing in it, and the passes ``charter validate`` runs after loading.

==========================  =================================================
module                      what it reads, and when it runs
==========================  =================================================
:mod:`.sources`             a resolved agent with its source files (positions
                            included), during every compile; its errors
                            withhold the plan
:mod:`.fates`               every key a file sets, against the one table of
                            input fields' fates (``compiler/data/
                            key_fates.tsv``): CH234, CH235; during compile
:mod:`.leviath_checks`      what Leviath refuses when it loads a blueprint,
                            beyond single values; run from :mod:`.sources`
:mod:`.plan_checks`         only a compiled agent's plan (stage graph, shell
                            policy, unattended stages, --yolo); in validate
:mod:`.leviath_lint`        Leviath's own lints over a blueprint as written,
                            with :mod:`.model_catalog` (the model names
                            Leviath's build knows); in validate
:mod:`.expectations`        the project's ``[[expect]]`` self-tests, run
                            against its compiled plan; in validate
:mod:`.suppress`            what silences a finding (inline comments, the
                            config's list), applied last; in validate
==========================  =================================================

A check that computes a fact while resolving it lives with the fact in
``charter.compiler.resolve``, and one that needs a single file's keys in its
front-end; the one map of where each kind of check goes is in
ARCHITECTURE.md, "Where a lint check goes".
"""

from __future__ import annotations

from charter.compiler.lint.plan_checks import lint_agent

__all__ = ["lint_agent"]
