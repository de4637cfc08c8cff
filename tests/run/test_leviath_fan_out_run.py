"""Leviath's data-analyst, unmodified, runs end to end under a scripted model
that walks every stage: scope, the fan_out split with its gather_worker
workers in parallel, build, present (entered over a compact edge, so the model
summarizes the build stage first) (issue 25: it stranded at its split
stage with exit 4). The workers' rows reach the build stage. Its scope stage
may not end before the required schema and sources_index sections are
written: the first try is sent back, as Leviath sends it back."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _support.corpora import SKIP_REASON, leviath_root

SCRIPT = """turns:
  - {stage: scope, text: "Two slices, by region.", edge: split}
  - stage: scope
    tool_calls:
      - {name: context_write, arguments: {region: schema, content: "region,value,source_ref"}}
      - {name: context_write, arguments: {region: sources_index, content: "none yet"}}
  - {stage: scope, edge: split}
  - stage: split
    tool_calls:
      - name: fan_out
        arguments:
          items:
            - {id: north, context: {slice: north, columns: [region, value, source_ref]}}
            - {id: south, context: {slice: south, columns: [region, value, source_ref]}}
  - stage: build
    tool_calls:
      - name: write_file
        arguments: {path: data/dataset.csv, content: "region,value,source_ref\\nnorth,1,a\\n"}
  - {stage: build, text: "Written and checked.", edge: present}
  - {stage: present, text: "Built data/dataset.csv from two regions' rows."}
  - {stage: present, text: "Rows for north and south."}
  - stage: present
    tool_calls:
      - {name: submit_output, arguments: {content: "## Findings\\n- one row per region"}}
agents:
  data-analyst:
    - stage: gather_worker
      tool_calls:
        - {name: submit_output, arguments: {content: "region,value,source_ref\\nnorth,1,a"}}
"""


def test_the_data_analyst_runs_its_workers_and_delivers(
    charter_run: Any, scripted_model: Any, tmp_path: Path
) -> None:
    leviath = leviath_root()
    if leviath is None:
        pytest.skip(SKIP_REASON)
    agent = tmp_path / "data-analyst"
    shutil.copytree(leviath / "agents" / "data-analyst", agent)
    provider = scripted_model(SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(
        agent,
        "--agent",
        "data-analyst",
        "--model",
        "script:unused",
        "--yolo",
        "--task",
        "Tabulate a value by region",
        workdir=work,
    )
    assert ran.code == 0, ran.finished
    [sent_back] = ran.of("required_regions")
    assert (sent_back["stage"], sent_back["empty"]) == ("scope", ["schema", "sources_index"])
    stages = [e["stage"] for e in ran.of("stage_entered", agent="main")]
    assert stages == ["scope", "split", "build", "present"]
    workers = ran.of("fan_out_worker")
    assert [w["item"] for w in workers] == ["north", "south"]
    assert {
        e["stage"] for e in ran.events if e["kind"] == "stage_entered" and e["agent"] != "main"
    } == {"gather_worker"}
    build = next(r for r in provider.requests if r.stage == "build")
    assert "## south\nregion,value,source_ref" in build.system
    # the compact edge into present: the model summarized the build stage's
    # conversation and the workers' rows (a region that is not pinned), and
    # present starts from those summaries
    talk, rows, final = [r for r in provider.requests if r.stage == "present"]
    assert not talk.tools and "write_file" in talk.messages[-1].content
    assert not rows.tools and "'worker_rows'" in rows.messages[-1].content
    assert "summarized:\nBuilt data/dataset.csv" in final.messages[-1].content
    assert "## worker_rows\nRows for north and south." in final.system
    assert [e["what"] for e in ran.of("context_compacted")] == ["conversation", "worker_rows"]
    assert (work / "data" / "dataset.csv").is_file()
