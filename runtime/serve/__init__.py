"""``charter serve``: a long-running decision point for other agents' hooks.

The server holds a compiled plan (reloaded when its file changes, by digest)
and answers Claude Code and Gemini CLI hook events with exactly what the hook
commands print, without paying a process start per tool call. See
docs/clients.md.

* :mod:`~charter.runtime.serve.plans`: the plan in use and its reload;
* :mod:`~charter.runtime.serve.decisions`: what each endpoint answers;
* :mod:`~charter.runtime.serve.log`: the decision log;
* :mod:`~charter.runtime.serve.workers`, :mod:`~charter.runtime.serve.loglink`: worker
  processes, and their lines sent to the one process that writes the log;
* :mod:`~charter.runtime.serve.connection`: one client connection (h11), its bounds;
* :mod:`~charter.runtime.serve.server`: routes, authentication, the event loop;
* :mod:`~charter.runtime.serve.tokens`: the bearer token and the files it is read from;
* :mod:`~charter.runtime.serve.launch`: what ``charter serve`` does once its options
  are parsed (``charter.runtime.run_server``): token, log, first plan, socket, workers.
"""

from __future__ import annotations

from charter.runtime.serve.decisions import Answer, Decider, ServeOptions
from charter.runtime.serve.log import DecisionLog
from charter.runtime.serve.plans import FileSource, PlanHolder, PlanLoadError, PlanSource
from charter.runtime.serve.server import DecisionServer, ListenError, is_loopback, parse_listen

__all__ = [
    "Answer",
    "Decider",
    "DecisionLog",
    "DecisionServer",
    "FileSource",
    "ListenError",
    "PlanHolder",
    "PlanLoadError",
    "PlanSource",
    "ServeOptions",
    "is_loopback",
    "parse_listen",
]
