"""Demiurge's authored tools import ``demiurge.sdk`` and run under Charter:
the SDK's names with Demiurge's meaning, helpers beside ``module.py`` reached
by relative imports, and ``ctx.capability`` taking Demiurge's ``slot_path``."""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _support.corpora import SKIP_REASON, corpora_root

from charter.runtime.tools.authored import _load

SPEC = """\
entrypoint: module:execute
description: "{desc}"
input_schema:
  type: object
  properties:
    text:
      type: string
  additionalProperties: false
capabilities: [{caps}]
"""

# A tool written the way Demiurge's packaged tools are: the SDK's ToolResult,
# a helper package beside module.py imported relatively, and a capability
# check that names the tool's own slot.
SEARCHER = """\
from __future__ import annotations

import asyncio

from demiurge.sdk import ToolResult

from .finder.words import count_words


async def execute(ctx, args):
    ctx.capability.require("fs.read", slot_path=ctx.slot_path)
    n = await asyncio.to_thread(count_words, args.get("text", ""))
    return ToolResult(
        content=f"{n} words",
        data={"words": n},
        model_output=f"the text has {n} words",
        display_output=f"counted {n}",
    )
"""

ELSEWHERE = """\
from demiurge.sdk import ToolResult


def execute(ctx, args):
    ctx.capability.require("fs.read", slot_path="agent/tools/another")
    return ToolResult(content="reached")
"""


def _core(root: Path, ak: Any) -> Path:
    ak.write_core(
        root,
        {
            "searcher": (SPEC.format(desc="counts words", caps="fs.read"), SEARCHER),
            "elsewhere": (SPEC.format(desc="asks for another slot", caps="fs.read"), ELSEWHERE),
        },
    )
    helper = root / "agent" / "tools" / "searcher" / "finder"
    helper.mkdir()
    (helper / "__init__.py").write_text("")
    (helper / "words.py").write_text("def count_words(text):\n    return len(text.split())\n")
    return root


def test_a_tool_written_for_demiurge_runs_with_its_helpers(
    tmp_path: Path, ak: Any, caller_for: Callable[..., Any]
) -> None:
    root = _core(tmp_path / "core", ak)
    call = caller_for(ak.compile_dir(root), "t-core", root)
    res = call("searcher", {"text": "one two three"})
    assert res.ok, res
    assert res.content == "the text has 3 words"  # model_output, as in Demiurge
    assert res.display == "counted 3" and res.data["words"] == 3


def test_a_capability_of_another_slot_is_refused(
    tmp_path: Path, ak: Any, caller_for: Callable[..., Any]
) -> None:
    root = _core(tmp_path / "core", ak)
    call = caller_for(ak.compile_dir(root), "t-core", root)
    res = call("elsewhere", {"text": "x"})
    assert (res.status, res.rule) == ("error", "capability-not-granted"), res


@pytest.fixture
def demiurge() -> Path:
    root = corpora_root()
    if root is None or not (root / "demiurge").is_dir():
        pytest.skip(SKIP_REASON)
    return root / "demiurge"


def test_the_real_assistant_cores_echo_tool_runs(
    demiurge: Path, tmp_path: Path, ak: Any, caller_for: Callable[..., Any]
) -> None:
    core = tmp_path / "assistant"
    shutil.copytree(demiurge / "agents" / "assistant", core)
    call = caller_for(ak.compile_dir(core), "assistant", core)
    res = call("echo", {"text": "hello"})
    assert res.ok and res.content == "echo: hello", res


def _real_modules(demiurge: Path) -> list[Path]:
    tools = sorted((demiurge / "package-repository" / "tool").glob("*/module.py"))
    return [demiurge / "agents" / "assistant" / "agent" / "tools" / "echo" / "module.py", *tools]


def test_every_real_authored_tool_gets_past_the_sdk_import(demiurge: Path) -> None:
    # All thirteen import ToolResult from demiurge.sdk. The packaged ones
    # also import a helper library that Demiurge's installer copies beside
    # module.py (package-repository/lib/, not part of the corpora): what may
    # still fail is that import, never the SDK's.
    modules = _real_modules(demiurge)
    assert len(modules) == 13
    for path in modules:
        data = path.read_bytes()
        assert b"from demiurge.sdk import ToolResult" in data
        digest = hashlib.sha256(data).hexdigest()
        try:
            module = _load(path, data, digest, path.parent.name)
        except ModuleNotFoundError as exc:
            assert exc.name is not None and not exc.name.startswith("demiurge"), exc
            assert path.parent.name != "echo"
            helper = exc.name.rsplit(".", 1)[-1]
            assert f"from .{helper}" in data.decode(), exc
        else:
            assert callable(module.execute)
    assert "demiurge.sdk" in sys.modules
