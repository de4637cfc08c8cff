"""Rules CH8xx: policy self-tests (CH80x) and suppressions (CH89x,
compiler/lint/suppress.py).
"""

from __future__ import annotations

from charter.compiler.rules.catalog import E, N, W, register

# --- CH80x: policy self-tests --------------------------------------------------
register(
    "CH801",
    "policy-expectation-failed",
    E,
    "A policy self-test in charter.toml ([[expect]]) gets a different decision from the "
    "compiled policy.",
    "The expectations are the team's statement of what the agent may do; a change that breaks "
    "one changed what the agent may do.",
    '[[expect]]\ntool = "shell"\ncommand = "git push"\ndecision = "deny"   # but it is ask\n',
    "Fix the policy, or update the expectation if the change was intended. The message shows "
    "the gate, rule and provenance of the actual decision.",
)
register(
    "CH802",
    "policy-expectation-invalid",
    E,
    "A policy self-test names an agent or stage that does not exist.",
    "An expectation that cannot be evaluated proves nothing.",
    '[[expect]]\nagent = "codr"\ntool = "read_file"\ndecision = "allow"\n',
    "Name an existing agent and stage.",
)
register(
    "CH803",
    "policy-expectations-skipped",
    N,
    "Policy self-tests were not run because the project has errors.",
    "Expectations run against the compiled plan, which errors prevent.",
    "Any project with an error and a [[expect]] table.",
    "Fix the errors; the expectations then run.",
)
# --- CH89x: suppressions (compiler/lint/suppress.py) -------------------------------
register(
    "CH890",
    "unused-suppression",
    N,
    "A '# charter: ignore[...]' comment names a rule that reports nothing there.",
    "A stale suppression would silently hide the next, unrelated finding of that rule "
    "on the same line.",
    'shell = "deny"  # charter: ignore[implicit-shell-policy]\n',
    "Remove the comment, or the codes in it that no longer apply.",
)
register(
    "CH891",
    "suppression-without-codes",
    W,
    "A '# charter: ignore' comment that does not say which rules it silences.",
    "A blanket ignore would hide every finding on the line, including errors added later; "
    "Charter refuses it and suppresses nothing.",
    "toolsets: [coding]  # charter: ignore\n",
    "Name the codes or rule names, as in '# charter: ignore[CH301]' or "
    "'# charter: ignore[unknown-toolset]'.",
)
register(
    "CH892",
    "invalid-suppression",
    W,
    "A suppression names a rule that does not exist, or one that cannot be suppressed.",
    "A misspelled code silences nothing, and file and syntax errors (CH1xx) mean the file "
    "was not read, so nothing in it can be vouched for.",
    "risk: high  # charter: ignore[CH2O1]\n",
    "Use a code or name listed by 'charter rules'; fix file and syntax errors instead.",
)
