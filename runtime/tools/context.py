"""Per-run memory the model manages itself: context sections, checklists, the
seed-000 todo list, and the submitted final answer.

Everything lives in a :class:`RunStore`, in memory, for one run. Nothing here
touches the file system, so these tools need no confinement; they validate
their own references (unknown section, unknown item id) and answer with an
error the model can act on.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.regions import (
    RUNTIME_REGIONS,
    ContextEntry,
    admit,
    not_found,
    region_tokens,
)

if TYPE_CHECKING:
    from charter.runtime.plan import ContextRegion, ScriptSource
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "ChecklistItem",
    "ContextEntry",
    "FOLD_MAX_CHARS",
    "RunStore",
    "fold_sections",
    "run_checklist",
    "run_context",
    "run_submit_output",
    "validate_output",
]

# Sections and checklists are model-controlled; these bound what one run can
# pile up in memory.
MAX_REGIONS = 64
MAX_ENTRIES = 512
MAX_ENTRY_CHARS = 200_000
MAX_ITEMS = 512
# How much of the sections and checklists is folded into each system prompt.
# The store may hold far more than a model's context window; past this the
# prompt says what was left out and how to reach it (context_read), rather
# than letting one large section crowd out the conversation.
FOLD_MAX_CHARS = 48_000


@dataclass(slots=True)
class ChecklistItem:
    id: int
    text: str
    done: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class RunStore:
    """The mutable state of one run. A lock guards it because tool calls of one
    run may be dispatched from worker threads."""

    regions: dict[str, list[ContextEntry]] = field(default_factory=dict)
    checklists: dict[str, list[ChecklistItem]] = field(default_factory=dict)
    todo: list[ChecklistItem] = field(default_factory=list)
    output: str | None = None
    output_count: int = 0
    # The current stage's context layout by region name (None: the agent keeps
    # free-form sections); charter.runtime.tools.regions says what it changes.
    layout: Mapping[str, ContextRegion] | None = None
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _next_id: int = 0
    _clock: int = 0

    def tick(self) -> int:
        self._clock += 1
        return self._clock

    def next_item_id(self) -> int:
        n = self._next_id
        self._next_id += 1
        return n

    def open_items(self, region: str | None = None) -> list[tuple[str, ChecklistItem]]:
        """Checklist items not yet done (an edge gate may wait on these)."""
        with self.lock:
            return [
                (name, item)
                for name, items in self.checklists.items()
                if region is None or name == region
                for item in items
                if not item.done
            ]


def _tokens(text: str) -> int:
    # A rough estimate (about four characters a token): enough for the model to
    # see which sections are large, without loading a tokenizer.
    return (len(text) + 3) // 4


def _error(rule: str, message: str) -> ToolResult:
    return refusal("error", "dispatch", rule, message)


def _ok(content: str, **data: Any) -> ToolResult:
    return ToolResult("ok", content, data=dict(data))


def _known(names: Mapping[str, object]) -> str:
    return ", ".join(sorted(names)) if names else "none yet"


# -- context sections ----------------------------------------------------------


def _undeclared(store: RunStore, region: str) -> ToolResult | None:
    """The refusal for a region the stage's layout does not have, if it has
    a layout (the runtime's own regions are always there)."""
    if store.layout is None or region in store.layout or region in RUNTIME_REGIONS:
        return None
    return not_found(store, region)


def _context_write(args: Mapping[str, Any], store: RunStore, append: bool) -> ToolResult:
    region, content, key = args["region"], args["content"], args.get("key")
    if len(content) > MAX_ENTRY_CHARS:
        return _error("context-too-large", f"an entry holds at most {MAX_ENTRY_CHARS} characters")
    refused = _undeclared(store, region)
    if refused is not None:
        return refused
    declared = store.layout.get(region) if store.layout is not None else None
    if declared is not None:
        if len(store.regions.get(region, ())) >= MAX_ENTRIES and declared.kind != "hashmap":
            return _error("context-full", f"section {region!r} holds at most {MAX_ENTRIES} entries")
        return admit(store, declared, content, key, replace=not append)
    entries = store.regions.get(region)
    if entries is None:
        if len(store.regions) >= MAX_REGIONS:
            return _error("context-full", f"at most {MAX_REGIONS} context sections per run")
        entries = store.regions[region] = []
    if key is not None:
        for n, entry in enumerate(entries):
            if entry.key == key:
                if append:
                    return _error(
                        "context-key-exists",
                        f"section {region!r} already has an entry {key!r}; use context_write "
                        "to replace it or choose another key",
                    )
                entries[n] = ContextEntry(content, key)
                return _ok(f"replaced entry {key!r} in section {region!r}")
    elif not append:
        # A write without a key replaces the whole section's text.
        entries.clear()
    if len(entries) >= MAX_ENTRIES:
        return _error("context-full", f"section {region!r} holds at most {MAX_ENTRIES} entries")
    entries.append(ContextEntry(content, key))
    verb = "appended to" if append else "wrote"
    return _ok(f"{verb} section {region!r} ({len(entries)} entries)")


def _context_read(args: Mapping[str, Any], store: RunStore) -> ToolResult:
    region, key = args["region"], args.get("key")
    refused = _undeclared(store, region)
    if refused is not None:
        return refused
    if store.layout is not None and region in store.layout:
        store.regions.setdefault(region, [])
    entries = store.regions.get(region)
    if entries is None:
        return _error(
            "context-unknown-region",
            f"no context section {region!r} (sections: {_known(store.regions)})",
        )
    if key is not None:
        for entry in entries:
            if entry.key == key:
                return _ok(entry.content)
        keys = [e.key for e in entries if e.key is not None]
        return _error(
            "context-unknown-key",
            f"section {region!r} has no entry {key!r} (keys: {', '.join(keys) or 'none'})",
        )
    return _ok("\n\n".join(e.content for e in entries) if entries else "(empty section)")


def _context_delete(args: Mapping[str, Any], store: RunStore) -> ToolResult:
    region = args["region"]
    refused = _undeclared(store, region)
    if refused is not None:
        return refused
    if store.layout is not None and region in store.layout:
        store.regions.setdefault(region, [])
    entries = store.regions.get(region)
    if entries is None:
        return _error(
            "context-unknown-region",
            f"no context section {region!r} (sections: {_known(store.regions)})",
        )
    chosen = [k for k in ("key", "index", "oldest") if k in args]
    if len(chosen) != 1:
        return _error("context-delete-shape", "name exactly one of key, index or oldest")
    if "key" in args:
        for n, entry in enumerate(entries):
            if entry.key == args["key"]:
                del entries[n]
                return _ok(f"released entry {args['key']!r} from section {region!r}")
        return _error("context-unknown-key", f"section {region!r} has no entry {args['key']!r}")
    if "index" in args:
        index = args["index"]
        if not 0 <= index < len(entries):
            return _error(
                "context-bad-index",
                f"section {region!r} has {len(entries)} entries; index {index} is out of range",
            )
        del entries[index]
        return _ok(f"released entry {index} from section {region!r}")
    oldest = min(args["oldest"], len(entries))
    del entries[:oldest]
    return _ok(f"released the {oldest} oldest entries from section {region!r}")


def _context_list(args: Mapping[str, Any], store: RunStore) -> ToolResult:
    region = args.get("region")
    if region is None and store.layout is not None:
        lines = [
            f"{name} ({r.kind}): {len(store.regions.get(name, ()))} entries, "
            f"~{region_tokens(store.regions.get(name, []))} of {r.max_tokens} tokens"
            for name, r in store.layout.items()
            if name != "conversation"
        ]
        return _ok("\n".join(lines) if lines else "(no context sections)")
    if region is not None:
        refused = _undeclared(store, region)
        if refused is not None:
            return refused
        if store.layout is not None and region in store.layout:
            store.regions.setdefault(region, [])
    if region is None:
        if not store.regions:
            return _ok("(no context sections)")
        lines = [
            f"{name}: {len(entries)} entries, ~{sum(_tokens(e.content) for e in entries)} tokens"
            for name, entries in sorted(store.regions.items())
        ]
        return _ok("\n".join(lines))
    entries = store.regions.get(region)
    if entries is None:
        return _error(
            "context-unknown-region",
            f"no context section {region!r} (sections: {_known(store.regions)})",
        )
    lines = []
    for n, entry in enumerate(entries):
        first = entry.content.splitlines()[0][:80] if entry.content else ""
        key = f" [{entry.key}]" if entry.key else ""
        lines.append(f"{n}{key}: ~{_tokens(entry.content)} tokens: {first}")
    return _ok("\n".join(lines) if lines else "(empty section)")


_CONTEXT_TOOLS = (
    "context_write",
    "context_append",
    "context_read",
    "context_delete",
    "context_list",
)


def run_context(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None) -> ToolResult:
    if tool is None:
        # The five context tools share one implementation and overlapping
        # argument shapes (write and append take the same ones; read and list
        # both take a region); guessing could replace what should be kept.
        return refusal(
            "invalid",
            "dispatch",
            "context-tool-unnamed",
            "the context tools share one implementation; the dispatcher must name the tool",
        )
    store = rt.store
    with store.lock:
        if tool == "context_write":
            return _context_write(args, store, append=False)
        if tool == "context_append":
            return _context_write(args, store, append=True)
        if tool == "context_read":
            return _context_read(args, store)
        if tool == "context_delete":
            return _context_delete(args, store)
        if tool == "context_list":
            return _context_list(args, store)
    return refusal("invalid", "dispatch", "unknown-tool", f"{tool!r} is not a context tool")


# -- folding sections back into the prompt ---------------------------------------


class _Budget:
    """Text of the folded block, cut once ``limit`` characters are used."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.parts: list[str] = []
        self.hidden: dict[str, int] = {}  # "section 'x'" -> characters not shown

    def add(self, text: str, what: str) -> None:
        if len(text) <= self.left:
            self.parts.append(text)
            self.left -= len(text)
            return
        shown = text[: self.left]
        if shown:
            self.parts.append(shown)
        self.hidden[what] = self.hidden.get(what, 0) + len(text) - len(shown)
        self.left = 0


def fold_sections(store: RunStore, max_chars: int = FOLD_MAX_CHARS) -> str | None:
    """The agent's context sections and checklists as one block for its system
    prompt, or None when it keeps none. Sections are shown in the order they
    were made, entries in their order, keyed entries with their key; each
    checklist item with its id, whether it is done, and its notes (checklists
    come first). Past ``max_chars`` the rest is left out and the block ends by
    naming what was left out, so the model knows to read it with the tools."""
    with store.lock:
        regions = [(name, list(entries)) for name, entries in store.regions.items()]
        checklists = [
            (name, [(i.id, i.text, i.done, tuple(i.notes)) for i in items])
            for name, items in store.checklists.items()
        ]
    if not regions and not checklists:
        return None
    budget = _Budget(max_chars)
    # Checklists first: they are short, and this block is the only place the
    # model sees them whole (no tool lists a checklist), while a section cut
    # here can still be read with context_read.
    for name, items in checklists:
        open_count = sum(not done for _, _, done, _ in items)
        key = f"checklist '{name}'"
        budget.add(f"\n\n### Checklist '{name}' ({open_count} open of {len(items)})", key)
        for item_id, text, done, notes in items:
            budget.add(f"\n- [{'x' if done else ' '}] {item_id}: {text}", key)
            for note in notes:
                budget.add(f"\n    note: {note}", key)
    for name, entries in regions:
        count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
        key = f"section '{name}'"
        budget.add(f"\n\n### Section '{name}' ({count})", key)
        if not entries:
            budget.add("\n(empty)", key)
        for entry in entries:
            label = f"[{entry.key}] " if entry.key is not None else "- "
            budget.add(f"\n{label}{entry.content}", key)
    head = (
        "Your context sections and checklists, as they stand now. The runtime keeps them "
        "for you across turns and stages; the context and todo tools change them."
    )
    text = head + "".join(budget.parts)
    if budget.hidden:
        cut = ", ".join(f"{what} ({n} characters)" for what, n in budget.hidden.items())
        text += (
            f"\n\n[not shown, past the {max_chars}-character limit of this block: {cut}. "
            "Read a section with context_read; free what you no longer need with "
            "context_delete.]"
        )
    return text


# -- checklists and the todo list ----------------------------------------------


def _find_item(store: RunStore, region: str, item_id: int) -> ChecklistItem | ToolResult:
    items = store.checklists.get(region)
    if items is None:
        return _error(
            "todo-unknown-region",
            f"no checklist {region!r} (checklists: {_known(store.checklists)})",
        )
    for item in items:
        if item.id == item_id:
            return item
    return _error("todo-unknown-id", f"checklist {region!r} has no item {item_id}")


def _todo_list(store: RunStore) -> str:
    if not store.todo:
        return "(the todo list is empty)"
    return "\n".join(
        f"{n}. [{'x' if item.done else ' '}] {item.text}" for n, item in enumerate(store.todo, 1)
    )


def _seed_todo(args: Mapping[str, Any], store: RunStore) -> ToolResult:
    action = args.get("action", "list")
    if action == "add":
        if "text" not in args:
            return _error("todo-missing-text", "action 'add' needs text")
        if len(store.todo) >= MAX_ITEMS:
            return _error("todo-full", f"the todo list holds at most {MAX_ITEMS} items")
        store.todo.append(ChecklistItem(len(store.todo) + 1, args["text"]))
        return _ok(f"added item {len(store.todo)}\n{_todo_list(store)}")
    if action == "complete":
        index = args.get("index")
        if index is None:
            return _error("todo-missing-index", "action 'complete' needs index")
        if not 1 <= index <= len(store.todo):
            return _error(
                "todo-bad-index", f"the list has {len(store.todo)} items; no item {index}"
            )
        store.todo[index - 1].done = True
        return _ok(f"completed item {index}\n{_todo_list(store)}")
    if action == "clear":
        store.todo.clear()
        return _ok("cleared the todo list")
    if action == "list":
        return _ok(_todo_list(store))
    return _error("todo-bad-action", f"unknown action {action!r}")


def run_checklist(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None) -> ToolResult:
    if tool is None:
        tool = (
            "todo_add"
            if "item" in args
            else "todo_note"
            if "note" in args
            else "todo_done"
            if "id" in args
            else "todo"
        )
    store = rt.store
    with store.lock:
        if tool == "todo":
            return _seed_todo(args, store)
        region = args["region"]
        if store.layout is not None:
            declared = store.layout.get(region)
            if declared is None:
                return not_found(store, region)
            if declared.kind != "checklist":
                return _error(
                    "todo-not-a-checklist",
                    f"region {region!r} is not a checklist; declare it as "
                    'kind = "checklist" to track items in it',
                )
        if tool == "todo_add":
            items = store.checklists.get(region)
            if items is None:
                if len(store.checklists) >= MAX_REGIONS:
                    return _error("todo-full", f"at most {MAX_REGIONS} checklists per run")
                items = store.checklists[region] = []
            if len(items) >= MAX_ITEMS:
                return _error("todo-full", f"checklist {region!r} holds at most {MAX_ITEMS} items")
            item = ChecklistItem(store.next_item_id(), args["item"])
            items.append(item)
            return _ok(f"added item {item.id} to checklist {region!r}", id=item.id)
        found = _find_item(store, region, args["id"])
        if isinstance(found, ToolResult):
            return found
        if tool == "todo_done":
            found.done = True
            left = sum(not i.done for i in store.checklists[region])
            return _ok(f"item {found.id} done; {left} open in checklist {region!r}")
        if tool == "todo_note":
            found.notes.append(args["note"])
            return _ok(f"noted on item {found.id} (still open)")
    return refusal("invalid", "dispatch", "unknown-tool", f"{tool!r} is not a checklist tool")


# -- the final answer ----------------------------------------------------------


def validate_output(
    content: str,
    fmt: str | None,
    schema_text: str | None = None,
    validator: ScriptSource | None = None,
) -> str | None:
    """Why ``content`` does not fit the declared output format, its schema or
    the stage's validator script, or None. Formats other than json, yaml,
    toml and csv are free text and not checked."""
    problem = _format_problem(content, fmt, schema_text)
    if problem is None and validator is not None:
        problem = _validator_problem(content, validator)
    return problem


def _validator_problem(content: str, validator: ScriptSource) -> str | None:
    """Run ``fn validate(content)``: ``()`` or blank text accepts, other
    text is the reason it rejects. A validator that throws or answers
    something else rejects too (Leviath records the answer unchecked
    instead; a check that did not run is not a check that passed)."""
    from charter.runtime.rhai import Engine, Limits, RhaiError, debug_text, parse_cached

    try:
        script = parse_cached(validator.source, validator.path)
        verdict = Engine(Limits(max_operations=100_000)).call(script, "validate", [content])
    except RhaiError as exc:
        return f"the output validator failed, so the answer was not accepted: {exc}"
    if verdict is None or (isinstance(verdict, str) and not verdict.strip()):
        return None
    if isinstance(verdict, str):
        return f"the final output was rejected: {verdict}"
    return (
        f"the output validator {validator.path} must return () or a string, "
        f"not {debug_text(verdict)}"
    )


def _format_problem(content: str, fmt: str | None, schema_text: str | None) -> str | None:
    kind = (fmt or "").strip().lower()
    if kind not in ("json", "yaml", "yml", "toml", "csv"):
        return None
    # Imported here: only a run that declared a structured output pays for them.
    import csv
    import tomllib

    value: Any = None
    try:
        if kind == "json":
            value = json.loads(content)
        elif kind in ("yaml", "yml"):
            import yaml  # only a run that declared YAML output pays for the import

            value = yaml.safe_load(content)
        elif kind == "toml":
            value = tomllib.loads(content)
        elif kind == "csv":
            rows = list(csv.reader(io.StringIO(content)))
            rows = [r for r in rows if r]
            if not rows:
                return "the CSV answer has no rows"
            widths = {len(r) for r in rows}
            if len(widths) > 1:
                return f"CSV rows have different numbers of columns ({sorted(widths)})"
            return None
        else:
            return None
    except Exception as exc:  # noqa: BLE001 - every parser has its own error type
        return f"the answer is not valid {kind.upper()}: {exc}"
    if schema_text:
        import jsonschema

        errors = list(jsonschema.Draft202012Validator(json.loads(schema_text)).iter_errors(value))
        if errors:
            shown = "; ".join(
                f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                for e in errors[:3]
            )
            more = f" and {len(errors) - 3} more" if len(errors) > 3 else ""
            return f"the answer does not match the declared schema: {shown}{more}"
    return None


def run_submit_output(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None) -> ToolResult:
    content = args["content"]
    spec = rt.output
    problem = validate_output(
        content,
        None if spec is None else spec.format,
        None if spec is None else spec.answer_schema,
        None if spec is None else spec.validator,
    )
    if problem is not None:
        return _error(
            "output-invalid", f"{problem}. Nothing was submitted; fix it and submit again."
        )
    with rt.store.lock:
        replaced = rt.store.output is not None
        rt.store.output = content
        rt.store.output_count += 1
    note = "replaced the earlier answer" if replaced else "submitted"
    return _ok(f"answer {note} ({len(content)} characters)", replaced=replaced)
