"""Named, persistent sessions: a run's conversation kept in SQLite so a
later ``charter run --session NAME --resume`` continues it, and
``session_search`` can search an agent's earlier sessions.

One file per workspace, ``.charter/sessions.db`` (private: ``charter init``
keeps it out of version control). SQLite from the standard library, in WAL
mode with ``synchronous = FULL``: every turn's messages are written in one
transaction, so a run killed at any moment (``kill -9`` included) loses at
most the turn it was writing, and a reader never sees half a turn.

The schema carries its version in ``PRAGMA user_version``; opening a file
applies each missing migration in order inside one transaction, and a file
from a newer Charter is refused rather than misread. One file serves one
person's runs on one machine; a team that wants sessions shared between
machines, searched at scale or kept under a retention policy outgrows it
and would move them to a server database (PostgreSQL, with the same tables).

A conversation can be rewritten, not only extended (a stage's ``clear`` or
``compact`` transform replaces it); such a rewrite starts a new generation,
and resuming reads the newest one.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from charter.runtime.errors import CharterError
from charter.runtime.models import Message, ModelToolCall

__all__ = ["SessionBook", "SessionStoreError", "SessionStore", "sessions_path"]

SCHEMA_VERSION = 1
_MIGRATIONS: dict[int, str] = {
    1: """
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            agent TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE TABLE messages (
            session INTEGER NOT NULL REFERENCES sessions(id),
            generation INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT,
            extra TEXT NOT NULL,
            PRIMARY KEY (session, generation, seq)
        );
    """,
}


class SessionStoreError(CharterError):
    """A session cannot be opened as asked (exists, missing, another agent's,
    or a file this Charter cannot read)."""


def sessions_path(workspace: Path) -> Path:
    return workspace / ".charter" / "sessions.db"


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA foreign_keys = ON")
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        db.close()
        raise SessionStoreError(
            f"{path} was written by a newer Charter (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade Charter or move the file away"
        )
    if version < SCHEMA_VERSION:
        db.execute("BEGIN IMMEDIATE")
        try:
            current = int(db.execute("PRAGMA user_version").fetchone()[0])
            for step in range(current + 1, SCHEMA_VERSION + 1):
                # Statement by statement: executescript would commit the
                # transaction this migration must stay inside.
                for statement in _MIGRATIONS[step].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {step}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return db


def _encode(m: Message) -> tuple[str, str | None, str]:
    extra: dict[str, Any] = {}
    if m.tool_calls:
        extra["tool_calls"] = [
            {"id": c.id, "name": c.name, "raw": c.raw_arguments} for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        extra["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        extra["name"] = m.name
    return m.role, m.content, json.dumps(extra, sort_keys=True)


def _decode(role: str, content: str | None, extra_text: str) -> Message:
    extra = json.loads(extra_text)
    calls = tuple(
        ModelToolCall.parse(c["id"], c["name"], c["raw"]) for c in extra.get("tool_calls", ())
    )
    return Message(
        role,  # type: ignore[arg-type]
        content,
        calls,
        extra.get("tool_call_id"),
        extra.get("name"),
    )


@dataclass
class SessionBook:
    """One open session: its earlier conversation, and where each turn of
    this run is recorded."""

    store: SessionStore
    session_id: int
    name: str
    agent: str
    history: list[Message]
    generation: int = 0
    _written: list[Message] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, messages: Sequence[Message]) -> None:
        """Persist the conversation as it now stands: the new messages when
        it only grew, else the whole of it as a new generation."""
        with self._lock:
            current = list(messages)
            n = len(self._written)
            if len(current) >= n and current[:n] == self._written:
                new, start, gen = current[n:], n, self.generation
            else:
                new, start, gen = current, 0, self.generation + 1
            if not new and gen == self.generation:
                return
            db = self.store.db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT INTO messages (session, generation, seq, role, content, extra) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(self.session_id, gen, start + i, *_encode(m)) for i, m in enumerate(new)],
                )
                db.execute(
                    "UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), self.session_id)
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self.generation = gen
            self._written = current


class SessionStore:
    """The sessions file of one workspace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = _connect(path)

    def close(self) -> None:
        self.db.close()

    def open(self, name: str, agent: str, *, resume: bool) -> SessionBook:
        """Start the session ``name`` (it must not exist) or, with ``resume``,
        continue it (it must exist, and be ``agent``'s)."""
        if not name or len(name) > 200 or any(ord(c) < 32 for c in name):
            raise SessionStoreError(f"{name!r} is not a session name (1-200 printable characters)")
        row = self.db.execute("SELECT id, agent FROM sessions WHERE name = ?", (name,)).fetchone()
        if row is None:
            if resume:
                raise SessionStoreError(f"there is no session '{name}' to resume in {self.path}")
            now = time.time()
            cur = self.db.execute(
                "INSERT INTO sessions (name, agent, created, updated) VALUES (?, ?, ?, ?)",
                (name, agent, now, now),
            )
            return SessionBook(self, int(cur.lastrowid or 0), name, agent, [])
        session_id, owner = int(row[0]), str(row[1])
        if not resume:
            raise SessionStoreError(f"session '{name}' exists; add --resume to continue it")
        if owner != agent:
            raise SessionStoreError(f"session '{name}' belongs to agent '{owner}', not '{agent}'")
        gen_row = self.db.execute(
            "SELECT MAX(generation) FROM messages WHERE session = ?", (session_id,)
        ).fetchone()
        generation = int(gen_row[0]) if gen_row and gen_row[0] is not None else 0
        rows = self.db.execute(
            "SELECT role, content, extra FROM messages WHERE session = ? AND generation = ? "
            "ORDER BY seq",
            (session_id, generation),
        ).fetchall()
        history = [_decode(*r) for r in rows]
        book = SessionBook(self, session_id, name, agent, history, generation)
        book._written = list(history)
        return book

    def search(self, agent: str, query: str | None, limit: int) -> list[tuple[str, int, str, str]]:
        """(session, index, role, text) of ``agent``'s sessions' messages that
        contain ``query`` (newest first), or the newest ones when None."""
        sql = (
            "SELECT s.name, m.seq, m.role, m.content FROM messages m "
            "JOIN sessions s ON s.id = m.session "
            "WHERE s.agent = ? AND m.role != 'system' AND m.content IS NOT NULL "
            "AND m.generation = (SELECT MAX(generation) FROM messages WHERE session = m.session)"
        )
        params: list[Any] = [agent]
        if query is not None:
            sql += " AND instr(lower(m.content), lower(?)) > 0"
            params.append(query)
        sql += " ORDER BY s.updated DESC, m.seq DESC LIMIT ?"
        params.append(max(1, min(limit, 200)))
        return [(str(a), int(b), str(c), str(d)) for a, b, c, d in self.db.execute(sql, params)]
