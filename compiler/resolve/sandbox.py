"""Resolving where each stage's commands run: the sandbox profile.

The user's ``config.toml`` ``[sandbox]`` table is the ceiling, over Charter's
defaults (a namespace sandbox, workspace writable, no network, the home and
credentials hidden, the protected paths read-only, default limits). A
blueprint's agent-wide ``[sandbox]`` and a stage's ``[stages.x.sandbox]``
can only tighten it, and both apply: the result is the stronger of agent and
stage on every key. What a blueprint asks for beyond the ceiling is
clamped and reported (CH470), never granted:

========================  ===================================================
key                       how a blueprint's value meets the ceiling
========================  ===================================================
``kind``                  the stronger (container > namespace > none); a
                          blueprint's ``none`` never undoes a sandbox
``network``               the stricter (none < proxy); ``true`` is ``proxy``
``allow_hosts``           only patterns the user's list already covers
``workspace``             the stricter (read < write)
``mount``/``mounts``      only paths the user's config mounts (read-only
                          unless the user's entry is writable too)
``hide``, ``read_only``   added (hiding more is tighter)
``limits``                the smaller of each
``on_unavailable``        ``error`` tightens; ``warn`` is the user's call
``auto_allow``            only groups the user's config allows
``engine``                never the blueprint's (CH471): it runs on the host
``image``, ``persist``    the blueprint's, unless the user pinned an image
========================  ===================================================

Every profile records where each setting came from (``settings``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from charter.compiler.diagnostics import Diagnostic, Span, format_key_path
from charter.compiler.frontends.config_toml import SandboxTable, UserConfig
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import KeyPath, SourceMap
from charter.runtime.plan import (
    SandboxLimits,
    SandboxMount,
    SandboxProfile,
    SandboxSetting,
    SourceRef,
)
from charter.runtime.sandbox import defaults
from charter.runtime.sandbox.contained import rules_for_groups
from charter.runtime.sandbox.hosts import host_matches

__all__ = ["DEFAULT_AUTO_ALLOW", "Declared", "default_profile", "resolve_profile"]

DEFAULT_AUTO_ALLOW: tuple[str, ...] = ("outside", "network")
_KIND_RANK = {"none": 0, "namespace": 1, "container": 2}
_NET_RANK = {"none": 0, "proxy": 1}
_LIMIT_KEYS = ("processes", "memory_mb", "cpu_seconds", "open_files", "file_size_mb")
_FORBIDDEN_MOUNTS = ("/", "/proc", "/sys", "/dev", "/etc", "/boot", "/run", "/var/run")


# Defined at every start-up, so kept cheap to define: Declared is a NamedTuple
# (a tenth of a frozen dataclass's cost), and _Acc, mutable state nothing
# compares by value, keeps identity equality.
class Declared(NamedTuple):
    """One ``[sandbox]`` table and where it was written."""

    table: SandboxTable
    scope: Literal["config", "blueprint", "stage"]
    smap: SourceMap
    prefix: KeyPath  # the table's key path in its file

    def span(self, *key: str | int) -> Span:
        return self.smap.value_span((*self.prefix, *key))

    def key_path(self, *key: str | int) -> str:
        return format_key_path((*self.prefix, *key))

    def diag(self, rule: str, message: str, *key: str | int) -> Diagnostic:
        """A finding about ``key`` of this table, at its value and key path."""
        return diag(rule, message, self.span(*key), key_path=self.key_path(*key))


@dataclass(eq=False)
class _Acc:
    """The profile being built, as plain values."""

    kind: str = "namespace"
    workspace: str = "write"
    network: str = "none"
    allow_hosts: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=lambda: list(defaults.READ_ONLY))
    hidden: list[str] = field(default_factory=lambda: list(defaults.HIDDEN))
    mounts: dict[str, bool] = field(default_factory=dict)  # path -> writable
    limits: dict[str, int | None] = field(default_factory=lambda: SandboxLimits().model_dump())
    on_unavailable: str = "error"
    image: str | None = None
    image_pinned: bool = False
    engine: str | None = None
    persist: bool = False
    auto_allow: list[str] = field(default_factory=lambda: list(DEFAULT_AUTO_ALLOW))
    user_kind: bool = False
    user_on_unavailable: bool = False
    settings: list[SandboxSetting] = field(default_factory=list)


def _ref(span: Span) -> SourceRef:
    return SourceRef(path=span.path, line=span.line, col=span.col)


def _network(value: bool | str) -> str:
    if isinstance(value, bool):
        return "proxy" if value else "none"
    return value


def _mount(entry: str) -> tuple[str, bool]:
    path, sep, mode = entry.rpartition(":")
    if sep and mode in ("ro", "rw"):
        return path, mode == "rw"
    return entry, False


def _mount_problem(path: str) -> str | None:
    if not (path.startswith(("/", "~/")) or path == "~"):
        return "a mount must be an absolute path or start with ~/"
    if ".." in path.split("/"):
        return "a mount may not contain '..'"
    norm = path.rstrip("/") or "/"
    for f in _FORBIDDEN_MOUNTS:
        if norm == f or (f != "/" and norm.startswith(f + "/")):
            return f"{f} is the host's own control surface and is never mounted"
    if norm.endswith(".sock"):
        return "a socket is never mounted (a container engine's socket is a root shell)"
    return None


def _mounts(
    t: Any, d: Declared, diags: list[Diagnostic]
) -> Iterator[tuple[str, int, str, str, bool]]:
    """The ``mount`` and ``mounts`` entries of a table, each as (key, index,
    entry, path, writable); one that may never be mounted is reported and
    left out."""
    for key in ("mount", "mounts"):
        for i, entry in enumerate(getattr(t, key)):
            path, writable = _mount(entry)
            problem = _mount_problem(path)
            if problem is not None:
                diags.append(
                    d.diag(
                        "sandbox-mount-refused",
                        f"mount '{entry}': {problem}",
                        key,
                        i,
                    )
                )
                continue
            yield key, i, entry, path, writable


def _record(acc: _Acc, d: Declared, key: str, value: Any, note: str = "") -> None:
    acc.settings.append(
        SandboxSetting(
            key=key,
            scope=d.scope,
            value=str(value).lower() if isinstance(value, bool) else str(value),
            source=_ref(d.span(key)),
            note=note,
        )
    )


def _loosen(diags: list[Diagnostic], d: Declared, key: str, message: str) -> None:
    diags.append(d.diag("sandbox-loosen-ignored", message, key))


def _apply_user(acc: _Acc, d: Declared, diags: list[Diagnostic]) -> None:
    t = d.table
    if t.kind is not None:
        acc.kind = t.kind
        acc.user_kind = True
        _record(acc, d, "kind", t.kind)
    if t.network is not None:
        acc.network = _network(t.network)
        _record(acc, d, "network", acc.network)
    if t.allow_hosts is not None:
        acc.allow_hosts = list(t.allow_hosts)
        _record(acc, d, "allow_hosts", ", ".join(t.allow_hosts) or "(none)")
    if t.workspace is not None:
        acc.workspace = t.workspace
        _record(acc, d, "workspace", t.workspace)
    for key, _i, entry, path, writable in _mounts(t, d, diags):
        acc.mounts[path] = writable
        _record(acc, d, key, entry)
    acc.hidden += [h for h in t.hide if h not in acc.hidden]
    acc.read_only += [r for r in t.read_only if r not in acc.read_only]
    if t.limits is not None:
        for key in _LIMIT_KEYS:
            value = getattr(t.limits, key)
            if value is not None:
                acc.limits[key] = value
                acc.settings.append(
                    SandboxSetting(
                        key=f"limits.{key}",
                        scope=d.scope,
                        value=str(value),
                        source=_ref(d.span("limits", key)),
                    )
                )
    if t.on_unavailable is not None:
        acc.on_unavailable = t.on_unavailable
        acc.user_on_unavailable = True
        _record(acc, d, "on_unavailable", t.on_unavailable)
    if t.image is not None:
        acc.image, acc.image_pinned = t.image, True
        _record(acc, d, "image", t.image)
    if t.engine is not None:
        acc.engine = t.engine
        _record(acc, d, "engine", t.engine)
    if t.persist is not None:
        acc.persist = t.persist
    if t.auto_allow is not None:
        acc.auto_allow = list(t.auto_allow)
        _record(acc, d, "auto_allow", ", ".join(t.auto_allow) or "(none)")


def _tighten(acc: _Acc, d: Declared, diags: list[Diagnostic]) -> None:
    """Apply a blueprint's (or stage's) table: tighter values win, looser
    ones are reported and dropped."""
    t = d.table
    if t.kind is not None:
        if _KIND_RANK[t.kind] >= _KIND_RANK[acc.kind]:
            acc.kind = t.kind
            _record(acc, d, "kind", t.kind)
        else:
            note = f"ignored: the {d.scope} may not weaken kind '{acc.kind}'"
            _record(acc, d, "kind", t.kind, note)
            _loosen(
                diags,
                d,
                "kind",
                f"kind = '{t.kind}' would weaken the sandbox your config sets (kind "
                f"'{acc.kind}'); only your own config.toml can turn containment off",
            )
    if t.network is not None:
        wanted = _network(t.network)
        if _NET_RANK[wanted] <= _NET_RANK[acc.network]:
            acc.network = wanted
            _record(acc, d, "network", wanted)
        else:
            _record(acc, d, "network", wanted, "ignored: your config gives no network")
            shown = str(t.network).lower() if isinstance(t.network, bool) else repr(t.network)
            _loosen(
                diags,
                d,
                "network",
                f"network = {shown} asks for network access your config does not give; commands "
                "stay without network "
                '(set [sandbox] network = "proxy" in your config.toml to allow it)',
            )
    if t.allow_hosts is not None:
        kept = [h for h in t.allow_hosts if _covered(h, acc.allow_hosts)]
        dropped = [h for h in t.allow_hosts if h not in kept]
        acc.allow_hosts = kept
        _record(acc, d, "allow_hosts", ", ".join(kept) or "(none)")
        if dropped:
            _loosen(
                diags,
                d,
                "allow_hosts",
                f"allow_hosts names {', '.join(dropped)}, which your config's allow_hosts does "
                "not cover; they stay refused",
            )
    if t.workspace is not None:
        if t.workspace == "read" or acc.workspace == "write":
            acc.workspace = t.workspace if t.workspace == "read" else acc.workspace
            _record(acc, d, "workspace", t.workspace)
        else:
            _loosen(
                diags, d, "workspace", "workspace = 'write' would loosen your read-only workspace"
            )
    for key, i, entry, path, writable in _mounts(t, d, diags):
        if path not in acc.mounts:
            diags.append(
                d.diag(
                    "sandbox-loosen-ignored",
                    f"mount '{entry}' is not one your config mounts; it is not made visible",
                    key,
                    i,
                )
            )
            continue
        acc.mounts[path] = acc.mounts[path] and writable
    acc.hidden += [h for h in t.hide if h not in acc.hidden]
    acc.read_only += [r for r in t.read_only if r not in acc.read_only]
    if t.limits is not None:
        for key in _LIMIT_KEYS:
            value = getattr(t.limits, key)
            if value is None:
                continue
            current = acc.limits[key]
            if current is None or value <= current:
                acc.limits[key] = value
            else:
                diags.append(
                    d.diag(
                        "sandbox-loosen-ignored",
                        f"limits.{key} = {value} is above your config's {current}; {current} stays",
                        "limits",
                        key,
                    )
                )
    if t.on_unavailable is not None:
        if t.on_unavailable == "error":
            acc.on_unavailable = "error"
            _record(acc, d, "on_unavailable", "error")
        elif acc.on_unavailable != "warn":
            _loosen(
                diags,
                d,
                "on_unavailable",
                "on_unavailable = 'warn' would run commands uncontained where the sandbox "
                "cannot be built; only your own config.toml can allow that",
            )
    if t.engine is not None:
        diags.append(
            d.diag(
                "sandbox-engine-ignored",
                f"engine = '{t.engine}' is ignored: the container engine runs on the host before "
                "any prompt, so only your own config.toml may name it",
                "engine",
            )
        )
    if t.image is not None and not acc.image_pinned:
        acc.image = t.image
        _record(acc, d, "image", t.image)
    if t.persist is not None:
        acc.persist = t.persist
    if t.auto_allow is not None:
        kept = [g for g in t.auto_allow if g in acc.auto_allow]
        if len(kept) < len(t.auto_allow):
            extra = [g for g in t.auto_allow if g not in acc.auto_allow]
            _loosen(
                diags,
                d,
                "auto_allow",
                f"auto_allow names {', '.join(extra)}, which your config does not allow; those "
                "commands still ask",
            )
        acc.auto_allow = kept
        _record(acc, d, "auto_allow", ", ".join(kept) or "(none)")


def _covered(pattern: str, ceiling: Sequence[str]) -> bool:
    """Whether every host ``pattern`` matches is matched by ``ceiling``."""
    if "*" in ceiling:
        return True
    if pattern == "*":
        return False
    if pattern.startswith("*."):
        return any(
            c == pattern or (c.startswith("*.") and pattern.endswith(c[1:])) for c in ceiling
        )
    return host_matches(pattern, ceiling)


def _check(
    acc: _Acc, declared: Sequence[Declared], diags: list[Diagnostic], ceiling_network: str
) -> None:
    """A profile that cannot be met is an error where it was asked for."""
    kind_from = next((d for d in reversed(declared) if d.table.kind is not None), None)
    if acc.kind == "container" and not acc.image and kind_from is not None:
        diags.append(
            kind_from.diag(
                "sandbox-unmet",
                "kind = 'container' needs an image; set image = \"...\" in the same table",
                "kind",
            )
        )
    if acc.kind == "container" and acc.network == "proxy" and kind_from is not None:
        diags.append(
            kind_from.diag(
                "sandbox-unmet",
                "network = 'proxy' is not available in a container sandbox (its network is "
                "always none); use kind = 'namespace' or network = false",
                "kind",
            )
        )
    # Hosts no stage could ever reach: the user's own network is none (a
    # blueprint narrowing the network for one stage is not a mistake).
    if ceiling_network == "none":
        for d in declared:
            if d.table.allow_hosts:
                diags.append(
                    d.diag(
                        "sandbox-hosts-without-network",
                        "allow_hosts has no effect: this sandbox has no network (set network = "
                        '"proxy" to reach these hosts through Charter\'s proxy)',
                        "allow_hosts",
                    )
                )


def default_profile() -> SandboxProfile:
    """Charter's own profile when nobody configures a sandbox."""
    return _finish(_Acc())


