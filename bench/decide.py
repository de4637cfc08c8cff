"""Decision benchmark: how long the gates take, in process and as a fresh command.

Prints
- in-process decision latency (median and p99, microseconds) for a read_file
  call (visibility, argument schema, capability, plan decision, workspace
  confinement) and for a shell call (the same plus the shell guard and the
  approval fingerprint);
- plan load time for a 100-agent plan (read, digest check, model validation,
  and preparing every agent's validators and lookup maps);
- cold wall time of ``charter check`` and of ``charter hook claude-code``
  (a new process per call, median of several), which is what another agent's
  hook pays on every tool call.

Targets: read_file decision <= 50 us median; cold check and hook <= 250 ms.

    python bench/decide.py [--calls N] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from charter.compiler.catalog.builtin import resolve_builtin
from charter.runtime.gates import decide
from charter.runtime.plan import (
    AgentPlan,
    Decision,
    Grant,
    Plan,
    PlanBody,
    ScopeValue,
    Stage,
    StageTool,
    ToolEntry,
)
from charter.runtime.plan.loader import load_plan
from charter.runtime.plan.prepared import load_for_agents, prepare
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall

TOOLS = [
    "read_file", "read_files", "write_file", "edit_file", "patch", "list_dir", "search_files",
    "shell", "context_write", "context_append", "context_read", "context_delete",
    "context_list", "todo_add", "todo_done", "todo_note", "submit_output", "ask_user_text",
    "ask_user_choice", "ask_user_confirm", "present_for_review", "web_search", "web_fetch",
    "spawn_agent", "check_agent", "wait_for_agent", "send_to_agent", "kill_agent",
]  # fmt: skip


def _entry(name: str) -> ToolEntry:
    b = resolve_builtin(name)
    assert b is not None
    return ToolEntry(
        name=b.name,
        source="builtin",
        impl=b.impl,
        description=b.summary,
        input_schema=b.input_schema,
        capability=b.capability,
        risk=b.risk,
        counts_as_work=b.counts_as_work,
        outbound=b.outbound,
        blocks_on_person=b.blocks_on_person,
    )


def _decision(name: str) -> Decision:
    b = resolve_builtin(name)
    assert b is not None
    p = b.default_permission
    return Decision(
        permission=p,
        liftable=p == "ask",
        scopes=(
            ScopeValue(scope="stage", value=None),
            ScopeValue(scope="agent", value=None),
            ScopeValue(scope="config", value=None),
            ScopeValue(scope="builtin_default", value=p),
        ),
    )


def _agent(n: int) -> AgentPlan:
    entries = tuple(_entry(t) for t in sorted(TOOLS))
    stages = []
    for s in range(5):
        offered = tuple(sorted(TOOLS[s : s + 20]))
        stages.append(
            Stage(
                name=f"stage{s}",
                mode="work",
                attended=offered,
                unattended=offered,
                tools=tuple(StageTool(name=t, decision=_decision(t)) for t in offered),
            )
        )
    return AgentPlan(
        name=f"agent{n}",
        kind="combined",
        root=f"agents/agent{n}",
        entry_stage="stage0",
        tools=entries,
        stages=tuple(stages),
        grants=tuple(
            Grant(capability=c)
            for c in ("fs.read", "fs.write", "terminal.exec", "network.fetch", "task.control")
        ),
    )


def build_plan(agents: int) -> Plan:
    body = PlanBody(
        compiler_version="bench",
        target_platform="posix",
        shell="/bin/bash",
        agents=tuple(_agent(n) for n in range(agents)),
        sources=(),
    )
    return Plan.seal(body)


def _latency(session: object, call: ToolCall, calls: int) -> tuple[float, float]:
    for _ in range(200):  # warm caches (realpath, regexes, the shell parser)
        decide(session, call)  # type: ignore[arg-type]
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        out = decide(session, call)  # type: ignore[arg-type]
        samples.append(time.perf_counter_ns() - t0)
    assert out.decision == "allow", out.reason
    samples.sort()
    return statistics.median(samples) / 1000, samples[int(len(samples) * 0.99)] / 1000


def _cold(argv: list[str], stdin: bytes, runs: int, env: dict[str, str]) -> float:
    subprocess.run(argv, input=stdin, capture_output=True, env=env)  # fill the bytecode cache
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
        if proc.returncode not in (0, 1, 3):
            raise SystemExit(f"{argv[:3]} failed: {proc.stderr.decode()}")
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=9)
    opts = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "main.py").write_text("print('hi')\n")

        small = build_plan(1)
        session = open_session(small, "agent0", workspace=ws, stage="stage0")
        read = ToolCall("read_file", {"path": "src/main.py", "offset": 0, "limit": 4000})
        shell = ToolCall("shell", {"command": "grep -rn TODO src | head -20"})
        r_med, r_p99 = _latency(session, read, opts.calls)
        s_med, s_p99 = _latency(session, shell, max(1000, opts.calls // 4))

        big = build_plan(100)
        plan_path = Path(tmp) / "plan100.json"
        plan_path.write_text(big.to_json())
        loads, fast_loads = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            prepare(load_plan(plan_path))
            loads.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            load_for_agents(plan_path, ["agent42"])
            fast_loads.append(time.perf_counter() - t0)
        size_kb = plan_path.stat().st_size / 1024

        # Installed Python caches bytecode; a sandbox may turn that off
        # (PYTHONDONTWRITEBYTECODE), which would time compilation, not Charter.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        charter = str(Path(sys.executable).with_name("charter"))
        if not os.path.exists(charter):
            charter_cmd = [sys.executable, "-m", "charter.compiler"]
        else:
            charter_cmd = [charter]

        def cold_check(plan: Path, agent: str) -> float:
            """A cold `charter check` of one read_file call against ``plan``."""
            argv = [*charter_cmd, "check", str(plan), "--agent", agent, "--workspace", str(ws)]
            return _cold([*argv, "read_file", '{"path":"src/main.py"}'], b"", opts.runs, env)

        check_ms = cold_check(plan_path, "agent42")
        event = json.dumps(
            {
                "session_id": "bench",
                "cwd": str(ws),
                "hook_event_name": "PreToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": str(ws / "src" / "main.py")},
            }
        ).encode()
        hook_ms = _cold(
            [*charter_cmd, "hook", "claude-code", "--plan", str(plan_path), "--agent", "agent42"],
            event,
            opts.runs,
            env,
        )
        small_path = Path(tmp) / "plan1.json"
        small_path.write_text(small.to_json())
        hook_small_ms = _cold(
            [*charter_cmd, "hook", "claude-code", "--plan", str(small_path)], event, opts.runs, env
        )
        check_small_ms = cold_check(small_path, "agent0")
        base_ms = _cold([sys.executable, "-c", "pass"], b"", opts.runs, env)

    print(f"read_file decision   median {r_med:7.1f} us   p99 {r_p99:7.1f} us   (target <= 50)")
    print(f"shell decision       median {s_med:7.1f} us   p99 {s_p99:7.1f} us")
    print(
        f"100-agent plan load  median {statistics.median(loads) * 1000:7.1f} ms   "
        f"({size_kb:.0f} KiB: load_plan, digest of the models, prepare)"
    )
    print(
        f"100-agent plan load  median {statistics.median(fast_loads) * 1000:7.1f} ms   "
        "(load_for_agents, one agent: digest of the bytes, parse and validate it)"
    )
    print(f"cold charter check   median {check_ms:7.1f} ms   (100-agent plan; target <= 250)")
    print(f"cold hook            median {hook_ms:7.1f} ms   (100-agent plan; target <= 250)")
    print(f"cold charter check   median {check_small_ms:7.1f} ms   (1-agent plan)")
    print(f"cold hook            median {hook_small_ms:7.1f} ms   (1-agent plan)")
    print(f"python -c pass       median {base_ms:7.1f} ms   (interpreter start, for scale)")


if __name__ == "__main__":
    main()
