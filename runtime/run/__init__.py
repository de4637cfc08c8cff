"""``charter run``: execute a compiled plan as an agent loop.

* :mod:`.loop`: one agent through its stages (turns, edges, gates, limits),
  with :mod:`.context` (what a run's agents share, what one returns),
  :mod:`.prompt` (what the model is told each turn), :mod:`.shape` (the
  answer shape), :mod:`.edges` (a stage visit's counts, gates, stuck) and
  :mod:`.calls` (the mechanics of one tool call);
* :mod:`.agents`: sub-agents from the same plan, concurrently;
* :mod:`.people`: terminal prompts for approvals and the human-in-the-loop tools;
* :mod:`.events`: the event stream and its views (rich, quiet, JSON lines);
* :mod:`.runner`: one run from start to end, with Ctrl-C handling;
* :mod:`.launch`: what ``charter run`` does once its options are parsed (the
  checks before a run starts, the run directory, the views, the records),
  reached through ``charter.runtime.launch_run``.

Nothing here imports ``charter.compiler``: the CLI hands the runtime a loader
that compiles a project first, and the runtime only ever sees a plan.
"""

from __future__ import annotations

from charter.runtime.run.events import Event, EventBus, JsonLinesSink, LiveView, QuietView
from charter.runtime.run.loop import AgentResult, AgentRun, RunContext
from charter.runtime.run.people import LineSource, PromptApprovals, Prompter
from charter.runtime.run.runner import RunOptions, RunReport, execute_run

__all__ = [
    "AgentResult",
    "AgentRun",
    "Event",
    "EventBus",
    "JsonLinesSink",
    "LineSource",
    "LiveView",
    "PromptApprovals",
    "Prompter",
    "QuietView",
    "RunContext",
    "RunOptions",
    "RunReport",
    "execute_run",
]
