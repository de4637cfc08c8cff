"""Background tasks of a run: ``terminal(background=true)`` and the tools that
follow them (task_list, task_status, task_control, yield_until), plus the
validation of delegate_task's child controls.

A background shell command runs like a foreground ``terminal`` one (same
shell, environment, confinement, redaction and process-tree handling, the
same 12,000-character tail of each stream with its totals and truncation
flags) in its own thread; its ``timeout_seconds`` still bounds it, and
cancelling the task, or cancelling the run, stops its whole process tree.

Ids are random, so they cannot be guessed, and an id owned by another run
(or another agent of the same run) gets exactly the answer a missing id
gets.

Everything written to the durable store is redacted first (the ``stored``
view), a chunk at a time: a secret split between two reads is still
recognised, because each stream holds back as many characters as the
longest known secret has, less one, until more text (or the end) shows
whether they start a secret.

Sub-agents share these implementation keys (check_agent, wait_for_agent,
kill_agent use ``tasks.status``, ``tasks.wait``, ``tasks.cancel``). Under
``charter run`` the run loop answers for its children and hands every other
id here; outside it there are no sub-agents, and their ids are unknown like
any other.

The modules, one concern each:

- :mod:`.store`: the durable records, task logs and output artifacts;
- :mod:`.stream`: redacting a stream that arrives in pieces;
- :mod:`.output`: recording one task's output as it is drained;
- :mod:`.lifecycle`: starting, cancelling and publishing a task;
- :mod:`.tools`: the four task tools the model calls;
- :mod:`.delegate`: delegate_task's child controls.
"""

from __future__ import annotations

from charter.runtime.tools.tasks.delegate import ChildControls, check_child_controls, guard_delegate
from charter.runtime.tools.tasks.lifecycle import (
    MAX_TASKS_PER_RUN,
    Task,
    cancel_tasks,
    start_shell_task,
)
from charter.runtime.tools.tasks.output import LOG_ENTRY_CHARS
from charter.runtime.tools.tasks.store import (
    STREAM_FILES,
    AppendFile,
    TaskStore,
    TaskStoreError,
    runtime_dir,
    set_store_factory,
    store_for,
)
from charter.runtime.tools.tasks.stream import StreamRedactor
from charter.runtime.tools.tasks.tools import TAIL_CHARS, run_cancel, run_list, run_status, run_wait

__all__ = [
    "LOG_ENTRY_CHARS",
    "MAX_TASKS_PER_RUN",
    "STREAM_FILES",
    "TAIL_CHARS",
    "AppendFile",
    "ChildControls",
    "StreamRedactor",
    "Task",
    "TaskStore",
    "TaskStoreError",
    "cancel_tasks",
    "check_child_controls",
    "guard_delegate",
    "run_cancel",
    "run_list",
    "run_status",
    "run_wait",
    "runtime_dir",
    "set_store_factory",
    "start_shell_task",
    "store_for",
]