def _finish(acc: _Acc) -> SandboxProfile:
    return SandboxProfile(
        kind=acc.kind,
        workspace=acc.workspace,
        network=acc.network,
        allow_hosts=tuple(acc.allow_hosts),
        read_only=tuple(acc.read_only),
        hidden=tuple(acc.hidden),
        mounts=tuple(SandboxMount(path=p, writable=w) for p, w in sorted(acc.mounts.items())),
        limits=SandboxLimits(**acc.limits),
        on_unavailable=acc.on_unavailable,
        image=acc.image,
        engine=acc.engine,
        persist=acc.persist,
        contained_allow=rules_for_groups(acc.auto_allow, network_none=acc.network == "none")
        if acc.kind != "none"
        else (),
        user_kind=acc.user_kind,
        user_on_unavailable=acc.user_on_unavailable,
        settings=tuple(acc.settings),
    )


def resolve_profile(
    config: UserConfig | None,
    config_smap: SourceMap | None,
    tables: Sequence[Declared],
) -> tuple[SandboxProfile, list[Diagnostic]]:
    """The profile for the user's config and the blueprint's tables (agent
    first, then stage), with what was clamped or cannot be met."""
    diags: list[Diagnostic] = []
    acc = _Acc()
    declared: list[Declared] = []
    if config is not None and config.sandbox is not None and config_smap is not None:
        user = Declared(config.sandbox, "config", config_smap, ("sandbox",))
        declared.append(user)
        _apply_user(acc, user, diags)
    ceiling_network = acc.network
    for d in tables:
        declared.append(d)
        _tighten(acc, d, diags)
    _check(acc, declared, diags, ceiling_network)
    return _finish(acc), diags


