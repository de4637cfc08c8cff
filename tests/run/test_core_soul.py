"""A Demiurge core's SOUL.md is in its system prompt, first, as Demiurge's
context assembler puts it; the plan carries the text (the run reads no file)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.models.script import ScriptProvider
from tests._support.corpora import corpora_root

CORPORA = corpora_root()
ASSISTANT = CORPORA / "demiurge" / "agents" / "assistant" if CORPORA else None
pytestmark = pytest.mark.skipif(
    ASSISTANT is None or not ASSISTANT.is_dir(), reason="the Demiurge corpus is absent"
)


def _soul() -> str:
    assert ASSISTANT is not None
    return (ASSISTANT / "agent" / "SOUL.md").read_text("utf-8").strip()


def test_the_plan_carries_the_cores_soul(tmp_path: Path) -> None:
    assert ASSISTANT is not None
    root = tmp_path / "assistant"
    shutil.copytree(ASSISTANT, root)
    result = compile_project(
        load_project(root, use_default_config=False), CompileOptions("posix", "/bin/bash")
    )
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    [agent] = result.plan.body.agents
    assert agent.soul == _soul()
    # Read when compiling, not when running: an edit after compiling does
    # not reach a run of the compiled plan.
    (root / "agent" / "SOUL.md").write_text("something else")
    assert agent.soul == _soul()


def test_a_run_puts_the_soul_first_in_the_system_prompt(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert ASSISTANT is not None
    root = tmp_path / "assistant"
    shutil.copytree(ASSISTANT, root)
    script = tmp_path / "model.yaml"
    script.write_text("turns:\n  - {text: Hello.}\n")
    provider = ScriptProvider.from_file(script, record=True)
    import charter.runtime.models as models

    monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(
        root, "--agent", "assistant", "--model", "script:unused", "--task", "hi", workdir=work
    )
    assert provider.requests, ran.stderr
    system = provider.requests[0].system
    assert system.startswith(_soul())
