"""The agent core manifest: ``agent.yaml``.

It names the core, picks built-in toolsets, points at the folders holding
authored tools, skills and MCP server manifests, and states approval policy
and capability grants. Every key is known; an unknown one is an error with a
did-you-mean, because the host refuses unknown keys too and a misspelt
``aproval`` would otherwise drop the author's policy on the floor.

``model``, ``ui`` and ``channels`` are accepted as opaque mappings: they
configure the host's model provider and chat front-ends, which Charter
neither checks nor compiles.

Where the host is lenient Charter reads the file the same way and warns
(:mod:`charter.compiler.frontends.normalize`): risk and approval words in any
case, a list of capability names as grants, keys the host's models ignore
(``dependencies.requirements``, ``capabilities.<other>``).

The global fallback file (``agents/agent.yaml`` above the cores, holding only
``model``, ``ui`` and ``approval``) is read by :func:`load_fallback_yaml`; its
approval block is the host's global approval layer for every core below it.
"""

import os
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import AfterValidator, field_validator
from pydantic_core import PydanticCustomError

from charter.compiler.diagnostics import Diagnostic, Severity, did_you_mean
from charter.compiler.frontends.base import Loaded, load_document
from charter.compiler.frontends.normalize import Normalizer
from charter.compiler.frontends.tool_yaml import (
    ApprovalPolicy,
    Capability,
    DisplayPolicy,
    ModelOutputPolicy,
    Risk,
)
from charter.compiler.frontends.validation import InputModel, invalid_value
from charter.compiler.rules import diag_at
from charter.compiler.sources.sourcemap import SourceMap

__all__ = [
    "BUILTIN_TOOLSETS",
    "DIRECTORY_SLOTS",
    "FALLBACK_KEYS",
    "AgentCore",
    "AgentFallback",
    "AgentInfo",
    "ApprovalSettings",
    "CapabilitySettings",
    "DependencySettings",
    "RuntimeSettings",
    "Slots",
    "ToolMetadata",
    "ToolsSettings",
    "is_fallback_shape",
    "load_agent_yaml",
    "load_fallback_yaml",
]

# The host's built-in toolsets and the tools each one brings.
BUILTIN_TOOLSETS: dict[str, tuple[str, ...]] = {
    "coding": (
        "read_file",
        "write_file",
        "patch",
        "search_files",
        "terminal",
        "web_extract",
        "skills_list",
        "skill_view",
        "skill_manage",
        "todo",
        "clarify",
        "session_search",
    ),
    "demiurge_control": (
        "tools_list",
        "task_list",
        "delegate_task",
        "task_status",
        "task_control",
        "yield_until",
        "evolve_core",
        "rollback_core",
    ),
    "schedule": ("schedule_manage",),
}

# Slots that name a folder the host scans. An absent folder is an empty slot
# (git stores no empty folder, so a fresh checkout of a real core lacks
# them); a file where a folder belongs, or a folder reached through a symlink
# out of the core, is an error.
DIRECTORY_SLOTS: tuple[str, ...] = ("tools", "skills", "mcp")

# The only keys of the global fallback file above the cores.
FALLBACK_KEYS: tuple[str, ...] = ("model", "ui", "approval")

_RISK_WORDS = ("low", "medium", "high", "critical")
_APPROVAL_WORDS = ("auto", "prompt", "deny")
_DEPENDENCY_KEYS = ("mode", "allow_additional_dependencies")
_CAPABILITY_KEYS = ("defaults", "slots")

# The host caps a turn at 90 model steps.
MAX_MODEL_STEPS = 90

_AGENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _toolset_name(value: str) -> str:
    if value not in BUILTIN_TOOLSETS:
        known = sorted(BUILTIN_TOOLSETS)
        hint = did_you_mean(value, known)
        text = f"unknown toolset '{value}'"
        text += f"; did you mean '{hint}'?" if hint else "; known toolsets: " + ", ".join(known)
        raise PydanticCustomError("unknown-toolset", text)
    return value


