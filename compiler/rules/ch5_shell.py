"""Rules CH5xx: the shell policy (compiler/resolve/shell_policy.py)."""

from __future__ import annotations

from charter.compiler.rules.catalog import E, W, register

# --- CH5xx: shell policy (compiler/resolve/shell_policy.py) --------------------------
register(
    "CH501",
    "unparseable-safe-command",
    E,
    "A [safe_commands] shell entry is not one plain command of literal words.",
    "Charter matches entries word by word against parsed commands; an entry with quotes that "
    "do not round-trip, operators, expansions or globs would match something other than what "
    "it shows.",
    '[safe_commands]\nshell = ["cargo check; curl x"]\n',
    'Write one program and its leading literal arguments, for example "cargo check".',
)
register(
    "CH502",
    "safe-command-pre-approves-write",
    E,
    "A [safe_commands] shell entry would pre-approve a redirect or a file write.",
    "Redirects answer to the write_file permission and workspace confinement; a safe-command "
    "entry must never turn a write into an unprompted action.",
    '[safe_commands]\nshell = ["sort -o sorted.txt"]\n',
    "Remove the redirect or writing option; let writes be approved as writes.",
)
register(
    "CH503",
    "safe-command-grants-wrapper",
    E,
    "A [safe_commands] shell entry names a wrapper, shell or interpreter.",
    "env, sudo, xargs, bash -c, python and friends run whatever follows them, so such an "
    "entry would pre-approve every command.",
    '[safe_commands]\nshell = ["xargs"]\n',
    'Name the program that does the work instead (for example "cargo check").',
)
register(
    "CH504",
    "safe-command-example-mismatch",
    E,
    "A [safe_commands] entry's match or not_match example is judged differently than it says.",
    "The examples are the entry's own tests: an entry that does not cover its match examples, "
    "or covers a not_match example, does not mean what its author thinks.",
    '[[safe_commands.shell]]\ncommand = "cargo check"\nmatch = ["cargo build"]\n',
    "Fix the entry or the example; the message shows how the guard judged the example.",
)
register(
    "CH505",
    "safe-command-cannot-be-lifted",
    W,
    "A [safe_commands] entry covers a command the guard refuses or always asks about anyway.",
    "Entries lift only a program's own 'ask'; destructive payloads stay denied and options "
    "that execute or write stay asked, so the entry does less than it seems to.",
    '[safe_commands]\nshell = ["rm -rf /"]\n',
    "Remove the entry, or narrow it to the read-only use it is meant for.",
)
