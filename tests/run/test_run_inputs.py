"""A broken call never ends the run: the gates answer it and the model goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from charter.runtime.audit import read_events


def test_a_lone_surrogate_in_arguments_is_refused_at_the_schema_gate(
    solo_run: Any, tmp_path: Path
) -> None:
    ran = solo_run("solo-surrogate.yaml", "--yolo", workdir=tmp_path)
    assert ran.code == 0, ran.stderr
    first = ran.of("tool_finished")[0]
    assert (first["decision"], first["gate"], first["rule"]) == (
        "deny",
        "schema",
        "invalid-unicode",
    )
    assert "$.path" in first["result"]
    assert not list(tmp_path.glob("a*.txt"))
    assert json.loads(ran.finished["output_text"]) == {"ok": True}
    audit = read_events(ran.run_dir / "audit.jsonl")
    assert audit.problems == []
    refused = [e for e in audit.events if e.get("rule") == "invalid-unicode"]
    assert refused and refused[0]["args_digest"].startswith("sha256:")
