"""The gates: every tool call passes the same gates, in the same order, each
a module of this package under its own name.

1. :mod:`~.visibility`: does the stage offer the tool (attended or
   unattended set; an alias the plan lists, such as ``bash``, calls its tool)?
2. :mod:`~.schema`: do the arguments fit the schema the plan advertised?
3. :mod:`~.capability`: for an agent that declares grants, is the tool's
   capability covered? Secret bindings need their exact grant.
4. :mod:`~.permission`: the plan's decision for the tool in this stage, and
   the launch flags (``--allow TOOL``, ``--yolo`` lift a liftable ask, never
   a deny).
5. :mod:`~.confinement`: the path arguments the plan lists are confined to
   the workspace; outside is a deny no flag lifts, a credential path inside
   asks a person.
6. :mod:`~.shell`: the shell guard's verdict on a command, met with the
   permission and with write_file's decision for every file it writes.
7. :mod:`~.url`: the URL policy on a fetch's literal URL.
8. :mod:`~.dataflow`: with data-flow tracking on, an outbound call after a
   sensitive read must match the allowlist on its actual target.
9. :mod:`~.approval`: a remaining ask goes to a person (or the run's cache).
10. :mod:`~.dispatch`: the tool runs where its plan entry says.

:mod:`~.pipeline` runs them: :func:`decide` runs gates 1-8 without side
effects (``charter check``, the hooks, ``charter serve``); :func:`execute`
runs all ten and writes the audit log. A refusal names the gate that
refused and a rule key from :mod:`~.rules`. Every gate reads only the plan
and the session: nothing is looked up in the built-in catalog.
"""

from charter.runtime.gates.outcome import Outcome, PathCheck
from charter.runtime.gates.pipeline import GATES, decide, execute

__all__ = ["GATES", "Outcome", "PathCheck", "decide", "execute"]
