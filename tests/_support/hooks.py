"""The tool permissions of the hook corpora's main stage (tests/fixtures/hooks).

The Claude Code and Gemini CLI hook tests and the decision-server tests decide
the same recorded events, so they compile their plans from one table.
"""

from __future__ import annotations

WORK_STAGE: dict[str, str] = {
    "shell": "ask",
    "terminal": "ask",
    "read_file": "allow",
    "write_file": "ask",
    "edit_file": "ask",
    "patch": "ask",
    "search_files": "allow",
    "list_dir": "allow",
    "web_fetch": "ask",
    "web_search": "deny",
    "docs__lookup": "allow",
    "todo": "allow",
    "delegate_task": "ask",
    "send_to_agent": "allow",
    "task_list": "allow",
    "task_status": "allow",
    "task_control": "allow",
    "yield_until": "allow",
    "skill_view": "allow",
    "schedule_manage": "deny",
    "clarify": "allow",
    "ask_user_confirm": "allow",
}

# Tools a person must be present for; an unattended stage leaves them out.
PERSON_ONLY = ("clarify", "ask_user_confirm")
