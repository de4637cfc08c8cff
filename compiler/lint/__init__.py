"""Lint checks: findings that read a resolved agent or its plan and change
nothing in it.

==========================  =================================================
module                      what it reads
==========================  =================================================
:mod:`.sources`             a resolved agent with its source files, during
                            the compile (errors here withhold the plan)
:mod:`.plan_checks`         a compiled agent's plan (stage graph, shell
                            policy, unattended stages, --yolo)
==========================  =================================================

Leviath's blueprint lints live beside them in
:mod:`charter.compiler.lint.leviath_lint` (run by ``charter validate``) and its
load-time refusals in :mod:`charter.compiler.lint.leviath_checks` (run from
:mod:`.sources`). These are two of the homes a check can have; the one map
of them all (readers, front-ends, resolution, these, Leviath's, the
self-tests) is in ARCHITECTURE.md, "Where new work goes".
"""

from __future__ import annotations

from charter.compiler.lint.plan_checks import lint_agent

__all__ = ["lint_agent"]
