from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from charter.compiler.diagnostics import Span
from charter.compiler.lint.suppress import apply_suppressions
from charter.compiler.render import render
from charter.compiler.rules import RULES, diag

SCHEMA_PATH = (
    Path(__file__).resolve().parent.parent / "fixtures" / "render" / "sarif-schema-2.1.0.json"
)
SCHEMA_SHA256 = "7402cdfd5bfbff98071b3358e573041b86adb7e1c6ec8743303f93715937c371"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    raw = SCHEMA_PATH.read_bytes()
    # The fixture must stay the official file, not a hand-edited copy.
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256
    schema = json.loads(raw)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def _sarif(golden_input: Any) -> dict[str, Any]:
    kept, suppressed = apply_suppressions(
        golden_input.diagnostics, golden_input.sources, golden_input.config_ignores
    )
    text = render(kept, "sarif", sources={}, root_uri=golden_input.root_uri, suppressed=suppressed)
    doc: dict[str, Any] = json.loads(text)
    return doc


def test_sarif_validates_against_the_official_schema(
    validator: jsonschema.Draft7Validator, golden_input: Any
) -> None:
    errors = sorted(validator.iter_errors(_sarif(golden_input)), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_schema_catches_a_broken_log(
    validator: jsonschema.Draft7Validator, golden_input: Any
) -> None:
    # Guard against a validator that accepts anything.
    doc = _sarif(golden_input)
    doc["runs"][0]["results"][0]["level"] = "fatal"
    del doc["runs"][0]["tool"]["driver"]["name"]
    assert len(list(validator.iter_errors(doc))) >= 2


def test_empty_run_is_valid(validator: jsonschema.Draft7Validator) -> None:
    doc = json.loads(render([], "sarif", sources={}))
    assert not list(validator.iter_errors(doc))
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["tool"]["driver"]["rules"] == []


def test_rules_results_and_locations_agree(golden_input: Any) -> None:
    run = _sarif(golden_input)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({r["id"] for r in rules})
    for rule in rules:
        doc = RULES[rule["id"]]
        assert rule["name"] == doc.name
        assert rule["shortDescription"]["text"] == doc.summary
        for part in (doc.why, doc.fix):
            assert part in rule["help"]["text"] and part in rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] == doc.severity.value
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
        if artifact["uri"].startswith("file://"):
            assert "uriBaseId" not in artifact
        else:
            assert artifact["uriBaseId"] == "PROJECTROOT" and not artifact["uri"].startswith("/")
    assert run["originalUriBaseIds"]["PROJECTROOT"]["uri"] == golden_input.root_uri
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    }
    assert "tools/odd%2C%20name%3A%20v2.yaml" in uris


def test_suppressed_results_carry_suppressions(golden_input: Any) -> None:
    run = _sarif(golden_input)["runs"][0]
    kinds = sorted(
        (r["ruleId"], r["suppressions"][0]["kind"]) for r in run["results"] if "suppressions" in r
    )
    assert kinds == [("CH109", "external"), ("CH201", "inSource"), ("CH205", "inSource")]


def _fingerprints(doc: dict[str, Any]) -> list[str]:
    return [r["partialFingerprints"]["charterFinding/v1"] for r in doc["runs"][0]["results"]]


def test_fingerprints_are_unique_and_survive_line_shifts(golden_input: Any) -> None:
    first = _fingerprints(_sarif(golden_input))
    assert len(set(first)) == len(first)
    assert _fingerprints(_sarif(golden_input)) == first

    # Two blank lines added at the top of every file move every finding.
    def moved(span: Span) -> Span:
        end = span.end_line + 2 if span.end_line is not None else None
        return span._replace(line=span.line + 2, end_line=end)

    shifted = [d._replace(span=moved(d.span)) for d in golden_input.diagnostics]
    before = _fingerprints(json.loads(render(golden_input.diagnostics, "sarif", sources={})))
    after = _fingerprints(json.loads(render(shifted, "sarif", sources={})))
    assert after == before


def test_same_finding_twice_gets_distinct_fingerprints() -> None:
    a = diag("duplicate-key", "twice", Span("a.toml", 1, 1), key_path="x")
    b = diag("duplicate-key", "twice", Span("a.toml", 9, 1), key_path="x")
    assert len(set(_fingerprints(json.loads(render([a, b], "sarif", sources={}))))) == 2


def test_columns_are_code_points_and_point_spans_have_no_end() -> None:
    d = diag("unknown-key", "m", Span("a.yaml", 2, 3))
    run = json.loads(render([d], "sarif", sources={}))["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 2, "startColumn": 3}
