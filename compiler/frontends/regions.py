"""Context regions of a blueprint: ``[context.regions.<name>]`` and a stage's
``[stages.<name>.context.regions]``.

Charter reads every region key the way Leviath does: a value Leviath refuses
when it loads the blueprint (``kind = "cusotm"``, ``budget = "lots"``,
``"150%"``) is an error here too, at its line and column, or ``charter
validate`` would pass a blueprint that does not start. The layout then reaches
the plan (``compiler/resolve/regions.py``) and the runtime lays it out; several
lints read it too: a seed that runs a command or calls tools before anyone is
asked, a required region no stage can fill, a compact edge that would
paraphrase a deliverable.

Seeds are the one place where Leviath is lenient: a seed table none of whose
keys it recognises is dropped and the region starts empty. Charter keeps such
keys (``extra`` on :class:`SeedTable`) so the linter can report them as
``region-seed-not-understood`` instead of refusing the file; a seed of the
wrong shape (a number, a list) or a recognised key with a value of the wrong
type is an error, as the published schema says.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)
from pydantic_core import PydanticCustomError

from charter.compiler.frontends.validation import InputModel, invalid_value, type_name

__all__ = [
    "RegionKind",
    "Region",
    "Seed",
    "SeedTable",
    "SeedToolCall",
    "SEED_KEYS",
    "parse_percentage",
]

RegionKind = Literal[
    "temporary",
    "pinned",
    "sliding_window",
    "compacting",
    "compact_history",
    "clearable",
    "hashmap",
    "hash_map",
    "checklist",
    "custom",
]

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def parse_percentage(text: str) -> float | None:
    """The fraction a budget string such as ``"35%"`` names, or None when it
    is not one Leviath accepts (a number followed by ``%``, greater than 0 and
    at most 100; whitespace around the parts is allowed)."""
    m = _PERCENT.match(text)
    if m is None:
        return None
    value = float(m.group(1))
    if not 0 < value <= 100:
        return None
    return value / 100


def _percentage(value: str) -> str:
    if parse_percentage(value) is not None:
        return value
    m = _PERCENT.match(value)
    if m is not None:
        raise invalid_value("'{value}' must be greater than 0% and at most 100%", value=value)
    raise invalid_value(
        "'{value}' is not a percentage; write a number followed by %, such as \"35%\"", value=value
    )


Percentage = Annotated[str, AfterValidator(_percentage)]
PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class SeedToolCall(InputModel):
    """One entry of a seed's ``tools`` list written as a table."""

    name: Annotated[str, Field(min_length=1)]
    # Passed to the tool as written; its keys are the tool's own.
    args: dict[str, Any] = {}


def _call_kind(value: Any) -> str:
    return "dict" if isinstance(value, dict | SeedToolCall) else "str"


SeedCallItem = Annotated[
    Annotated[str, Tag("str")] | Annotated[SeedToolCall, Tag("dict")],
    Discriminator(_call_kind),
]

# The keys Leviath looks for in a seed table, in the order it looks: the first
# one present decides what the seed is.
SEED_KEYS: tuple[str, ...] = (
    "glob",
    "files",
    "literal",
    "rhai",
    "command",
    "tool",
    "tools",
    "caller",
)


class SeedTable(InputModel):
    """A seed written as a table. Unknown keys are kept, not refused (see the
    module docs); the linter reports them."""

    model_config = ConfigDict(
        frozen=True, strict=True, extra="allow", populate_by_name=False, defer_build=True
    )

    glob: str | None = None
    files: tuple[str, ...] | None = None
    literal: str | None = None
    rhai: str | None = None
    command: str | None = None
    tool: str | None = None
    tools: tuple[SeedCallItem, ...] | None = None
    refresh: Literal["once", "each_stage"] | None = None
    caller: str | None = None

    @property
    def unknown_keys(self) -> tuple[str, ...]:
        return tuple(self.model_extra or ())

    @property
    def kind(self) -> str | None:
        """Which recognised key decides the seed, as Leviath picks it, or None
        when none does (the region then starts empty). An empty ``tools``
        list is no tool seed."""
        for key in SEED_KEYS:
            value = getattr(self, key)
            if value is None or (key == "tools" and not value):
                continue
            return key
        return None

    def tool_names(self) -> tuple[str, ...]:
        """The tools this seed calls at spawn (empty for other seeds)."""
        if self.kind == "tool" and self.tool is not None:
            return (self.tool,)
        if self.kind == "tools" and self.tools:
            return tuple(t if isinstance(t, str) else t.name for t in self.tools)
        return ()


def _seed_kind(value: Any) -> str:
    return "dict" if isinstance(value, dict | SeedTable) else "str"


def _seed_shape(value: Any) -> Any:
    # Said once, in the seed's own terms, instead of "not a valid string".
    if not isinstance(value, str | dict | SeedTable):
        raise PydanticCustomError(
            "wrong-type",
            "a seed is a caller-input key (a string) or a table (files, glob, literal, "
            "command, tools, ...), not {kind}",
            {"kind": type_name(value)},
        )
    return value


# A string is a caller-input key ("task", or "input" for the region's own name).
Seed = Annotated[
    Annotated[str, Tag("str")] | Annotated[SeedTable, Tag("dict")],
    Discriminator(_seed_kind),
    BeforeValidator(_seed_shape),
]


class Region(InputModel):
    """One context region, read as strictly as Leviath's loader reads it."""

    # Unset means temporary.
    kind: RegionKind | None = None
    budget: Percentage | None = None
    max_tokens: PositiveInt | None = None
    min_tokens: NonNegativeInt | None = None
    required: bool | None = None
    required_message: str | None = None
    volatility: Literal["stable", "grows", "rewritten"] | None = None
    summarizable: bool | None = None
    description: str | None = None
    describe_in_prompt: bool | None = None
    admission: Literal["evict", "reject"] | None = None
    seed: Seed | None = None
    max_items: PositiveInt | None = None
    strategy: Literal["per_item", "bulk", "compact"] | None = None
    overflow: NonNegativeInt | None = None
    compact_count: PositiveInt | None = None
    compact_at: Percentage | None = None
    threshold_tokens: PositiveInt | None = None
    source_region: str | None = None
    max_entries: PositiveInt | None = None
    script: str | None = None
    persistent: bool | None = None

    @model_validator(mode="after")
    def _custom_needs_script(self) -> Self:
        # Leviath refuses a custom region without its script at load.
        if self.kind == "custom" and not (self.script or "").strip():
            raise PydanticCustomError(
                "missing-key",
                'a region with kind = "custom" needs script = "<file>.rhai"',
            )
        return self

    @property
    def effective_kind(self) -> str:
        return self.kind or "temporary"

    @property
    def is_required(self) -> bool:
        return bool(self.required)

    @property
    def can_be_summarized(self) -> bool:
        return self.summarizable is not False

    def seed_table(self) -> SeedTable | None:
        return self.seed if isinstance(self.seed, SeedTable) else None

    def caller_seeded(self, name: str) -> bool:
        """Filled from the caller's input: a string seed, a ``caller`` table,
        or (with no seed at all) a region named ``task``."""
        if self.seed is None:
            return name == "task"
        if isinstance(self.seed, str):
            return True
        return self.seed.kind == "caller"
