"""project_note: read or extend the Markdown note kept for one topic.

Notes live at ``<workspace>/notes/<topic>.md``. The topic is checked against
a strict pattern before it becomes part of a path, so a model cannot reach a
file outside the notes folder. Reading needs the ``fs.read`` capability and
appending needs ``fs.write``; both are asked for through the host's
capability facade right before the file is touched.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

NOTES_DIR = "notes"
MAX_LINE = 500
MAX_READ_CHARS = 20_000
_TOPIC = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def execute(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    action = args.get("action")
    topic = args.get("topic")
    if not isinstance(topic, str) or not _TOPIC.match(topic):
        return _error("topic must be 1-64 lowercase letters, digits, '_' or '-'")
    note = _note_path(Path(ctx.workspace), topic)
    if action == "lookup":
        ctx.capability.require("fs.read")
        return _lookup(note, topic)
    if action == "append":
        line = args.get("line")
        if not isinstance(line, str) or not line.strip():
            return _error("append needs a non-empty 'line'")
        if len(line) > MAX_LINE or "\n" in line or "\r" in line:
            return _error(f"'line' must be a single line of at most {MAX_LINE} characters")
        ctx.capability.require("fs.write")
        return _append(note, topic, line.strip())
    return _error("action must be 'lookup' or 'append'")


def _note_path(workspace: Path, topic: str) -> Path:
    folder = (workspace / NOTES_DIR).resolve()
    path = (folder / f"{topic}.md").resolve()
    # The pattern already rules out separators and '..'; this guards against
    # a notes folder that is itself a symlink pointing elsewhere.
    if folder not in path.parents:
        raise PermissionError(f"note path for '{topic}' leaves the notes folder")
    return path


def _lookup(note: Path, topic: str) -> dict[str, Any]:
    if not note.is_file():
        return {"content": f"No note for '{topic}' yet.", "found": False}
    text = note.read_text(encoding="utf-8")
    truncated = len(text) > MAX_READ_CHARS
    if truncated:
        text = text[-MAX_READ_CHARS:]
    return {"content": text, "found": True, "truncated": truncated}


def _append(note: Path, topic: str, line: str) -> dict[str, Any]:
    note.parent.mkdir(parents=True, exist_ok=True)
    is_new = not note.exists()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    with note.open("a", encoding="utf-8") as fh:
        if is_new:
            fh.write(f"# {topic}\n\n")
        fh.write(f"- {stamp}: {line}\n")
    verb = "Created" if is_new else "Updated"
    return {"content": f"{verb} note '{topic}'.", "created": is_new}


def _error(message: str) -> dict[str, Any]:
    return {"content": message, "is_error": True}
