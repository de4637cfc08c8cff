"""Authored tools through the whole gate pipeline: import only after every
gate, digest pinning, the capability facade, result conversion, redaction of
exceptions, async entrypoints and the per-call deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.plan import Plan

SPEC = """\
description: {desc}
input_schema:
  type: object
  properties:
    x: {{type: string}}
    s: {{type: integer}}
    probe: {{type: boolean}}
capabilities: [{caps}]
approval_policy: {policy}
"""


def spec(desc: str, caps: str = "", policy: str = "auto", required: str = "") -> str:
    text = SPEC.format(desc=desc, caps=caps, policy=policy)
    if required:
        text = text.replace("capabilities:", f"  required: [{required}]\ncapabilities:")
    return text


TOOLS: dict[str, tuple[str, str]] = {
    "caps": (
        spec("capability probe", "fs.read"),
        "def execute(ctx, args):\n"
        "    if args.get('probe'):\n"
        "        return f\"{ctx.capability.can('fs.read')} {ctx.capability.can('fs.write')}\"\n"
        "    ctx.capability.require('fs.write')\n"
        "    (ctx.workspace / 'written.txt').write_text('x')\n"
        "    return 'wrote'\n",
    ),
    "marker": (
        spec("writes a marker when imported", policy="prompt", required="x"),
        "from pathlib import Path\n"
        "Path(__file__).with_name('IMPORTED').write_text('yes')\n"
        "def execute(ctx, args):\n"
        "    return 'ran'\n",
    ),
    "raiser": (
        spec("raises with a secret"),
        "def execute(ctx, args):\n"
        "    raise RuntimeError('login to https://bob:hunter2-pass@db.example failed; '\n"
        "                       'api_key=sk-live-0123456789abcdef')\n",
    ),
    "known_secret": (
        spec("raises with a value the run knows is secret"),
        "def execute(ctx, args):\n    raise ValueError('password s3cr3t-value-xyz was rejected')\n",
    ),
    "asyncer": (
        spec("async with every result field"),
        "import asyncio\n"
        "async def execute(ctx, args):\n"
        "    await asyncio.sleep(0.01)\n"
        "    return {'content': 'plain', 'model_output': 'for the model',\n"
        "            'display_output': 'for the operator', 'executionStarted': False,\n"
        "            'denial': 'none', 'approval': 'granted', 'rows': 3}\n",
    ),
    "sleeper": (
        spec("sleeps synchronously"),
        "import time\n"
        "def execute(ctx, args):\n"
        "    deadline = time.monotonic() + args['s']\n"
        "    while time.monotonic() < deadline and not ctx.cancelled.is_set():\n"
        "        time.sleep(0.01)\n"
        "    return 'woke'\n",
    ),
    "async_sleeper": (
        spec("sleeps asynchronously"),
        "import asyncio\n"
        "async def execute(ctx, args):\n"
        "    try:\n"
        "        await asyncio.sleep(args['s'])\n"
        "    except asyncio.CancelledError:\n"
        "        (ctx.workspace / 'CANCELLED').write_text('yes')\n"
        "        raise\n"
        "    return 'woke'\n",
    ),
    "ctxinfo": (
        spec("reports its context"),
        "def execute(ctx, args):\n"
        "    ctx.output.send('step one')\n"
        "    return {'content': 'ok', 'slot_id': ctx.slot_id, 'slot_path': ctx.slot_path,\n"
        "            'agent': ctx.turn.agent, 'stage': ctx.turn.stage, 'run': ctx.turn.run_id,\n"
        "            'call': ctx.turn.call_id, 'workspace': str(ctx.workspace)}\n",
    ),
    "failing_dict": (
        spec("returns an error dict"),
        "def execute(ctx, args):\n    return {'content': 'no such topic', 'is_error': True}\n",
    ),
}


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory, ak: Any) -> tuple[Plan, Path]:
    root = ak.write_core(tmp_path_factory.mktemp("core") / "p", TOOLS)
    return ak.compile_dir(root), root


@pytest.fixture
def call(core: tuple[Plan, Path], caller_for: Callable[..., Any]) -> Any:
    plan, root = core
    return caller_for(plan, "t-core", root)


def test_notes_core_project_note_end_to_end(
    tmp_path: Path, caller_for: Callable[..., Any], ak: Any
) -> None:
    project = ak.copy_notes_core(tmp_path / "notes")
    plan = ak.compile_dir(project)
    entry = plan.body.agents[0].tool("project_note")
    assert entry is not None and entry.authored is not None
    assert entry.authored.capabilities == ("fs.read", "fs.write")
    call = caller_for(plan, "notes-core", project)
    res = call("project_note", {"action": "append", "topic": "db", "line": "use sqlite"})
    assert res.ok and res.content == "Created note 'db'."
    assert res.data["execution_started"] is True
    assert (call.workspace / "notes" / "db.md").read_text().endswith("use sqlite\n")
    res = call("project_note", {"action": "lookup", "topic": "db"})
    assert res.ok and "use sqlite" in res.content and res.data["found"] is True
    # Its tool.yaml asks (approval_policy: prompt): both calls went to the provider.
    assert [r.tool for r in call.provider.requests] == ["project_note", "project_note"]
    bad = call("project_note", {"action": "lookup", "topic": "../etc"})
    assert bad.status == "invalid" and bad.gate == "schema"


def test_require_beyond_the_capabilities_list_is_an_error_result(call: Any) -> None:
    assert call("caps", {"probe": True}).content == "True False"
    res = call("caps", {})
    assert (res.status, res.rule) == ("error", "capability-not-granted")
    assert "'fs.write'" in res.content and "fs.read" in res.content
    assert not (call.workspace / "written.txt").exists()


def test_module_is_imported_only_after_every_gate(call: Any) -> None:
    marker = call.project / "agent" / "tools" / "marker" / "IMPORTED"
    marker.unlink(missing_ok=True)
    # Refused by the schema gate, then by the person: nothing of the module runs.
    assert call("marker", {}).gate == "schema"
    call.provider.kind = "deny"
    refused = call("marker", {"x": "a"})
    assert refused.gate == "approval" and not refused.executed
    assert not marker.exists()
    call.provider.kind = "once"
    assert call("marker", {"x": "a"}).content == "ran"
    assert marker.exists()


def test_a_module_edited_after_compile_is_refused_unimported(
    tmp_path: Path, caller_for: Callable[..., Any], ak: Any
) -> None:
    root = ak.write_core(tmp_path / "edited", {"marker": TOOLS["marker"]})
    plan = ak.compile_dir(root)
    module = root / "agent" / "tools" / "marker" / "module.py"
    marker = module.with_name("IMPORTED")
    original = module.read_text()
    module.write_text(original + "# edited after compile\n")
    call = caller_for(plan, "t-core", root)
    res = call("marker", {"x": "a"})
    assert (res.status, res.rule) == ("denied", "authored-module-changed")
    assert "changed since the plan was compiled" in res.content
    assert not marker.exists()
    # The same module, restored byte for byte, is accepted and imported.
    module.write_text(original)
    assert call("marker", {"x": "a"}).content == "ran" and marker.exists()
    module.unlink()
    gone = call("marker", {"x": "a"})
    assert (gone.status, gone.rule) == ("unavailable", "authored-module-missing")


def test_an_exception_with_a_secret_is_redacted(call: Any) -> None:
    res = call("raiser", {})
    assert (res.status, res.rule) == ("error", "tool-crashed")
    for text in (res.content, res.display or ""):
        assert "hunter2-pass" not in text and "sk-live-0123456789abcdef" not in text
    assert "RuntimeError" in res.content and "<redacted>" in res.content
    assert res.display is not None and "<redacted:api_key>" in res.display
    assert "module.py:" in res.display  # the operator sees where it was raised
    call.rt.redactor.add("s3cr3t-value-xyz", "DB_PASSWORD", "env")
    known = call("known_secret", {})
    assert "s3cr3t-value-xyz" not in known.content + (known.display or "")
    assert "password <redacted> was rejected" in known.content


def test_async_entrypoint_and_reserved_keys(call: Any, core: tuple[Plan, Path]) -> None:
    entry = core[0].body.agents[0].tool("asyncer")
    assert entry is not None and entry.authored is not None and entry.authored.is_async
    res = call("asyncer", {})
    assert res.ok and res.content == "for the model" and res.display == "for the operator"
    assert res.data["rows"] == 3 and res.data["execution_started"] is True
    assert not {"executionStarted", "denial", "approval"} & set(res.data)
    failed = call("failing_dict", {})
    assert (failed.status, failed.content) == ("error", "[error] no such topic")


def test_context_attributes_and_progress(call: Any) -> None:
    res = call("ctxinfo", {}, call_id="call-7")
    assert res.ok and res.content == "ok"
    d = res.data
    assert (d["slot_id"], d["slot_path"]) == ("ctxinfo", "agent/tools/ctxinfo")
    assert (d["agent"], d["stage"], d["run"], d["call"]) == ("t-core", "main", "run-1", "call-7")
    assert d["workspace"] == str(call.workspace.resolve())
    assert res.display is not None and "[progress]\nstep one" in res.display
    assert "step one" not in res.content


def test_a_call_is_bounded_by_the_deadline(
    core: tuple[Plan, Path], caller_for: Callable[..., Any]
) -> None:
    plan, root = core
    call = caller_for(plan, "t-core", root, timeout_s=1)
    t0 = time.monotonic()
    res = call("sleeper", {"s": 30})
    assert (res.status, res.rule) == ("timeout", "timeout")
    assert time.monotonic() - t0 < 3
    assert "did not finish within 1s" in res.content
    res = call("async_sleeper", {"s": 30})
    assert res.status == "timeout" and "it was cancelled" in res.content
    deadline = time.monotonic() + 2
    while not (call.workspace / "CANCELLED").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (call.workspace / "CANCELLED").exists()
    assert call("sleeper", {"s": 0}).content == "woke"


def test_run_cancellation_stops_waiting(
    core: tuple[Plan, Path], caller_for: Callable[..., Any]
) -> None:
    plan, root = core
    call = caller_for(plan, "t-core", root, timeout_s=30)
    call.rt.cancel.set()
    t0 = time.monotonic()
    res = call("sleeper", {"s": 30})
    assert (res.status, res.rule) == ("error", "cancelled")
    assert time.monotonic() - t0 < 2


def test_decide_never_imports(
    core: tuple[Plan, Path], caller_for: Callable[..., Any], ak: Any
) -> None:
    from charter.runtime.gates import decide
    from charter.runtime.results import ToolCall

    plan, root = core
    marker = root / "agent" / "tools" / "marker" / "IMPORTED"
    marker.unlink(missing_ok=True)
    call = caller_for(plan, "t-core", root)
    out = decide(call.session, ToolCall("marker", {"x": "a"}))
    assert out.decision == "ask" and not marker.exists()
    assert isinstance(call.provider, ak.Recorder) and not call.provider.requests
