"""Compile-time benchmark: projects of 50, 100 and 200 agents.

Each agent is a core plus a blueprint in one directory: 5 stages offering
30 tools between them (built-ins from both seeds), two authored tools and an
MCP server. Prints wall time and peak memory per size (each size compiled in
a fresh subprocess, so the peak is that compile's own), and the time per
agent, which should stay flat if growth is linear.

    python bench/compile.py [SIZES...]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

BUILTINS = [
    "read_file",
    "read_files",
    "write_file",
    "edit_file",
    "list_dir",
    "shell",
    "context_write",
    "context_append",
    "context_read",
    "context_delete",
    "context_list",
    "todo_add",
    "todo_done",
    "todo_note",
    "ask_user_text",
    "ask_user_choice",
    "ask_user_confirm",
    "present_for_review",
    "edit_document",
    "spawn_agent",
    "check_agent",
    "wait_for_agent",
    "send_to_agent",
    "kill_agent",
    "web_search",
    "web_fetch",
]

CORE = """agent:
  id: agent{n}
slots:
  tools: agent/tools
  mcp: agent/mcp
tools:
  toolsets: []
capabilities:
  defaults:
    "tool.call:*": {{}}
    "mcp.connect:docs": {{}}
    "mcp.call:docs": {{}}
"""

TOOL = """description: Tool {t} of agent {n}.
input_schema:
  type: object
  properties:
    topic: {{type: string}}
  required: [topic]
capability: tool.call:note{t}
"""

MCP = "command: docs-server\ntools:\n  include: [search, get_page]\n"


def blueprint(n: int) -> str:
    lines = [
        f'[agent]\nname = "agent{n}"\nentry_stage = "s0"\n',
        '[tool_permissions]\nshell = "ask"\n',
    ]
    for s in range(5):
        tools = BUILTINS[(s * 5) % len(BUILTINS) :] + BUILTINS
        offered = list(dict.fromkeys(tools))[:24] + ["note0", "note1", "docs__search"]
        mode = "output" if s == 4 else "interactive"
        lines.append(
            f'[stages.s{s}]\nmode = "{mode}"\nmax_revisits = 2\n'
            f"available_tools = {json.dumps(offered)}\n"
            f'[stages.s{s}.tool_permissions]\nwrite_file = "ask"\n'
        )
        if s < 4:
            lines.append(f'[[stages.s{s}.edges]]\nto = "s{s + 1}"\nhint = "next"\n')
    return "\n".join(lines)


def make_project(root: Path, agents: int) -> None:
    for n in range(agents):
        d = root / f"agent{n}"
        (d / "agent" / "mcp").mkdir(parents=True)
        (d / "agent.yaml").write_text(CORE.format(n=n))
        (d / "agent.leviath").write_text(blueprint(n))
        (d / "agent" / "mcp" / "docs.yaml").write_text(MCP)
        for t in range(2):
            tdir = d / "agent" / "tools" / f"note{t}"
            tdir.mkdir(parents=True)
            (tdir / "tool.yaml").write_text(TOOL.format(n=n, t=t))
            (tdir / "module.py").write_text("def execute(ctx, args):\n    return args\n")


CHILD = """
import json, sys, time, resource
from pathlib import Path
t0 = time.perf_counter()
from charter.compiler.frontends.project import load_project
from charter.compiler.compile import CompileOptions, compile_project
t1 = time.perf_counter()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
project = load_project(Path(sys.argv[1]), use_default_config=False)
t2 = time.perf_counter()
result = compile_project(project, CompileOptions("posix", "/bin/bash"))
t3 = time.perf_counter()
# Peak memory is the process's high-water mark above what the imports took
# (tracemalloc would be exact but slows the compile several times over).
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
errors = [str(d) for d in (*project.diagnostics, *result.diagnostics) if d.is_error]
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "compile": t3 - t2,
                  "peak_mib": peak / 2**20, "errors": errors[:3],
                  "agents": len(result.plan.body.agents) if result.plan else 0,
                  "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [50, 100, 200]
    print(
        f"{'agents':>6} {'load s':>8} {'compile s':>9} {'total s':>8} {'ms/agent':>9} "
        f"{'+rss MiB':>9} {'rss MiB':>8}"
    )
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            make_project(Path(tmp), size)
            out = subprocess.run(
                [sys.executable, "-c", CHILD, tmp], capture_output=True, text=True, check=True
            )
            r = json.loads(out.stdout)
            if r["errors"] or r["agents"] != size:
                print(f"compile failed: {r['errors']}", file=sys.stderr)
                return 1
            total = r["load"] + r["compile"]
            print(
                f"{size:>6} {r['load']:>8.3f} {r['compile']:>9.3f} {total:>8.3f} "
                f"{1000 * total / size:>9.2f} {r['peak_mib']:>9.1f} {r['maxrss_mib']:>8.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
