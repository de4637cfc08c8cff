"""The shell command guard: one decision for one command line.

:func:`evaluate` parses the command with Charter's grammar and judges every
simple command in the tree, with no cap on their number. Each simple command
yields findings (allow, ask or deny, with a stable rule key, a span and a
message); the verdict is the strictest finding over every command and every
reading of the text (raw, ANSI-stripped, NFKC). What does not parse is
"ask", and a best-effort scan of its pieces can still find a destructive
payload and make it "deny", never anything weaker.

The modules, one concern each:

- :mod:`.entry`: :func:`evaluate` and :func:`judge`, the readings of the
  text and the verdict they make together;
- :mod:`.state`: the state one reading gathers, and the size limits;
- :mod:`.commands`: the walk over the command tree, nested scripts
  (``bash -c``, ``eval``, backticks) and the salvage of what does not parse;
- :mod:`.argv`: one simple command's program and arguments (wrappers,
  shells, privilege, the read-only table's rules, ``[safe_commands]``);
- :mod:`.confine`: redirects and the files writing programs change, held to
  ``write_file``'s confinement;
- :mod:`.places`: the working directory through ``cd``, and what a target
  word names before the command runs;
- :mod:`.paths`: the paths arguments name and the trees recursive programs
  read.
"""

from __future__ import annotations

from charter.runtime.shell.guard.entry import evaluate, judge
from charter.runtime.shell.guard.paths import sensitive_path
from charter.runtime.shell.guard.state import MAX_COMMAND_CHARS, MAX_TOKENS

__all__ = ["MAX_COMMAND_CHARS", "MAX_TOKENS", "evaluate", "judge", "sensitive_path"]
