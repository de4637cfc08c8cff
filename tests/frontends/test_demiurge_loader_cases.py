"""The agent host's loader and registry cases, rebuilt as Charter fixtures.

``tests/fixtures/demiurge/loader/cases.tsv`` holds one edit of a small core
(``loader/base/``) per line with what the host does with the result (loads
or refuses it, as its own loader and registry tests establish) and the rules
Charter must report. Charter must agree: a core the host loads has no error,
a core it refuses has at least one. Adding a case is adding a line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from charter.compiler.check import check_project
from charter.compiler.compile import CompileOptions
from charter.compiler.frontends.project import load_project

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "demiurge" / "loader"
OPTIONS = CompileOptions("posix", "/bin/bash", render_descriptions=False)


def _cases() -> list[Any]:
    out = []
    for line in (DATA / "cases.tsv").read_text("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        change, host, codes, why = line.split("\t")
        wanted = () if codes == "-" else tuple(codes.split(","))
        out.append(pytest.param(change, host, wanted, id=why))
    return out


def _apply(core: Path, change: str) -> None:
    if change == "-":
        return
    for part in change.split(" && "):
        _apply_one(core, part)


def _apply_one(core: Path, change: str) -> None:
    kind, file, rest = change.split(" ", 2)
    target = core / file
    if kind == "write":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.loads(rest), "utf-8")
        return
    assert kind in ("set", "del"), change
    decoder = json.JSONDecoder()
    path, end = decoder.raw_decode(rest)
    data = yaml.safe_load(target.read_text("utf-8"))
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    if kind == "del":
        del node[path[-1]]
    else:
        node[path[-1]] = json.loads(rest[end:])
    target.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")


@pytest.mark.parametrize(("change", "host", "codes"), _cases())
def test_charter_agrees_with_the_host(
    change: str, host: str, codes: tuple[str, ...], tmp_path: Path
) -> None:
    core = tmp_path / "base"
    shutil.copytree(DATA / "base", core)
    _apply(core, change)
    project = load_project(core, use_default_config=False)
    diags = [*project.diagnostics, *check_project(project, OPTIONS)]
    shown = [f"{d.span}: {d.code} {d.message}" for d in diags]
    errors = [d for d in diags if d.is_error]
    if host == "loads":
        assert not errors, shown
    else:
        assert errors, shown
    got = sorted(d.code for d in diags if d.code in set(codes))
    assert got == sorted(codes), shown
