"""Finding and loading every file of a project.

A project is a directory. The rules (documented in docs/projects.md):

* An **agent directory** holds ``agent.yaml`` (an agent core), a blueprint
  (``agent.leviath`` or ``blueprint.toml``), or both. Its blueprint may keep
  stages in ``stages/<name>.toml``, one stage per file.
* A core and a blueprint in the same directory are **one agent**: the core
  contributes toolsets, authored tools, MCP servers, capability grants and
  approval policy; the blueprint contributes stages and tool permissions.
* If the project root is an agent directory, the project is that one agent.
  Otherwise every agent directory below the root (at most three levels down,
  skipping hidden, virtual-environment and dependency folders, and never
  looking inside an agent directory) is one agent of the project.
* An ``agent.yaml`` holding only ``model``, ``ui`` and ``approval`` (no
  ``agent``) is the agent host's **global fallback file**, not a core: its
  folder is not an agent directory, discovery goes on below it, and its
  approval block is the global approval layer of every core found below it.
  A fallback-shaped file with no core below it is read as a core (and is
  then missing its ``agent`` key).
* Authored tools are read from ``slots.tools`` (none when it is not set) and
  MCP manifests from ``slots.mcp``, or ``<surface_root>/mcp`` when it is not
  set, as the host does. An absent slot folder is an empty slot.
* ``charter.toml`` at the root or in an agent directory holds the project's
  lint ignores and policy self-tests.
* The user's config is the file given with ``--config``, else the default
  location (see :func:`charter.compiler.frontends.config_toml.default_config_path`);
  a missing default file simply means no user config.

Every display path is relative to the project root with forward slashes, so
diagnostics and plans do not depend on where the project was checked out.
"""

from __future__ import annotations

import gc
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.frontends.base import Loaded
from charter.compiler.frontends.blueprint import Blueprint, StageTable, load_blueprint
from charter.compiler.frontends.charter_toml import SETTINGS_FILE, ProjectSettings, load_settings
from charter.compiler.frontends.config_toml import (
    UserConfig,
    default_config_path,
    load_user_config,
)
from charter.compiler.frontends.stage_toml import load_stage_file, merge_stages
from charter.compiler.rules import diag
from charter.compiler.sources.text import SourceText
from charter.runtime.policy.workspace import RECORDS_DIR

if TYPE_CHECKING:
    # Imported where an agent has a core: a blueprint-only project never
    # builds the core, tool or MCP manifest models.
    from charter.compiler.frontends.agent_yaml import AgentCore, AgentFallback
    from charter.compiler.frontends.mcp_manifest import McpServer
    from charter.compiler.frontends.script_tools import ScriptToolSource
    from charter.compiler.frontends.tool_yaml import ToolSpec

__all__ = [
    "AgentSources",
    "AuthoredToolSource",
    "Project",
    "find_agent_dirs",
    "is_agent_dir",
    "load_project",
]

CORE_FILE = "agent.yaml"
BLUEPRINT_FILES = ("agent.leviath", "blueprint.toml")
_SKIP_DIRS = {"node_modules", "__pycache__", "venv", ".venv", "site-packages", "target", "build"}
_MAX_DEPTH = 3


# The per-file records are NamedTuples (defined at every start-up, they cost
# a tenth of a frozen dataclass to define); Project stays a dataclass for its
# default_factory fields.
class AuthoredToolSource(NamedTuple):
    """One authored tool's folder and its loaded tool.yaml."""

    tool_id: str
    directory: str  # display path of the tool's folder
    spec: Loaded[ToolSpec]


class AgentSources(NamedTuple):
    """Everything loaded for one agent. Any part may be missing or invalid;
    the diagnostics say so."""

    directory: str  # display path of the agent directory ("." for the root)
    core: Loaded[AgentCore] | None = None
    tools: tuple[AuthoredToolSource, ...] = ()
    mcp: tuple[Loaded[McpServer], ...] = ()
    blueprint: Loaded[Blueprint] | None = None
    stage_files: tuple[Loaded[StageTable], ...] = ()
    # The global fallback file above this agent's core, if any: its approval
    # is the host's global approval layer for the core.
    fallback: Loaded[AgentFallback] | None = None
    # Leviath script tools in <agent>/tools/*.rhai (read for blueprints only).
    scripts: tuple[ScriptToolSource, ...] = ()

    @property
    def name(self) -> str:
        bp = self.blueprint.model if self.blueprint else None
        if bp is not None:
            return bp.agent.name
        core = self.core.model if self.core else None
        if core is not None and core.agent is not None and core.agent.id:
            return core.agent.id
        return Path(self.directory).name if self.directory != "." else "agent"


