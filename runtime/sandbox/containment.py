"""Containment for one run: a sandbox per distinct profile, built at start.

:func:`prepare` is called by ``charter run`` before the first turn. For every
stage of every agent in the plan it resolves what this host can build for
the stage's profile and applies the start-up rules:

* a profile this host can build completely: commands run in it;
* ``kind = "none"``: only the user's own config can say that (the compiler
  refuses it from a blueprint); commands run uncontained, and the run says so
  once;
* a profile the host cannot build (no user namespaces, no Landlock, no
  container engine):

  - if the user's config set ``on_unavailable = "warn"``, the run falls back
    to the strongest sandbox this host *can* build (or none), and says
    exactly what is not contained;
  - if nobody configured a sandbox (the built-in default), an *attended*
    run falls back the same way and says once that commands are not fully
    contained, while an *unattended* run (``--yolo``, ``--allow``) refuses to
    start: nobody would be there to see what a missed guard decision does;
  - otherwise (``on_unavailable = "error"``, the default for a profile
    somebody asked for) the run refuses to start, naming the stage.

A refusal is a :class:`ContainmentRefused` with the whole reason. The
``contained_allow`` marks of a stage apply only when its sandbox was built
completely (:meth:`StageContainment.rules`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.errors import CharterError
from charter.runtime.plan import AgentPlan, SandboxMount, SandboxProfile, canonical_json
from charter.runtime.sandbox.spec import HostFacts

if TYPE_CHECKING:
    from charter.runtime.sandbox.container import ContainerSandbox
    from charter.runtime.sandbox.launcher import Sandbox

__all__ = ["Containment", "ContainmentRefused", "StageContainment", "prepare", "prepare_for_run"]


class ContainmentRefused(CharterError):
    """The run must not start: a sandbox it needs cannot be built here."""


@dataclass
class StageContainment:
    """Where one stage's (or agent's) commands run."""

    profile: SandboxProfile | None
    sandbox: Sandbox | ContainerSandbox | None = None  # None: uncontained
    fallback: str = ""  # why this is weaker than the profile asked, if it is

    @property
    def contained(self) -> bool:
        return self.sandbox is not None

    def rules(self) -> frozenset[str]:
        """The contained-allow marks in force: only for a complete sandbox."""
        if self.sandbox is None or self.profile is None or self.fallback:
            return frozenset()
        if not self.sandbox.complete:
            return frozenset()
        return frozenset(self.profile.contained_allow)


def _with_readable(
    profile: SandboxProfile, readable: Iterable[Path], workspace: Path
) -> SandboxProfile:
    """``profile`` with each existing directory of ``readable`` (outside the
    workspace, never ``/``) as one more read-only mount. What the profile
    hides beneath such a directory stays hidden: hiding is applied after it."""
    ws = workspace.resolve()
    extra = []
    for d in readable:
        real = d.resolve()
        if not real.is_dir() or real == Path("/") or real == ws or real.is_relative_to(ws):
            continue
        if any(Path(m.path) == real for m in profile.mounts):
            continue
        extra.append(SandboxMount(path=str(real), writable=False))
    if not extra:
        return profile
    return profile.model_copy(update={"mounts": (*profile.mounts, *extra)})


def _key(profile: SandboxProfile) -> str:
    data = profile.model_dump(mode="json")
    data.pop("settings", None)  # provenance does not change the sandbox
    return canonical_json(data)


@dataclass
class Containment:
    workspace: Path
    private_root: Path
    env_home: Path | None
    unattended: bool
    host: HostFacts
    notices: list[str] = field(default_factory=list)
    _by_key: dict[str, StageContainment] = field(default_factory=dict)
    _stages: dict[tuple[str, str], StageContainment] = field(default_factory=dict)
    _agents: dict[str, StageContainment] = field(default_factory=dict)
    _built: list[Sandbox | ContainerSandbox] = field(default_factory=list)

    def stage(self, agent: str, stage: str) -> StageContainment:
        return self._stages.get((agent, stage)) or StageContainment(None)

    def agent(self, agent: str) -> StageContainment:
        return self._agents.get(agent) or StageContainment(None)

    def mcp_contain(self, agent: AgentPlan, *, readable: Iterable[Path] = ()) -> Any:
        """How the agent's stdio MCP servers start inside its sandbox: a
        function rewriting a launch (see ``charter.runtime.mcp.launch.
        contain_launch``), or None when the agent runs uncontained.

        ``readable``: directories outside the workspace the servers start in
        and read (the agent's own directory, when the run compiled it: a
        server shipped with the agent runs from there), shown read-only."""
        where = self.agent(agent.name)
        sb = where.sandbox
        if sb is None or where.profile is None:
            return None
        from charter.runtime.mcp.launch import contain_launch

        profile = _with_readable(where.profile, readable, self.workspace)

        from charter.runtime.sandbox.container import ContainerSandbox, container_argv

        if isinstance(sb, ContainerSandbox):  # the server runs in a container too
            box = sb

            def in_container(argv: list[str]) -> list[str]:
                return container_argv(
                    box.engine,
                    profile,
                    argv,
                    workspace=box.workspace,
                    cwd=box.workspace,
                    private_tmp=box.private_tmp,
                    env={},
                    home=Path.home(),
                    name=f"charter-mcp-{len(self._built)}",
                )

            return lambda launch: contain_launch(launch, in_container)

        from charter.runtime.sandbox.exec import wrapper_argv

        spec = {
            "profile": profile.model_dump(mode="json"),
            "workspace": str(self.workspace),
            "private": str(self._private()),
            "home": str(sb.place.home),
            "host": {**asdict(self.host), "reasons": list(self.host.reasons)},
            "allow_local_network": agent.allow_local_network,
        }
        return lambda launch: contain_launch(launch, lambda argv: wrapper_argv(spec, argv))

    def close(self) -> None:
        for sb in self._built:
            try:
                sb.close()
            except Exception:  # noqa: BLE001 - cleanup is best effort
                pass
        self._built.clear()
        shutil.rmtree(self.private_root, ignore_errors=True)

    # -- building ------------------------------------------------------------------

    def _private(self) -> Path:
        p = self.private_root / f"s{len(self._built)}"
        p.mkdir(parents=True, exist_ok=True, mode=0o700)
        return p

    def _namespace(self, profile: SandboxProfile) -> Sandbox:
        from charter.runtime.sandbox.launcher import Sandbox

        sb = Sandbox(
            profile,
            workspace=self.workspace,
            private_dir=self._private(),
            env_home=self.env_home,
            host=self.host,
        )
        self._built.append(sb)
        return sb

    def _resolve(self, profile: SandboxProfile, where: str) -> StageContainment:
        key = _key(profile)
        found = self._by_key.get(key)
        if found is not None:
            return found
        result = self._build(profile, where)
        self._by_key[key] = result
        return result

    def _build(self, profile: SandboxProfile, where: str) -> StageContainment:
        if profile.kind == "none":
            self._notice(
                'commands are NOT contained: your config sets [sandbox] kind = "none"; every '
                "command Charter runs has your full access"
            )
            return StageContainment(profile)
        missing = ""
        if profile.kind == "container":
            from charter.runtime.sandbox.container import ContainerSandbox, engine_status

            status = engine_status(profile.engine)
            if status.available and status.engine is not None and profile.image:
                box = ContainerSandbox(
                    profile,
                    workspace=self.workspace,
                    private_dir=self._private(),
                    engine=status.engine,
                )
                self._built.append(box)
                return StageContainment(profile, box)
            missing = (
                "no container image is set"
                if not profile.image
                else f"no container engine is available ({status.reason})"
            )
        # Only a host with namespaces or Landlock gets a kernel sandbox at all
        # (elsewhere, Windows and macOS among them, nothing of it is loaded).
        buildable = self.host.namespaces or self.host.landlock_abi >= 1
        wanted = profile.kind == "namespace" or bool(missing)
        sb = self._namespace(profile) if wanted and buildable else None
        if profile.kind == "namespace" and sb is not None and sb.complete:
            return StageContainment(profile, sb)
        if not missing:
            missing = self._what_is_missing(sb)
        return self._unavailable(profile, where, missing, sb)

    def _what_is_missing(self, sb: Sandbox | None) -> str:
        reasons = list(self.host.reasons)
        if sb is not None and sb.layout.mode == "landlock":
            reasons.insert(0, "only Landlock is available")
        return "; ".join(reasons) or "the sandbox could not be built completely"

    def _unavailable(
        self, profile: SandboxProfile, where: str, missing: str, fallback: Sandbox | None
    ) -> StageContainment:
        usable = fallback if fallback is not None and fallback.in_force else None
        default = not profile.user_kind and not profile.user_on_unavailable
        warn = profile.on_unavailable == "warn" and profile.user_on_unavailable
        if warn or (default and not self.unattended):
            what = (
                "commands run in a weaker sandbox:\n" + usable.describe()
                if usable is not None
                else "commands are NOT contained at all"
            )
            origin = (
                'your config sets on_unavailable = "warn"'
                if warn
                else "no sandbox is configured and this run is attended"
            )
            self._notice(
                f"the sandbox for {where} cannot be built on this host ({missing}); {origin}, "
                f"so {what}"
            )
            return StageContainment(profile, usable, fallback=missing)
        if default:
            raise ContainmentRefused(
                f"this host cannot contain the commands of {where} ({missing}), and an unattended "
                "run (--yolo or --allow) does not start uncontained. Run it attended, or say in "
                'your config.toml that you accept it: [sandbox] on_unavailable = "warn" (falls '
                'back to what this host can build) or kind = "none" (no sandbox at all)'
            )
        raise ContainmentRefused(
            f"the sandbox for {where} cannot be built on this host ({missing}) and its "
            'on_unavailable is "error"; set on_unavailable = "warn" in your config.toml to '
            "fall back instead"
        )

    def _notice(self, text: str) -> None:
        if text not in self.notices:
            self.notices.append(text)


def prepare(
    agents: Iterable[AgentPlan],
    *,
    workspace: Path,
    private_root: Path,
    env_home: Path | None,
    unattended: bool,
    host: HostFacts | None = None,
) -> Containment:
    """Build the run's sandboxes (see the module docs); raises
    :class:`ContainmentRefused`."""
    from charter.runtime.sandbox.probe import host_facts

    c = Containment(
        workspace=workspace.resolve(),
        private_root=private_root,
        env_home=env_home,
        unattended=unattended,
        host=host if host is not None else host_facts(),
    )
    try:
        for agent in agents:
            if agent.sandbox is not None:
                c._agents[agent.name] = c._resolve(agent.sandbox, f"agent '{agent.name}'")
            for stage in agent.stages:
                if stage.sandbox is not None:
                    where = f"stage '{stage.name}' of agent '{agent.name}'"
                    c._stages[(agent.name, stage.name)] = c._resolve(stage.sandbox, where)
    except BaseException:
        c.close()
        raise
    contained = [s.sandbox for s in c._by_key.values() if s.sandbox is not None and not s.fallback]
    if contained and not c.notices:
        first = contained[0]
        c.notices.append(
            "commands run contained: "
            + first.describe().splitlines()[0].removeprefix("sandbox: ")
            + " sandbox (workspace "
            + ("writable" if first.profile.workspace == "write" else "read-only")
            + ", network "
            + first.profile.network
            + ", home hidden); see charter show for the profile"
        )
    return c


def prepare_for_run(
    plan: Any, *, workspace: Path, run_dir: Path, home: Path, unattended: bool
) -> Containment:
    """:func:`prepare` for ``charter run``: every agent of ``plan``, the
    run's private directories under ``run_dir``."""
    return prepare(
        plan.body.agents,
        workspace=workspace,
        private_root=run_dir / "sandbox",
        env_home=home,
        unattended=unattended,
    )