def stage_profiles(
    config: UserConfig | None,
    config_smap: SourceMap | None,
    agent_table: Declared | None,
    stage_tables: Sequence[tuple[str, Declared | None]],
) -> tuple[SandboxProfile, dict[str, SandboxProfile], list[Diagnostic]]:
    """The agent-wide profile and one per stage, each diagnostic once."""
    seen: dict[tuple[str, str, int, int, str], Diagnostic] = {}

    def keep(ds: list[Diagnostic]) -> None:
        for d in ds:
            seen.setdefault((d.code, d.span.path, d.span.line, d.span.col, d.message), d)

    base = [agent_table] if agent_table is not None else []
    agent_profile, ds = resolve_profile(config, config_smap, base)
    keep(ds)
    per_stage: dict[str, SandboxProfile] = {}
    for name, table in stage_tables:
        if table is None:
            per_stage[name] = agent_profile
            continue
        profile, ds = resolve_profile(config, config_smap, [*base, table])
        keep(ds)
        per_stage[name] = profile
    return agent_profile, per_stage, list(seen.values())


def plan_sandboxes(
    config: UserConfig | None,
    config_smap: SourceMap | None,
    blueprint: Any,
    blueprint_smap: SourceMap | None,
    stages: Any,
    compiled: Sequence[Any],
) -> tuple[list[Any], SandboxProfile, list[Diagnostic]]:
    """The compiled stages with their profiles, the agent's own profile and
    the diagnostics (``stages`` is the compiler's stage table of
    :class:`~charter.compiler.frontends.stage_toml.StageEntry`)."""
    agent_table = None
    if blueprint is not None and blueprint.sandbox is not None and blueprint_smap is not None:
        agent_table = Declared(blueprint.sandbox, "blueprint", blueprint_smap, ("sandbox",))
    tables: list[tuple[str, Declared | None]] = []
    for name, entry in stages.items():
        table = getattr(entry.stage, "sandbox", None)
        tables.append(
            (
                name,
                None
                if table is None
                else Declared(table, "stage", entry.smap, (*entry.prefix, "sandbox")),
            )
        )
    agent_profile, per_stage, diags = stage_profiles(config, config_smap, agent_table, tables)
    out = [s.model_copy(update={"sandbox": per_stage.get(s.name, agent_profile)}) for s in compiled]
    return out, agent_profile, diags
