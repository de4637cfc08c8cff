"""Policy self-tests: ``[[expect]]`` entries of ``charter.toml``.

Each names a tool call (agent, stage, tool, arguments or a shell command,
launch flags) and the decision the compiled policy must give it. They are
decided by the runtime's own gate pipeline on the freshly compiled plan,
exactly as ``charter check`` would, so a passing expectation is a statement
about what will happen at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.frontends.base import Loaded
from charter.compiler.frontends.charter_toml import Expectation, ProjectSettings
from charter.compiler.frontends.project import Project
from charter.compiler.rules import diag

if TYPE_CHECKING:
    # The runtime's gates are imported only when there is an expectation to
    # decide: most projects have none, and the gates pull in the session,
    # approvals and the shell guard.
    from charter.runtime.plan import Plan
    from charter.runtime.plan.prepared import PreparedPlan

__all__ = ["check_expectations", "expectation_count", "project_ignores"]


def expectation_count(project: Project) -> int:
    return sum(len(s.model.expect) for _, s in project.settings if s.model is not None)


def project_ignores(project: Project) -> list[str]:
    out: list[str] = []
    for _, s in project.settings:
        if s.model is not None:
            out.extend(s.model.lint.ignore)
    return out


def _label(e: Expectation, i: int) -> str:
    return f"'{e.name}'" if e.name else f"#{i + 1}"


def check_expectations(project: Project, plan: Plan | None) -> list[Diagnostic]:
    if expectation_count(project) == 0:
        return []
    if plan is None:
        first = next(s for _, s in project.settings if s.model is not None and s.model.expect)
        return [
            diag(
                "policy-expectations-skipped",
                f"{expectation_count(project)} policy expectation(s) were not checked because "
                "the project does not compile",
                first.smap.value_span(("expect",)),
            )
        ]
    from charter.runtime.plan.prepared import prepare

    # Validators are compiled only for the tools an expectation calls.
    prepared = prepare(plan, eager=False)
    names = [a.name for a in plan.body.agents]
    out: list[Diagnostic] = []
    for owner, loaded in project.settings:
        model = loaded.model
        if model is None:
            continue
        for i, e in enumerate(model.expect):
            out.extend(_check_one(project, prepared, names, owner, loaded, i, e))
    return out


def _check_one(
    project: Project,
    prepared: PreparedPlan,
    names: list[str],
    owner: str | None,
    loaded: Loaded[ProjectSettings],
    i: int,
    e: Expectation,
) -> list[Diagnostic]:
    from charter.runtime.gates import decide
    from charter.runtime.policy.session import SessionError, open_session
    from charter.runtime.results import ToolCall

    smap = loaded.smap
    where: Span = smap.value_span(("expect", i))
    key = f"expect[{i}]"
    agent = e.agent or owner or (names[0] if len(names) == 1 else None)
    if agent is None or agent not in names:
        return [
            diag(
                "policy-expectation-invalid",
                f"expectation {_label(e, i)} names no agent of this project"
                + (
                    f" ('{e.agent}'; agents: {', '.join(names)})"
                    if e.agent
                    else '; say which with agent = "..."'
                ),
                smap.value_span(("expect", i, "agent")) if e.agent else where,
                key_path=key,
            )
        ]
    directory = next((a.directory for a in project.agents if a.name == agent), ".")
    workspace = (project.root / directory).resolve()
    try:
        session = open_session(
            prepared,
            agent,
            workspace=workspace,
            stage=e.stage,
            unattended=e.unattended,
            yolo=e.yolo,
            allow=e.allow,
        )
    except SessionError as exc:
        return [
            diag(
                "policy-expectation-invalid",
                f"expectation {_label(e, i)}: {exc}",
                smap.value_span(("expect", i, "stage")) if e.stage else where,
                key_path=key,
            )
        ]
    args = e.call_args()
    if e.cwd is not None:
        args.setdefault("cwd", e.cwd)
    outcome = decide(session, ToolCall(e.tool, args))
    if outcome.decision == e.decision:
        return []
    prov = outcome.provenance
    why = prov.get("explain") or prov.get("why") or ""
    detail = f"gate {outcome.gate}, rule {outcome.rule}: {outcome.reason}"
    if why:
        detail += f"; provenance: {why}"
    return [
        diag(
            "policy-expectation-failed",
            f"expectation {_label(e, i)}: {e.tool} in {agent}/{session.stage_name} was expected "
            f"to be {e.decision} but is {outcome.decision} ({detail})",
            smap.value_span(("expect", i, "decision")),
            key_path=f"{key}.decision",
            data={
                "expected": e.decision,
                "actual": outcome.decision,
                "gate": outcome.gate,
                "rule": outcome.rule,
            },
        )
    ]
