"""What the agent loop does with its stage's context regions at run time:
seeds on entering a stage, tool results routed into regions, and the
runtime's notes for the next stage. The region rules themselves are in
:mod:`charter.runtime.tools.regions`, the prompt in
:mod:`charter.runtime.run.layout`; this module wires them to one agent's run
(its tools, gates, sandbox and events)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread

from charter.runtime.gates import decide, execute
from charter.runtime.models import Message, ModelError, ModelToolCall
from charter.runtime.results import ToolCall, ToolResult, refusal
from charter.runtime.run.seeds import SeedDoors, SeedFailed, seed_stage
from charter.runtime.run.transforms import (
    Transform,
    conversation_text,
    cut_summary,
    summary_request,
)
from charter.runtime.tools.context import ContextEntry
from charter.runtime.tools.files import run_read
from charter.runtime.tools.regions import (
    admit,
    fill_region,
    note_report,
    region_tokens,
    route_result,
)
from charter.runtime.tools.shell import unattended_shell

if TYPE_CHECKING:
    from charter.runtime.run.context import AgentResult
    from charter.runtime.run.loop import AgentRun

__all__ = [
    "apply_transform",
    "queue_compactions",
    "report",
    "routed",
    "seed_entered_stage",
    "summarize_pending",
]


async def seed_entered_stage(run: AgentRun) -> AgentResult | None:
    """Fill the seeded regions of the stage ``run`` just entered (see
    :mod:`charter.runtime.run.seeds`); a result when the run must stop."""
    run.seeding = False
    stage = run.stage
    if not any(r.seed is not None for r in stage.regions):
        return None
    doors = SeedDoors(
        read=lambda path: run_read({"path": path}, run.rt, "read_file", False),
        shell=lambda command: unattended_shell(run.session, run.rt, command),
        call=lambda name, args: _seed_call(run, name, args),
        workspace=str(run.ctx.workspace),
        inputs=run.inputs,
        commands_allowed=run.session.agent.agent.allow_seed_commands,
        warn=lambda message: run.emit("notice", message=message),
    )
    try:
        done, got = await run.ctx.in_thread(lambda: seed_stage(stage, run.seeded, doors))
    except SeedFailed as exc:
        return run.finish("failed", f"the run cannot start stage '{stage.name}': {exc}")
    if not done:
        return run.partial("cancelled", "the run was stopped while seeding")
    layout = {r.name: r for r in stage.regions}
    for name, text in got.items():
        kept = fill_region(run.rt.store, layout[name], text)
        run.emit("region_seeded", region=name, stage=stage.name, tokens=kept)
    run.refresh_system_prompt()
    return None


def _seed_call(run: AgentRun, name: str, args: dict[str, Any]) -> ToolResult:
    """A tool call a seed makes: every gate, and an ask is a refusal (a seed
    runs before anyone could answer)."""
    call = ToolCall(name, args, f"seed-{run.calls}")
    outcome = decide(run.session, call)
    if outcome.decision != "allow":
        return refusal(
            "denied",
            outcome.gate or "approval",
            outcome.rule or "seed-needs-allow",
            f"the plan answers {outcome.decision} for '{name}', and a seed runs "
            "before anyone could answer",
        )
    return execute(
        run.session, call, run.registry, run.ctx.approvals, run.ctx.audit, runtime=run.rt
    )


def report(run: AgentRun, region: str, text: str) -> None:
    """A note for the next stage: in ``region`` (``error_report``,
    ``stuck_report``) when the layout has it, else in the conversation (as
    Leviath falls back to its own). A stage without a layout is Charter's
    own, which takes no such note."""
    if run.stage.regions and not note_report(run.rt.store, region, text):
        run.messages.append(Message.user(text))


def routed(run: AgentRun, call: ModelToolCall, result: ToolResult) -> str:
    """What the conversation keeps of a result: the stage's tool_routing may
    send it to a region (a pointer stays) and cap its size."""
    routing = run.stage.tool_routing
    if routing is None or not result.ok:
        return result.content
    name = run.canonical(call)
    rule = next((r for r in routing.rules if r.tool == name), None)
    cap = routing.max_result_tokens
    region = routing.default_region
    if rule is not None:
        cap = rule.max_result_tokens if rule.max_result_tokens is not None else cap
        region = rule.region or region
    return route_result(run.rt.store, name, call.id, result.content, region=region, cap=cap)


def apply_transform(
    run: AgentRun,
    how: Transform,
    previous: str,
    stage_name: str,
    log: list[str],
    system: Message,
    task: Message,
) -> None:
    """Carry the context over the edge into ``stage_name`` as ``how`` says;
    the summaries it needs are asked for before the stage's first turn
    (:func:`summarize_pending`)."""
    old = run.messages
    if how.keep_conversation:
        run.messages[0] = system
        run.messages.append(Message.user(f"[stage] You are now in stage '{stage_name}'."))
    else:
        run.messages = [system, task]
        if how.summarize_conversation:
            # the runtime's own record, in case the model cannot summarize
            digest = "\n".join(log[-40:]) or "(no tool calls)"
            last = next(
                (m.content for m in reversed(old) if m.role == "assistant" and m.content), None
            )
            record = (
                f"[stage] You are now in stage '{stage_name}'. In stage '{previous}':\n{digest}"
            )
            if last:
                record += f"\nYour last words there: {last[:2000]}"
            text = conversation_text(old[2:])
            run.pending_summaries.append(("conversation", text or record, how.prompt, record))
    with run.rt.store.lock:
        for name in how.clear:
            run.rt.store.regions.pop(name, None)
            run.rt.store.checklists.pop(name, None)
        for name in how.summarize:
            entries = run.rt.store.regions.get(name, [])
            text = "\n\n".join(e.content for e in entries)
            run.pending_summaries.append((name, text, how.prompt, None))


def queue_compactions(run: AgentRun) -> None:
    """A compacting region past its ``compact_at`` mark is summarized in
    place before the next turn, as Leviath compacts it; the summary also
    goes to every compact_history region that names it as its source."""
    store = run.rt.store
    with store.lock:
        for region in run.stage.regions:
            mark = region.compact_at_tokens
            entries = store.regions.get(region.name, [])
            if region.kind != "compacting" or mark is None or len(entries) < 2:
                continue
            if region_tokens(entries) > mark:
                text = "\n\n".join(e.content for e in entries)
                run.pending_summaries.append((region.name, text, None, None))


async def summarize_pending(run: AgentRun) -> None:
    """Ask the model for the summaries a compact edge left (the conversation
    of the stage left, and each region it rewrites), before the new stage's
    first turn; a summary the model cannot write leaves the runtime's own
    record (a region as it was)."""
    pending, run.pending_summaries = run.pending_summaries, []
    compaction = run.session.agent.agent.compaction
    # [compaction]'s own model, when the run's endpoint serves its provider
    model = (
        compaction.model
        if compaction is not None and compaction.provider in run.ctx.stage_providers
        else None
    )
    stage = run.stage.name
    for what, text, prompt, record in pending:
        messages = summary_request(what, text, prompt, compaction)

        def ask(messages: list[Message] = messages) -> str | None:
            turn = run.provider.complete(
                stage=stage, messages=messages, tools=(), edges=(), model=model
            )
            return turn.text

        try:
            summary = await anyio.to_thread.run_sync(
                ask, abandon_on_cancel=True, limiter=run.ctx.limiter
            )
        except ModelError as exc:
            run.emit("notice", message=f"no summary of '{what}' could be made: {exc}")
            summary = None
        if summary is not None and summary.strip():
            summary = cut_summary(summary.strip(), compaction)
            run.emit("context_compacted", stage=stage, what=what, chars=len(summary))
        if what == "conversation":
            note = (
                f"[stage] You are now in stage '{stage}'. What happened before, "
                f"summarized:\n{summary}"
                if summary
                else record or ""
            )
            run.messages.append(Message.user(note))
        elif summary:
            store = run.rt.store
            with store.lock:
                store.regions[what] = [ContextEntry(summary, None, stamp=store.tick())]
                for history in run.stage.regions:
                    if history.kind == "compact_history" and history.source_region == what:
                        admit(store, history, summary, None, replace=False)
    run.refresh_system_prompt()