@dataclass(frozen=True)
class Project:
    """Every agent, config and source file loaded from one project directory."""

    root: Path
    agents: tuple[AgentSources, ...]
    config: Loaded[UserConfig] | None
    diagnostics: tuple[Diagnostic, ...]
    # display path -> text lines, for renderers and inline suppressions
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # display path -> sha256 of the bytes read, for the plan
    digests: dict[str, str] = field(default_factory=dict)
    # charter.toml files: (the agent they belong to, or None at the root; the file)
    settings: tuple[tuple[str | None, Loaded[ProjectSettings]], ...] = ()
    # Script tools of the user's own tools folder (tools/ beside config.toml),
    # offered to every blueprint; an agent's own tools/ shadows them.
    user_scripts: tuple[ScriptToolSource, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


# A core names itself with a top-level ``agent:``; a file holding that line
# is a core without being parsed here.
_AGENT_KEY = re.compile(r"""^(?:agent|'agent'|"agent")[ \t]*:""", re.M)


def is_fallback_file(path: Path) -> bool:
    """Whether ``path`` (an agent.yaml) has the shape of the host's global
    fallback file. A file that cannot be read or parsed is not one: loading
    it as a core reports why."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeError):
        return False
    if _AGENT_KEY.search(text):
        return False
    from charter.compiler.frontends.agent_yaml import is_fallback_shape
    from charter.compiler.sources.yaml_reader import read_yaml

    data, _, diags = read_yaml(SourceText(path, path.name, text))
    if any(d.is_error for d in diags) and data is None:
        return False
    return data is None or is_fallback_shape(data)


def _has_blueprint(path: Path) -> bool:
    return any((path / n).is_file() for n in BLUEPRINT_FILES)


def is_agent_dir(path: Path) -> bool:
    return (path / CORE_FILE).is_file() or _has_blueprint(path)


def find_agent_dirs(root: Path) -> list[Path]:
    return _discover(root)[0]


def _discover(root: Path) -> tuple[list[Path], dict[Path, Path]]:
    """Every agent directory of the project, and for each one below a global
    fallback file, that file (the nearest one above it)."""
    found: list[Path] = []
    fallbacks: dict[Path, Path] = {}

    def fallback_here(d: Path) -> bool:
        return (
            (d / CORE_FILE).is_file() and not _has_blueprint(d) and is_fallback_file(d / CORE_FILE)
        )

    def walk(d: Path, depth: int, above: Path | None) -> None:
        if depth > _MAX_DEPTH:
            return
        try:
            children = sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            return
        for child in children:
            if child.name == RECORDS_DIR and (child / "policy").is_dir():
                # The policy `charter init` writes is a project like any other
                # (the pre-commit hook must see it); the rest of .charter/ is
                # compiled plans and records, never searched.
                walk(child / "policy", depth + 1, above)
                continue
            if child.name.startswith(".") or child.name in _SKIP_DIRS:
                continue
            if is_agent_dir(child) and not fallback_here(child):
                found.append(child)
                if above is not None:
                    fallbacks[child] = above
            else:
                before = len(found)
                here = child / CORE_FILE if (child / CORE_FILE).is_file() else above
                walk(child, depth + 1, here)
                if here is not above and len(found) == before:
                    # A fallback-shaped file with no core below it is most
                    # likely a core that lost its agent key: load it as one.
                    found.append(child)

    if is_agent_dir(root) and not fallback_here(root):
        return [root], {}
    start = root / CORE_FILE if (root / CORE_FILE).is_file() else None
    walk(root, 1, start)
    if start is not None and not found:
        return [root], {}
    return found, fallbacks


class _Collector:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.diags: list[Diagnostic] = []
        self.sources: dict[str, tuple[str, ...]] = {}
        self.digests: dict[str, str] = {}

    def display(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def note_file(self, path: Path, display: str, loaded: Loaded[Any]) -> None:
        self.diags.extend(loaded.diagnostics)
        if loaded.smap.lines:
            self.sources[display] = loaded.smap.lines
        try:
            self.digests[display] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            pass


def _yaml_files(folder: Path) -> Iterator[Path]:
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.suffix in (".yaml", ".yml") and not p.name.startswith("."):
            yield p


def _load_agent(
    c: _Collector, adir: Path, fallback: Loaded[AgentFallback] | None = None
) -> AgentSources:
    directory = c.display(adir) if adir != c.root else "."
    core: Loaded[AgentCore] | None = None
    tools: list[AuthoredToolSource] = []
    servers: list[Loaded[McpServer]] = []
    if (adir / CORE_FILE).is_file():
        from charter.compiler.frontends.agent_yaml import load_agent_yaml
        from charter.compiler.frontends.mcp_manifest import load_mcp_manifest
        from charter.compiler.frontends.tool_yaml import load_tool_yaml

        path = adir / CORE_FILE
        core = load_agent_yaml(path, c.display(path), adir)
        c.note_file(path, c.display(path), core)
        tools_dir = core.model.tools_root if core.model is not None else None
        if tools_dir is not None and (adir / tools_dir).is_dir():
            for tdir in sorted(p for p in (adir / tools_dir).iterdir() if p.is_dir()):
                if tdir.name.startswith(".") or tdir.name == "__pycache__":
                    continue
                spec_path = tdir / "tool.yaml"
                if not spec_path.is_file():
                    c.diags.append(
                        diag(
                            "path-not-found",
                            f"tool folder '{tdir.name}' has no tool.yaml",
                            Span(c.display(tdir)),
                        )
                    )
                    continue
                spec = load_tool_yaml(spec_path, c.display(spec_path))
                c.note_file(spec_path, c.display(spec_path), spec)
                tools.append(AuthoredToolSource(tdir.name, c.display(tdir), spec))
        mcp_dir = core.model.mcp_root if core.model is not None else None
        if mcp_dir is not None and (adir / mcp_dir).is_dir():
            seen: dict[str, str] = {}
            for mpath in _yaml_files(adir / mcp_dir):
                shown = c.display(mpath)
                if mpath.stem in seen:
                    c.diags.append(
                        diag(
                            "duplicate-definition",
                            f"MCP server '{mpath.stem}' is also defined in {seen[mpath.stem]}",
                            Span(shown),
                        )
                    )
                    continue
                seen[mpath.stem] = shown
                server = load_mcp_manifest(mpath, shown)
                c.note_file(mpath, shown, server)
                servers.append(server)

    blueprint: Loaded[Blueprint] | None = None
    present = [adir / n for n in BLUEPRINT_FILES if (adir / n).is_file()]
    if len(present) > 1:
        c.diags.append(
            diag(
                "duplicate-definition",
                f"both {present[0].name} and {present[1].name} define this agent's blueprint; "
                f"keep one",
                Span(c.display(present[1])),
            )
        )
    stage_files: list[Loaded[StageTable]] = []
    if present:
        path = present[0]
        blueprint = load_blueprint(path, c.display(path))
        c.note_file(path, c.display(path), blueprint)
        stages_dir = adir / "stages"
        if stages_dir.is_dir():
            for spath in sorted(stages_dir.glob("*.toml")):
                loaded = load_stage_file(spath, c.display(spath))
                c.note_file(spath, c.display(spath), loaded)
                stage_files.append(loaded)
        c.diags.extend(merge_stages(blueprint, stage_files))
    scripts = _load_scripts(c, adir / SCRIPT_DIR, f"{directory}/{SCRIPT_DIR}".removeprefix("./"))
    return AgentSources(
        directory,
        core,
        tuple(tools),
        tuple(servers),
        blueprint,
        tuple(stage_files),
        fallback if core is not None else None,
        scripts if blueprint is not None else (),
    )


SCRIPT_DIR = "tools"
USER_SCRIPTS = "<user-tools>"


def _load_scripts(c: _Collector, folder: Path, display: str) -> tuple[ScriptToolSource, ...]:
    """The ``*.rhai`` script tools directly in ``folder`` (Leviath's tools/
    folder). Loaded only when there are any, so other projects never import
    the script reader."""
    try:
        if not folder.is_dir() or not any(p.suffix == ".rhai" for p in folder.iterdir()):
            return ()
    except OSError:
        return ()
    from charter.compiler.frontends.script_tools import load_script_dir

    scope = "user" if display == USER_SCRIPTS else "agent"
    found, diags, sources = load_script_dir(folder, display, scope)
    c.diags.extend(diags)
    c.sources.update(sources)
    for tool in found:
        c.digests[tool.display] = tool.sha256
    return tuple(found)


def load_project(
    root: Path, *, config: Path | None = None, use_default_config: bool = True
) -> Project:
    """Load every file of the project at ``root``. Never raises on user input:
    problems, including a root with no agent files, become diagnostics."""
    # Like a compile, a load allocates many objects and frees few; pausing
    # the cyclic collector avoids repeated full collections on big projects.
    was = gc.isenabled()
    gc.disable()
    try:
        return _load_project(root, config=config, use_default_config=use_default_config)
    finally:
        if was:
            gc.enable()


def _load_project(root: Path, *, config: Path | None, use_default_config: bool) -> Project:
    root = root.resolve()
    c = _Collector(root)
    user: Loaded[UserConfig] | None = None
    cfg_path = (
        config if config is not None else (default_config_path() if use_default_config else None)
    )
    if cfg_path is not None and (config is not None or cfg_path.is_file()):
        shown = cfg_path.name if config is None else _config_display(cfg_path, root)
        if not cfg_path.is_file():
            c.diags.append(
                diag("path-not-found", f"config file {cfg_path} does not exist", Span(shown))
            )
        else:
            user = load_user_config(cfg_path, shown)
            c.note_file(cfg_path, shown, user)

    agents: list[AgentSources] = []
    dirs, above = _discover(root)
    fallbacks: dict[Path, Loaded[AgentFallback]] = {}
    for path in sorted(set(above.values())):
        from charter.compiler.frontends.agent_yaml import load_fallback_yaml

        loaded = load_fallback_yaml(path, c.display(path))
        c.note_file(path, c.display(path), loaded)
        fallbacks[path] = loaded
    if not dirs:
        c.diags.append(
            diag(
                "no-agent-files",
                "no agent files found: looked for agent.yaml, agent.leviath and blueprint.toml "
                f"in this directory and up to {_MAX_DEPTH} levels below it",
                Span("."),
            )
        )
    for adir in dirs:
        agents.append(_load_agent(c, adir, fallbacks.get(above[adir]) if adir in above else None))

    settings: list[tuple[str | None, Loaded[ProjectSettings]]] = []
    root_settings = root / SETTINGS_FILE
    if root_settings.is_file() and root not in dirs:
        loaded_settings = load_settings(root_settings, SETTINGS_FILE)
        c.note_file(root_settings, SETTINGS_FILE, loaded_settings)
        settings.append((None, loaded_settings))
    for adir, agent in zip(dirs, agents, strict=True):
        spath = adir / SETTINGS_FILE
        if spath.is_file():
            loaded_settings = load_settings(spath, c.display(spath))
            c.note_file(spath, c.display(spath), loaded_settings)
            settings.append((agent.name, loaded_settings))

    seen: dict[str, AgentSources] = {}
    for agent in agents:
        if agent.name in seen:
            c.diags.append(
                diag(
                    "duplicate-definition",
                    f"agent '{agent.name}' is defined in both {seen[agent.name].directory} and "
                    f"{agent.directory}; agent names must be unique in a project",
                    Span(agent.directory),
                )
            )
        else:
            seen[agent.name] = agent
    user_scripts: tuple[ScriptToolSource, ...] = ()
    if user is not None and cfg_path is not None:
        user_scripts = _load_scripts(c, cfg_path.parent / SCRIPT_DIR, USER_SCRIPTS)
    return Project(
        root,
        tuple(agents),
        user,
        tuple(c.diags),
        c.sources,
        c.digests,
        tuple(settings),
        user_scripts,
    )


def _config_display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        # A config outside the project: show its file name only, so the
        # diagnostics and the plan carry no absolute path.
        return f"<config>/{path.name}"
