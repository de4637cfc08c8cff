"""A cooperative model for acceptance runs: it reads the compiled plan and, in
each stage, does what the stage asks (writes the regions it requires and the
ones its edges' gates wait on, writes a file when a gate wants work done,
hands out two items in a fan_out stage, submits an answer in the declared
format) and then takes the edge that leads to a stage it has not seen (the
farthest from the end first), else the one nearest the end. With ``errors``
it also fails once in a stage whose ``error`` edge leads somewhere unseen,
at the last stage on its way from which that edge can still be taken, so
recovery stages run too.

It is a test driver, not a model: it plays whatever agent the plan holds, so
a run of every bundled agent exercises Charter's runtime on the real files.
:class:`WalkingProvider` plays it in process; :func:`openai_reply` over the
chat-completions test server, reading the agent and stage from the prompt.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from charter.runtime.models import (
    EdgeChoice,
    Message,
    ModelRequestError,
    ModelToolCall,
    ModelTurn,
    ToolSpec,
)
from charter.runtime.plan import AgentPlan, Plan, Stage

__all__ = ["Action", "Walker", "WalkingProvider", "openai_reply"]

_ANSWERS = {
    "csv": "name,value\nnorth,1\nsouth,2",
    "json": '{"ok": true}',
    "markdown": "# Report\n\n- walked every stage",
}


@dataclass
class Action:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    edge: str | None = None
    text: str | None = None
    fail: bool = False


@dataclass
class _Visit:
    stage: str = ""
    step: int = 0


class Walker:
    """One agent instance's walk (a root run, or one sub-agent)."""

    def __init__(self, agent: AgentPlan, *, errors: bool) -> None:
        self.agent = agent
        self.errors = errors
        self.seen: set[str] = set()
        self.failed_in: set[str] = set()
        self.visit = _Visit()
        self._ids = itertools.count(1)

    def _stage(self, name: str) -> Stage:
        found = self.agent.stage(name)
        assert found is not None, f"{self.agent.name} has no stage {name!r}"
        return found

    def _distance_to_end(self, start: str) -> int:
        """Edges from ``start`` to a stage that ends the run."""
        queue, dist = deque([start]), {start: 0}
        while queue:
            name = queue.popleft()
            stage = self._stage(name)
            if stage.output is not None or stage.mode == "output" or not stage.edges:
                return dist[name]
            for e in stage.edges:
                if e.to not in dist and e.condition in ("llm_choice", "always"):
                    dist[e.to] = dist[name] + 1
                    queue.append(e.to)
        return 1_000

    def next(self, stage_name: str, offered: Sequence[str], edges: Sequence[str]) -> Action:
        if stage_name != self.visit.stage:
            self.visit = _Visit(stage_name)
        step = self.visit.step
        self.visit.step += 1
        first_visit = stage_name not in self.seen
        self.seen.add(stage_name)
        stage = self._stage(stage_name)
        if step == 0 or (step == 1 and first_visit and stage.fan_out is not None):
            work = self._work(stage, offered)
            if work:
                return Action(calls=work, text="working")
        return self._leave(stage, offered, edges)

    def _work(self, stage: Stage, offered: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        calls: list[tuple[str, dict[str, Any]]] = []
        if stage.fan_out is not None and "fan_out" in offered:
            items = [
                {"id": slug, "context": {"slice": slug, "columns": ["name", "value"]}}
                for slug in ("north", "south")
            ]
            return [("fan_out", {"items": items})]
        layout = {r.name: r for r in stage.regions}
        wanted = [r.name for r in stage.required_regions]
        for e in stage.edges:
            if e.gate is not None:
                wanted += list(e.gate.require_regions) + list(e.gate.require_region_updated)
                if e.gate.region:
                    wanted.append(e.gate.region)
        if "context_write" in offered:
            for name in dict.fromkeys(wanted):
                region = layout.get(name)
                args: dict[str, Any] = {"region": name, "content": f"{name}: filled by the walk"}
                if region is not None and region.kind == "hashmap":
                    args["key"] = "walk"
                if region is None or region.kind != "checklist":
                    calls.append(("context_write", args))
        if any(e.gate is not None and e.gate.require_modifications for e in stage.edges):
            if "write_file" in offered:
                calls.append(("write_file", {"path": f"walk/{stage.name}.txt", "content": "x"}))
        return calls

    def _leave(self, stage: Stage, offered: Sequence[str], edges: Sequence[str]) -> Action:
        if "submit_output" in offered:
            fmt = (stage.output.format if stage.output is not None else None) or "markdown"
            answer = _ANSWERS.get(fmt.lower(), "The walk is done.")
            return Action(calls=[("submit_output", {"content": answer})])
        if edges:
            unseen = [t for t in edges if t not in self.seen]
            # the unseen stage farthest from the end, so the walk takes in the
            # most before it finishes; else the nearest way to the end
            chosen = (
                max(unseen, key=self._distance_to_end)
                if unseen
                else min(edges, key=self._distance_to_end)
            )
            if self._last_chance_to_fail(stage, chosen):
                return Action(fail=True)
            return Action(edge=chosen, text="moving on")
        return Action(text="The walk is done.")

    def _last_chance_to_fail(self, stage: Stage, chosen: str) -> bool:
        """Whether to fail here, so the stage's error edge is walked: it
        leads somewhere unseen and the stage the walk moves to next has no
        error edge of its own to the same place."""
        if not self.errors or stage.name in self.failed_in:
            return False
        target = next((e.to for e in stage.edges if e.condition == "error"), None)
        if target is None or target in self.seen:
            return False
        ahead = self._stage(chosen)
        if any(e.condition == "error" and e.to == target for e in ahead.edges):
            return False
        self.failed_in.add(stage.name)
        return True

    def turn(self, action: Action) -> ModelTurn:
        calls = tuple(
            ModelToolCall(f"w{next(self._ids)}", name, args, json.dumps(args))
            for name, args in action.calls
        )
        return ModelTurn(text=action.text, tool_calls=calls, edge=action.edge)


class WalkingProvider:
    """A model provider that walks ``agent`` of ``plan``; its sub-agents
    walk their own agents (no induced errors: a worker's failure is not what
    such a run shows)."""

    def __init__(self, plan: Plan, agent: str, *, errors: bool = True) -> None:
        found = plan.body.agent(agent)
        assert found is not None
        self.plan = plan
        self.walker = Walker(found, errors=errors)
        self.lock = threading.Lock()
        self.children: list[WalkingProvider] = []

    def complete(
        self,
        *,
        stage: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        edges: Sequence[EdgeChoice],
        on_retry: Any = None,
        model: str | None = None,
    ) -> ModelTurn:
        if not tools and not edges:
            # a summary a compact edge asks for: it is no step of the walk
            return ModelTurn(text=f"Summary: the walk went through {stage} and before.")
        with self.lock:
            action = self.walker.next(stage, [t.name for t in tools], [e.target for e in edges])
            if action.fail:
                raise ModelRequestError("the walk fails here on purpose", status=500, attempts=1)
            return self.walker.turn(action)

    def for_agent(self, name: str) -> WalkingProvider:
        child = WalkingProvider(self.plan, name, errors=False)
        with self.lock:
            self.children.append(child)
        return child

    def close(self) -> None:
        return None


_WHO = re.compile(r"You are the agent '([^']+)'")
_WHERE = re.compile(r"You are in stage '([^']+)'")


def openai_reply(plan: Plan, completion: Callable[..., Any]) -> Callable[[Any], Any]:
    """A chat-completions handler that walks whatever agent a request is
    for: the agent and stage are read from the system prompt, and each
    conversation (its first user message) is one walk."""
    walks: dict[tuple[str, str], Walker] = {}
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        system = messages[0]["content"]
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        if not tools:  # a summary a compact edge asks for
            return completion(content="Summary: the walk went on.")
        who, where = _WHO.search(system), _WHERE.search(system)
        assert who is not None and where is not None, system[:300]
        task = next(m["content"] for m in messages if m["role"] == "user")
        edges: list[str] = []
        for t in body.get("tools", []):
            if t["function"]["name"] == "choose_edge":
                edges = list(t["function"]["parameters"]["properties"]["edge"].get("enum", []))
        with lock:
            key = (who.group(1), task)
            if key not in walks:
                agent = plan.body.agent(who.group(1))
                assert agent is not None
                walks[key] = Walker(agent, errors=False)
            action = walks[key].next(where.group(1), tools, edges)
        calls = [
            (f"c{abs(hash((key, n, len(messages))))}", name, args)
            for n, (name, args) in enumerate(action.calls)
        ]
        if action.edge is not None:
            calls.append(("edge", "choose_edge", {"edge": action.edge}))
        return completion(content=action.text, tool_calls=calls or None)

    return reply
