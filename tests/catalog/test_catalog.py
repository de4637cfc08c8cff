"""The built-in tool catalog: data integrity, seed conformance and the API.

Most checks are driven by data files under tests/fixtures/catalog/: adding a
case is adding a line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError

from charter.compiler.catalog import builtin as catalog
from charter.compiler.catalog.builtin import (
    BLUEPRINT_LOOSENABLE,
    BuiltinTool,
    CatalogError,
    DescriptionContext,
    builtin_tools,
    default_permission,
    impl_siblings,
    resolve_builtin,
)

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "catalog"
TOOLS = builtin_tools()


def _lines(name: str) -> list[str]:
    text = (FIX / name).read_text("utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def _unlisted_marker_split(name: str) -> tuple[list[str], list[str]]:
    """Rows before and after the `# --- unlisted` marker of a fixture."""
    listed: list[str] = []
    unlisted: list[str] = []
    target = listed
    for raw in (FIX / name).read_text("utf-8").splitlines():
        ln = raw.strip()
        if ln.startswith("# ---"):
            target = unlisted
        elif ln and not ln.startswith("#"):
            target.append(ln)
    return listed, unlisted


# --- coverage of the two seeds ----------------------------------------------

SEED_004 = (
    "read_file read_files write_file edit_file list_dir shell context_write context_append "
    "context_read context_delete context_list todo_add todo_done todo_note submit_output "
    "ask_user_text ask_user_choice ask_user_confirm present_for_review edit_document "
    "spawn_agent check_agent wait_for_agent send_to_agent kill_agent web_search web_fetch"
).split()
SEED_000 = (
    "read_file write_file patch search_files terminal web_extract skills_list skill_view "
    "skill_manage todo clarify session_search tools_list task_list delegate_task task_status "
    "task_control yield_until evolve_core rollback_core schedule_manage"
).split()


# Tools of Leviath's runtime that seed 004 does not list (its code's
# environment tools and fan_out), marked with the seed "leviath".
LEVIATH_ONLY = (
    "fan_out current_time system_info locale_info environment_info which_command runtime_info"
).split()


def test_every_tool_of_both_seeds_is_in_the_catalog() -> None:
    assert set(TOOLS) == set(SEED_004) | set(SEED_000) | set(LEVIATH_ONLY)
    assert {n for n, t in TOOLS.items() if "leviath" in t.seeds} == set(LEVIATH_ONLY)
    assert {n for n, t in TOOLS.items() if "004" in t.seeds} == set(SEED_004)
    assert {n for n, t in TOOLS.items() if "000" in t.seeds} == set(SEED_000)


def test_catalog_keys_are_canonical_names() -> None:
    for name, tool in TOOLS.items():
        assert tool.name == name
    assert "bash" not in TOOLS


# --- seed 004: default permissions --------------------------------------------

_LISTED, _UNLISTED = _unlisted_marker_split("default_permissions.txt")


@pytest.mark.parametrize("row", _LISTED + _UNLISTED)
def test_default_permission_matches_seed_004_table(row: str) -> None:
    name, expected = row.split()
    assert default_permission(name) == expected


def test_every_tool_missing_from_the_table_defaults_to_ask() -> None:
    listed = {row.split()[0] for row in _LISTED}
    for name, tool in TOOLS.items():
        if name not in listed:
            assert tool.default_permission == "ask", name
    # Every row of the table names a catalog tool (or an alias of one).
    assert all(resolve_builtin(n) is not None for n in listed)


def test_nothing_is_denied_by_default() -> None:
    assert all(t.default_permission != "deny" for t in TOOLS.values())


def test_blueprint_loosenable_is_the_web_pair() -> None:
    assert BLUEPRINT_LOOSENABLE == ("web_search", "web_fetch")
    for name in BLUEPRINT_LOOSENABLE:
        assert TOOLS[name].default_permission == "ask"
        assert not TOOLS[name].counts_as_work and TOOLS[name].capability == "network.fetch"


# --- seed 000: toolsets and registry metadata ---------------------------------


def test_toolsets_match_seed_000_exactly() -> None:
    expected: dict[str, tuple[str, ...]] = {}
    for row in _lines("toolsets.txt"):
        set_name, listed = row.split(":", 1)
        expected[set_name.strip()] = tuple(listed.split())
    assert dict(catalog.TOOLSETS) == expected
    for set_name, members in expected.items():
        for member in members:
            assert set_name in TOOLS[member].toolsets
    for name, tool in TOOLS.items():
        assert tool.toolsets == tuple(s for s in expected if name in expected[s])


def test_seed_004_only_tools_are_in_no_toolset() -> None:
    for name, tool in TOOLS.items():
        if tool.seeds == ("004",):
            assert tool.toolsets == (), name


@pytest.mark.parametrize("row", _lines("registry_metadata.txt"))
def test_registry_metadata(row: str) -> None:
    name, capability, risk, approval = row.split()
    tool = TOOLS[name]
    assert tool.capability == (None if capability == "-" else capability)
    assert (tool.risk, tool.approval) == (risk, approval)


def test_registry_metadata_covers_every_tool() -> None:
    assert {row.split()[0] for row in _lines("registry_metadata.txt")} == set(TOOLS)


def test_core_evolution_capabilities_name_the_tool() -> None:
    for name in ("evolve_core", "rollback_core"):
        assert TOOLS[name].capability == f"tool.call:{name}"
        assert TOOLS[name].host_only


# --- flags ---------------------------------------------------------------------


def test_blocking_tools() -> None:
    five = {"ask_user_text", "ask_user_choice", "ask_user_confirm", "present_for_review"}
    five.add("edit_document")
    assert set(catalog.BLOCKING_TOOLS) == five | {"clarify"}
    assert {n for n, t in TOOLS.items() if t.blocks_on_person} == set(catalog.BLOCKING_TOOLS)
    assert {n for n, t in TOOLS.items() if t.family in ("human", "review")} == set(
        catalog.BLOCKING_TOOLS
    )


def test_work_outbound_and_host_only_sets() -> None:
    work = {n for n, t in TOOLS.items() if t.counts_as_work}
    assert work == {"write_file", "edit_file", "patch", "submit_output"}
    # Seed 004: a shell call never counts as work, whatever it did.
    assert not TOOLS["shell"].counts_as_work and not TOOLS["terminal"].counts_as_work
    outbound = {n for n, t in TOOLS.items() if t.outbound}
    assert outbound == {"shell", "terminal", "web_search", "web_fetch", "web_extract"}
    assert {n for n, t in TOOLS.items() if t.host_only} == {"evolve_core", "rollback_core"}


# --- names, aliases, impl ------------------------------------------------------


def test_aliases_resolve() -> None:
    shell = resolve_builtin("shell")
    assert shell is not None and shell.aliases == ("bash",)
    assert resolve_builtin("bash") is shell
    assert default_permission("bash") == default_permission("shell") == "ask"
    assert shell.names == ("shell", "bash")


@pytest.mark.parametrize("name", ["Shell", "BASH", " shell", "shell ", "", "docs__search", "bash2"])
def test_unknown_or_misspelled_names_do_not_resolve(name: str) -> None:
    assert resolve_builtin(name) is None
    assert default_permission(name) == "ask"
    assert impl_siblings(name) == ()


def test_names_and_aliases_are_unique() -> None:
    spellings = [s for t in TOOLS.values() for s in t.names]
    assert len(spellings) == len(set(spellings))


@pytest.mark.parametrize(
    ("name", "siblings"),
    [
        ("shell", ("terminal",)),
        ("bash", ("terminal",)),
        ("terminal", ("shell",)),
        ("edit_file", ("patch",)),
        ("patch", ("edit_file",)),
        ("web_fetch", ("web_extract",)),
        ("web_extract", ("web_fetch",)),
        ("todo", ("todo_add", "todo_done", "todo_note")),
        ("spawn_agent", ("delegate_task",)),
        ("check_agent", ("task_status",)),
        ("wait_for_agent", ("yield_until",)),
        ("kill_agent", ("task_control",)),
        ("read_file", ("read_files",)),
        ("write_file", ()),
        ("web_search", ()),
    ],
)
def test_impl_siblings(name: str, siblings: tuple[str, ...]) -> None:
    assert impl_siblings(name) == siblings


def test_siblings_share_capability_and_fs_effects() -> None:
    # Two names for one implementation must not differ in what they are
    # allowed to touch, or the cheaper name becomes a way around a grant.
    for tool in TOOLS.values():
        for other in impl_siblings(tool.name):
            sib = TOOLS[other]
            assert sib.capability == tool.capability
            assert sib.outbound == tool.outbound
            assert sib.counts_as_work == tool.counts_as_work


# --- schemas -------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TOOLS))
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    tool = TOOLS[name]
    schema = tool.schema_dict()
    Draft202012Validator.check_schema(schema)
    Draft202012Validator.check_schema(tool.validation_schema())
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema.get("required", ())) <= set(schema["properties"])
    # Several model providers refuse combinators at the top of a tool schema;
    # cross-field rules live in input_rules instead.
    assert not {"oneOf", "anyOf", "allOf", "if", "then", "not", "$ref"} & set(schema)
    for prop, sub in schema["properties"].items():
        assert sub.get("description"), f"{name}.{prop} has no description"
    if tool.input_rules is not None:
        Draft202012Validator.check_schema(json.loads(tool.input_rules))


@pytest.mark.parametrize("name", list(TOOLS))
def test_schema_is_stored_as_canonical_json(name: str) -> None:
    tool = TOOLS[name]
    for text in (tool.input_schema, tool.input_rules):
        if text is not None:
            again = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
            assert again == text


def _calls() -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (FIX / "calls.jsonl").read_text("utf-8").splitlines() if ln]


@pytest.mark.parametrize(
    "case", _calls(), ids=lambda c: f"{c['tool']}-{'ok' if c['valid'] else 'bad'}"
)
def test_arguments_against_schema(case: dict[str, Any]) -> None:
    tool = resolve_builtin(case["tool"])
    assert tool is not None
    errors = list(Draft202012Validator(tool.validation_schema()).iter_errors(case["args"]))
    assert (not errors) == case["valid"], (case, [e.message for e in errors])


def test_every_tool_has_a_valid_and_an_invalid_call_on_file() -> None:
    seen: dict[str, set[bool]] = {}
    for case in _calls():
        tool = resolve_builtin(case["tool"])
        assert tool is not None
        seen.setdefault(tool.name, set()).add(case["valid"])
    for name in TOOLS:
        assert seen.get(name) == {True, False}, name


def test_schema_dict_is_a_fresh_copy() -> None:
    tool = TOOLS["read_file"]
    first = tool.schema_dict()
    first["properties"].clear()
    assert tool.schema_dict()["properties"]


# --- description templates ----------------------------------------------------

_OUTPUT = {"format": "json", "instructions": "One object per finding.", "example": '{"a": 1}'}
_CONTEXTS: list[DescriptionContext] = [
    {"shell": "/bin/bash", "platform": "linux", "output": None, "shell_timeout_secs": 60},
    {"shell": "cmd.exe /C", "platform": "windows", "output": None, "shell_timeout_secs": 5},
    {
        "shell": "/bin/zsh",
        "platform": "macos",
        "output": {**_OUTPUT},  # type: ignore[typeddict-item]
        "shell_timeout_secs": 60,
    },
    {
        "shell": "/bin/sh",
        "platform": "linux",
        "output": {"format": None, "instructions": None, "example": None},
        "shell_timeout_secs": 60,
    },
]
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)


@pytest.mark.parametrize("name", list(TOOLS))
def test_template_renders_with_the_documented_context(name: str) -> None:
    template = TOOLS[name].description_template
    used = jinja2.meta.find_undeclared_variables(_ENV.parse(template))
    assert used <= set(DescriptionContext.__annotations__)
    for ctx in _CONTEXTS:
        text = _ENV.from_string(template).render(**ctx)
        assert text.strip() and "{{" not in text and "{%" not in text


def test_shell_descriptions_name_the_resolved_shell() -> None:
    for name in ("shell", "terminal"):
        template = _ENV.from_string(TOOLS[name].description_template)
        assert "cmd.exe /C" in template.render(**_CONTEXTS[1])
        text = template.render(**_CONTEXTS[0])
        assert "/bin/bash" in text and "cmd.exe" not in text


def test_submit_output_description_carries_the_declared_shape() -> None:
    template = _ENV.from_string(TOOLS["submit_output"].description_template)
    plain = template.render(**_CONTEXTS[0])
    shaped = template.render(**_CONTEXTS[2])
    empty = template.render(**_CONTEXTS[3])
    assert plain == empty
    assert "Format" not in plain and "Example" not in plain
    for part in _OUTPUT.values():
        assert part in shaped
    assert shaped.startswith(plain)


def test_shell_hint_only_on_windows() -> None:
    hint = catalog.shell_hint("windows")
    assert hint is not None and "cmd.exe" in hint
    for word in ("cat", "grep", "ls", "wc -l"):
        assert word in hint
    assert catalog.shell_hint("linux") is None
    assert catalog.shell_hint("macos") is None


# --- immutability ----------------------------------------------------------------


def _walk(value: Any) -> None:
    if isinstance(value, tuple):
        for item in value:
            _walk(item)
    elif isinstance(value, BaseModel):
        # A nested model (a path argument) must itself be frozen, all the way down.
        assert value.model_config.get("frozen") is True, type(value)
        for field in type(value).model_fields:
            _walk(getattr(value, field))
    else:
        assert value is None or isinstance(value, str | bool | int), type(value)


@pytest.mark.parametrize("name", list(TOOLS))
def test_tool_is_deeply_immutable(name: str) -> None:
    tool = TOOLS[name]
    for field in BuiltinTool.model_fields:
        _walk(getattr(tool, field))
    hash(tool)  # every field hashable: nothing mutable hides inside
    with pytest.raises(ValidationError):
        tool.name = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        tool.aliases = ("x",)  # type: ignore[misc]


def test_catalog_mappings_are_read_only() -> None:
    with pytest.raises(TypeError):
        TOOLS["evil"] = TOOLS["shell"]  # type: ignore[index]
    with pytest.raises(TypeError):
        catalog.TOOLSETS["coding"] = ()  # type: ignore[index]
    assert isinstance(catalog.BLOCKING_TOOLS, tuple)
    assert builtin_tools() is TOOLS  # loaded once


def test_unknown_module_attribute() -> None:
    with pytest.raises(AttributeError):
        catalog.NOT_A_THING  # noqa: B018


def test_digest_is_stable_hex() -> None:
    digest = catalog.catalog_digest()
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert catalog._build(catalog._read_data()).digest == digest


# --- the loader refuses bad data --------------------------------------------------


def _data() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(catalog._read_data())
    return result


def _mutate_first(**changes: Any) -> dict[str, Any]:
    data = _data()
    data["tools"][0].update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_mutate_first(aliases=["write_file"]), "names both"),
        (_mutate_first(name="Read_File"), "tool name"),
        (_mutate_first(risk="severe"), "risk"),
        (_mutate_first(default_permission="maybe"), "default_permission"),
        (_mutate_first(capability="fs read"), "capability"),
        (_mutate_first(input_schema={"type": "object", "maximum": 1.5}), "floats"),
        (_mutate_first(input_schema=["not", "an", "object"]), "JSON object"),
        (_mutate_first(blocks_on_person="yes"), "blocks_on_person"),
        (_mutate_first(toolsets=["coding"]), "top-level toolsets"),
        (_mutate_first(extra_field=1), "extra_field"),
        (_mutate_first(seeds=[]), "seeds"),
        (_mutate_first(summary="   "), "blank"),
        ({**_data(), "toolsets": {"coding": ["nope"]}}, "unknown tool 'nope'"),
        ({**_data(), "toolsets": {"coding": ["todo", "todo"]}}, "twice"),
        ({**_data(), "catalog_version": 2}, "catalog_version"),
        ({**_data(), "surprise": 1}, "expected exactly the keys"),
        (
            {**_data(), "tools": [t for t in _data()["tools"] if t["name"] != "web_fetch"]},
            "blueprint-loosenable",
        ),
    ],
)
def test_loader_refuses_bad_data(data: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        catalog._build(json.dumps(data))


def test_loader_refuses_text_that_is_not_json() -> None:
    with pytest.raises(CatalogError, match="not valid JSON"):
        catalog._build("{")


# --- import hygiene ---------------------------------------------------------------


def test_runtime_catalog_stays_light() -> None:
    code = (
        "import sys\n"
        "from charter.compiler.catalog.builtin import builtin_tools, resolve_builtin\n"
        "own = ('charter.compiler', 'charter.compiler.catalog',\n"
        "       'charter.compiler.catalog.builtin')\n"
        "others = lambda: [m for m in sys.modules\n"
        "                  if m.startswith('charter.compiler') and m not in own]\n"
        "assert not others(), 'compiler'\n"
        "assert 'jsonschema' not in sys.modules and 'jinja2' not in sys.modules, 'heavy'\n"
        "builtin_tools(); resolve_builtin('bash')\n"
        "assert not others(), 'compiler'\n"
        "assert 'jsonschema' not in sys.modules and 'jinja2' not in sys.modules, 'heavy'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
