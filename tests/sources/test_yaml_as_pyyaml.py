"""Charter's YAML reader types every value as PyYAML's safe loader does.

The agent host loads its files with ``yaml.safe_load``, so a scalar must mean
the same to Charter. The golden data (``tests/fixtures/yaml/scalars/``) lists
scalars and keys with the diagnostics each must produce; every value Charter
accepts is compared with what ``yaml.safe_load`` builds from the same text.
"""

from __future__ import annotations

import datetime
import math
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from charter.compiler.sources.text import SourceText
from charter.compiler.sources.yaml_reader import read_yaml

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "yaml" / "scalars"
_ERRORS = {"CH132", "CH202", "CH101"}


def _cases(name: str) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for line in (DATA / name).read_text("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        text, _, codes = line.partition("\t")
        out.append((text, () if codes.strip() == "-" else tuple(codes.strip().split(","))))
    return out


def _read(text: str) -> tuple[Any, list[str]]:
    data, _, diags = read_yaml(SourceText(Path("t.yaml"), "t.yaml", text))
    return data, sorted(d.code for d in diags)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (1 is not True, 1.0 is not 1, a date is not text)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _pure_python_load(text: str) -> Any:
    # The host calls yaml.safe_load: the pure-Python SafeLoader, not libyaml.
    return yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - SafeLoader


@pytest.mark.parametrize(("text", "codes"), _cases("scalars.tsv"), ids=lambda v: str(v))
def test_scalar_is_typed_as_pyyaml_types_it(text: str, codes: tuple[str, ...]) -> None:
    doc = f"k: {text}\n"
    data, got = _read(doc)
    assert got == sorted(codes), (text, got)
    if set(codes) & _ERRORS:
        with pytest.raises((yaml.YAMLError, ValueError)):
            _pure_python_load(doc)
        return
    theirs = _pure_python_load(doc)["k"]
    assert _same(data["k"], theirs), (text, data["k"], theirs)


@pytest.mark.parametrize(("text", "codes"), _cases("keys.tsv"), ids=lambda v: str(v))
def test_a_key_pyyaml_does_not_read_as_text_is_reported(text: str, codes: tuple[str, ...]) -> None:
    doc = f"{text}: v\n"
    data, got = _read(doc)
    assert got == sorted(codes), (text, got)
    if set(codes) & _ERRORS:
        return
    [theirs] = _pure_python_load(doc)
    # Charter keeps the key as written (so messages name it); the warning
    # is there exactly when PyYAML's key is something else.
    [ours] = data
    assert (ours == theirs) == (not codes), (text, ours, theirs)


def test_merge_keys_merge_as_in_pyyaml_and_keep_positions() -> None:
    doc = "m:\n  a: 5\n  <<: {a: 9, c: 3}\nq:\n  <<: [{x: 1}, {w: 2, y: 3}]\n  z: 0\n"
    data, smap, diags = read_yaml(SourceText(Path("m.yaml"), "m.yaml", doc))
    assert diags == []
    assert (
        data
        == _pure_python_load(doc)
        == {"m": {"a": 5, "c": 3}, "q": {"x": 1, "w": 2, "y": 3, "z": 0}}
    )
    c = smap.value_span(("m", "c"))
    y = smap.value_span(("q", "y"))
    assert (c.line, c.col, y.line, y.col) == (3, 17, 5, 26)
    assert smap.get(("m", "<<")) is None


def test_a_key_two_merged_mappings_give_is_a_duplicate() -> None:
    # PyYAML 6.0.3 keeps the last 'name' but the first 'x': the result
    # depends on string identity, so Charter refuses to guess.
    data, codes = _read("q:\n  <<: [{name: 1, x: 1}, {name: 2, x: 2}]\n")
    assert codes == ["CH107", "CH107"] and data == {"q": {"name": 1, "x": 1}}
    data, codes = _read("q:\n  <<: [{name: 1}, {name: 2}]\n  name: 3\n")
    assert codes == [] and data == {"q": {"name": 3}}


def test_a_merge_key_without_a_mapping_is_unloadable() -> None:
    data, codes = _read("m:\n  <<: 5\n  a: 1\n")
    assert codes == ["CH132"] and data == {"m": {"a": 1}}
    with pytest.raises(yaml.YAMLError):
        _pure_python_load("m:\n  <<: 5\n  a: 1\n")


def test_a_plain_timestamp_is_a_date_value() -> None:
    data, codes = _read("since: 2024-01-01\n")
    assert codes == [] and data["since"] == datetime.date(2024, 1, 1)


def _corpus() -> Path | None:
    root = os.environ.get("CHARTER_CORPORA")
    path = Path(root) if root else Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
    return path / "demiurge" if (path / "demiurge").is_dir() else None


CORPUS = _corpus()


@pytest.mark.skipif(CORPUS is None, reason="the real-file corpora (../shared/corpora) are absent")
def test_every_real_demiurge_yaml_file_reads_as_pyyaml_reads_it() -> None:
    assert CORPUS is not None
    files = sorted(CORPUS.rglob("*.yaml"))
    assert len(files) > 20
    for path in files:
        text = path.read_text("utf-8")
        data, smap, diags = read_yaml(SourceText(path, path.name, text))
        assert not [d for d in diags if d.is_error], (path, diags)
        assert data == (_pure_python_load(text) or None), path