def _relative_path(value: str) -> str:
    """A path inside the core: relative, forward slashes, no ``..``."""
    if not value.strip():
        raise invalid_value("the path must not be empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise invalid_value("{value} contains control characters", value=repr(value))
    if "\\" in value:
        raise invalid_value("'{value}' uses backslashes; write paths with '/'", value=value)
    pure = PurePosixPath(value)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", value):
        raise invalid_value(
            "'{value}' is absolute; write a path relative to the folder holding agent.yaml",
            value=value,
        )
    if ".." in pure.parts:
        raise invalid_value("'{value}' climbs out of the agent core with '..'", value=value)
    return value


ToolsetName = Annotated[str, AfterValidator(_toolset_name)]
CorePath = Annotated[str, AfterValidator(_relative_path)]
# ``fs.read:`` with nothing after it is how YAML spells "granted, no options".
CapabilityOptions = dict[str, Any] | None


class AgentInfo(InputModel):
    id: str
    summary: str = ""

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not _AGENT_ID.match(value):
            raise invalid_value(
                "agent id '{value}' must start with a letter or digit and use only "
                "letters, digits, '_', '.' and '-'",
                value=value,
            )
        return value


class RuntimeSettings(InputModel):
    surface_root: CorePath = "agent"
    max_model_steps: int = MAX_MODEL_STEPS
    workspace: str | None = None

    @field_validator("max_model_steps")
    @classmethod
    def _steps_in_range(cls, value: int) -> int:
        if not 1 <= value <= MAX_MODEL_STEPS:
            raise invalid_value(
                "max_model_steps must be between 1 and {limit} (got {value})",
                limit=MAX_MODEL_STEPS,
                value=value,
            )
        return value

    @field_validator("workspace")
    @classmethod
    def _workspace_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise invalid_value("workspace must not be blank; leave it out for the default")
        return value


class Slots(InputModel):
    """Where the core's authored surfaces live, relative to agent.yaml."""

    soul: CorePath | None = None
    bootstrap: CorePath | None = None
    input: CorePath | None = None
    output: CorePath | None = None
    tools: CorePath | None = None
    skills: CorePath | None = None
    mcp: CorePath | None = None
    schedules: CorePath | None = None


class ToolMetadata(InputModel):
    """A per-tool override. Unset fields keep the tool's own value."""

    risk: Risk | None = None
    capability: Capability | None = None
    approval_policy: ApprovalPolicy | None = None
    model_output_policy: ModelOutputPolicy | None = None
    display_policy: DisplayPolicy | None = None
    enabled: bool | None = None


class ToolsSettings(InputModel):
    toolsets: tuple[ToolsetName, ...] = ()
    metadata: dict[str, ToolMetadata] = {}


class ApprovalSettings(InputModel):
    """The core's approval policy. The host takes the first of tools,
    capabilities, risks and default that matches a call."""

    default: ApprovalPolicy | None = None
    tools: dict[str, ApprovalPolicy] = {}
    capabilities: dict[Capability, ApprovalPolicy] = {}
    risks: dict[Risk, ApprovalPolicy] = {}


class CapabilitySettings(InputModel):
    """Grants: ``defaults`` apply to the whole core, ``slots`` to one slot
    path (such as ``agent/tools/project_note``). Option mappings such as
    ``{scope: workspace}`` are kept as written."""

    defaults: dict[Capability, CapabilityOptions] = {}
    slots: dict[CorePath, dict[Capability, CapabilityOptions]] = {}


class DependencySettings(InputModel):
    mode: str = "host_shared"
    allow_additional_dependencies: bool = False


class AgentCore(InputModel):
    """A validated agent.yaml."""

    schema_version: int = 1
    agent: AgentInfo
    runtime: RuntimeSettings = RuntimeSettings()
    slots: Slots = Slots()
    tools: ToolsSettings = ToolsSettings()
    approval: ApprovalSettings = ApprovalSettings()
    capabilities: CapabilitySettings = CapabilitySettings()
    dependencies: DependencySettings = DependencySettings()
    # Host settings Charter does not interpret.
    model: dict[str, Any] = {}
    ui: dict[str, Any] = {}
    channels: dict[str, Any] = {}

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != 1:
            raise invalid_value(
                "schema_version {value} is not supported; Charter reads version 1", value=value
            )
        return value

    @property
    def tools_root(self) -> str | None:
        """The authored tools' folder: only where ``slots.tools`` names one."""
        return self.slots.tools

    @property
    def mcp_root(self) -> str:
        """The MCP manifests' folder. The host scans ``<surface_root>/mcp``
        when ``slots.mcp`` names none, so a core cannot hide a server from
        Charter by leaving the slot out."""
        return self.slots.mcp or _under(self.runtime.surface_root, "mcp")

    @property
    def skills_root(self) -> str:
        """The skills folder; ``<surface_root>/skills`` by default, as the host's."""
        return self.slots.skills or _under(self.runtime.surface_root, "skills")

    @property
    def builtin_tools(self) -> tuple[str, ...]:
        """The built-in tools the chosen toolsets bring, in order, once each."""
        seen: dict[str, None] = {}
        for name in self.tools.toolsets:
            for tool in BUILTIN_TOOLSETS[name]:
                seen.setdefault(tool, None)
        return tuple(seen)


class AgentFallback(InputModel):
    """The global fallback file: host-wide model and display defaults, and the
    global approval layer."""

    model: dict[str, Any] = {}
    ui: dict[str, Any] = {}
    approval: ApprovalSettings = ApprovalSettings()


def _under(root: str, name: str) -> str:
    root = root.strip("/")
    return f"{root}/{name}" if root and root != "." else name


def is_fallback_shape(data: Any) -> bool:
    """Whether parsed agent.yaml data is a global fallback file rather than a
    core: no ``agent`` key, and nothing but ``model``, ``ui`` and ``approval``."""
    return isinstance(data, dict) and "agent" not in data and set(data) <= set(FALLBACK_KEYS)


def load_agent_yaml(path: Path, display: str, root: Path) -> Loaded[AgentCore]:
    """Read and validate agent.yaml. ``root`` is the folder holding it: the
    folders named by ``slots`` are looked up there. Never raises on file
    content."""

    def precheck(data: dict[str, Any], smap: SourceMap) -> list[Diagnostic]:
        return [*_normalize(data, smap), *_check_slot_dirs(data, smap, root)]

    return load_document(path, display, AgentCore, "yaml", precheck=precheck)


def load_fallback_yaml(path: Path, display: str) -> Loaded[AgentFallback]:
    """Read and validate the global fallback file. Never raises on file content."""

    def precheck(data: dict[str, Any], smap: SourceMap) -> list[Diagnostic]:
        n = Normalizer(smap)
        _normalize_approval(n, data.get("approval"))
        return n.diags

    loaded = load_document(path, display, AgentFallback, "yaml", precheck=precheck)
    if (
        loaded.model is None
        and loaded.diagnostics
        and all(d.name == "empty-file" for d in loaded.diagnostics)
    ):
        # The host reads an empty fallback file as no settings at all.
        return Loaded(display, AgentFallback(), loaded.smap, (), {})
    return loaded


def _normalize_approval(n: Normalizer, approval: Any) -> None:
    if not isinstance(approval, dict):
        return
    n.word(approval, "default", ("approval", "default"), _APPROVAL_WORDS)
    for part in ("tools", "capabilities", "risks"):
        n.words_in_map(approval.get(part), ("approval", part), _APPROVAL_WORDS)


def _normalize(data: dict[str, Any], smap: SourceMap) -> list[Diagnostic]:
    """Rewrite, in place and with a warning each, what the host normalises."""
    n = Normalizer(smap)
    tools = data.get("tools")
    metadata = tools.get("metadata") if isinstance(tools, dict) else None
    if isinstance(metadata, dict):
        for name, meta in metadata.items():
            where = ("tools", "metadata", name)
            n.word(meta, "risk", (*where, "risk"), _RISK_WORDS)
            n.word(meta, "approval_policy", (*where, "approval_policy"), _APPROVAL_WORDS)
    _normalize_approval(n, data.get("approval"))
    n.ignore_keys(
        data.get("slots"),
        ("slots",),
        Slots.model_fields,
        "the agent host accepts any slot name but reads only its own",
    )
    caps = data.get("capabilities")
    if isinstance(caps, dict):
        n.ignore_keys(
            caps,
            ("capabilities",),
            _CAPABILITY_KEYS,
            "the agent host reads grants only from capabilities.defaults and capabilities.slots",
        )
        n.names_to_mapping(caps, "defaults", ("capabilities", "defaults"))
        slots = caps.get("slots")
        if isinstance(slots, dict):
            for slot in list(slots):
                n.names_to_mapping(slots, slot, ("capabilities", "slots", slot))
    n.ignore_keys(
        data.get("dependencies"),
        ("dependencies",),
        _DEPENDENCY_KEYS,
        "the agent host's dependency settings are mode and allow_additional_dependencies; "
        "it drops any other key",
    )
    return n.diags


def _check_slot_dirs(data: dict[str, Any], smap: SourceMap, root: Path) -> list[Diagnostic]:
    """Each folder slot, where it exists, must be a folder inside the core.

    An absent folder is an empty slot, as it is to the host: git cannot store
    an empty folder, so real cores arrive without their empty ``agent/mcp``
    or ``agent/skills``. An absent folder whose name is one edit away from a
    folder that does exist is probably a typo and gets a warning.

    This reads the plain data so that it still runs when another part of the
    file fails validation; values validation rejects (wrong type, absolute,
    ``..``) are left to validation's own diagnostic."""
    out: list[Diagnostic] = []
    slots = data.get("slots")
    if not isinstance(slots, dict):
        return out
    try:
        base = root.resolve()
    except (OSError, RuntimeError):
        base = root.absolute()
    for slot in DIRECTORY_SLOTS:
        value = slots.get(slot)
        if not isinstance(value, str):
            continue
        try:
            _relative_path(value)
        except PydanticCustomError:
            continue
        loc = ("slots", slot)
        target = root / value
        problem: str | None = None
        severity = None
        try:
            if not target.exists():
                hint = _near_sibling(target, value)
                if hint is None:
                    continue
                problem = (
                    f"folder '{value}' does not exist, so the slot is empty; did you mean '{hint}'?"
                )
                severity = Severity.WARNING
            elif not target.is_dir():
                problem = f"'{value}' is a file, but slots.{slot} must name a folder"
            elif not _inside(target.resolve(), base):
                # A symlink pointing outside the core would let it load code
                # or servers from anywhere on disk.
                problem = f"'{value}' resolves outside the agent core (through a symlink)"
        except (OSError, RuntimeError, ValueError) as exc:
            problem = f"cannot inspect '{value}': {getattr(exc, 'strerror', None) or exc}"
        if problem is not None:
            out.append(
                diag_at(
                    "path-not-found",
                    problem,
                    smap,
                    loc,
                    help=f"the path is relative to the folder holding agent.yaml ({_shown(root)})",
                    severity=severity,
                )
            )
    return out


def _near_sibling(target: Path, value: str) -> str | None:
    """The slot path with its last part replaced by the name of an existing
    folder beside ``target`` that is close to it, or None."""
    parent = target.parent
    try:
        names = [p.name for p in parent.iterdir() if p.is_dir()] if parent.is_dir() else []
    except OSError:
        return None
    hint = did_you_mean(target.name, names)
    if hint is None:
        return None
    return (PurePosixPath(value).parent / hint).as_posix()


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def _shown(root: Path) -> str:
    text = os.fspath(root)
    return text if text not in ("", ".") else "the current folder"
