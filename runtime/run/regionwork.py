"""What the agent loop does with its stage's context regions at run time:
seeds on entering a stage, tool results routed into regions, and the
runtime's notes for the next stage. The region rules themselves are in
:mod:`charter.runtime.tools.regions`, the prompt in
:mod:`charter.runtime.run.layout`; this module wires them to one agent's run
(its tools, gates, sandbox and events)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from charter.runtime.gates import decide, execute
from charter.runtime.models import Message, ModelToolCall
from charter.runtime.results import ToolCall, ToolResult, refusal
from charter.runtime.run.seeds import SeedDoors, SeedFailed, seed_stage
from charter.runtime.tools.files import run_read
from charter.runtime.tools.regions import fill_region, note_report, route_result
from charter.runtime.tools.shell import unattended_shell

if TYPE_CHECKING:
    from charter.runtime.run.context import AgentResult
    from charter.runtime.run.loop import AgentRun

__all__ = ["report", "routed", "seed_entered_stage"]


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
