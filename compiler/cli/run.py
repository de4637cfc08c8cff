"""``charter run PLAN_OR_PROJECT --agent NAME``: run an agent from a plan.

Given a project directory the project is compiled first; given a plan file
(JSON) it is loaded and its digest checked. Every run gets a directory,
``<workdir>/.charter/runs/<run-id>/``, holding the plan it ran
(``plan.json``), the audit log (``audit.jsonl``), the event stream
(``events.jsonl``) and the answer (``output.<ext>``).

Exit codes: 0 the run ended with an output; 4 it ended without one (limits,
a model failure, a script whose expectations were not met); 2 it refused to
start (a bad plan or project, an unknown agent, a bad model spec, usage);
130 it was interrupted with Ctrl-C (143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_NO_OUTPUT = 4
EXIT_REFUSED = 2

_EXTENSIONS = {
    "markdown": "md",
    "md": "md",
    "json": "json",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "csv": "csv",
    "html": "html",
    "xml": "xml",
}
DEMO_SCRIPT = "demo.script.yaml"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", type=Path, metavar="PLAN_OR_PROJECT", help="a project or a plan file")
    p.add_argument("--agent", required=True, help="the agent to run")
    p.add_argument("--task", help="what the agent should do")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a named input for the task (repeatable)",
    )
    p.add_argument(
        "--model",
        help="script:FILE or openai:MODEL (default: the blueprint's demo.script.yaml)",
    )
    p.add_argument("--base-url", help="the OpenAI-compatible endpoint (openai: models)")
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="NAME",
        help="the environment variable holding the API key (default OPENAI_API_KEY)",
    )
    p.add_argument(
        "--yolo",
        action="store_true",
        help="unattended: lift every liftable ask and withdraw blocking tools not required",
    )
    p.add_argument(
        "--allow", action="append", default=[], metavar="TOOL", help="lift this tool's ask"
    )
    p.add_argument("--workdir", type=Path, help="the workspace (default: the current directory)")
    p.add_argument("--output", type=Path, metavar="FILE", help="also write the answer here")
    p.add_argument("--config", type=Path, help="the user config.toml used to compile a project")
    p.add_argument("--no-user-config", action="store_true", help="ignore the user's config")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--quiet", action="store_true", help="print only the answer and problems")
    view.add_argument("--json", action="store_true", help="print one JSON event per line")


def _refuse(message: str) -> int:
    print(f"charter run: {message}", file=sys.stderr)
    return EXIT_REFUSED


def _load(args: argparse.Namespace) -> tuple[Any, Path | None] | str:
    """The plan and the project directory it came from (None for a plan file),
    or why there is none."""
    target: Path = args.target
    if target.is_file():
        from charter.runtime.loader import PlanError, load_plan

        try:
            return load_plan(target), None
        except PlanError as exc:
            return str(exc)
    if not target.is_dir():
        return f"{target}: no such project directory or plan file"
    if args.config is not None and not args.config.is_file():
        return f"{args.config}: config file not found"
    from charter.compiler.compile import CompileOptions, compile_project
    from charter.compiler.frontends.project import load_project
    from charter.compiler.render import render

    project = load_project(target, config=args.config, use_default_config=not args.no_user_config)
    result = compile_project(project, CompileOptions())
    diags = [d for d in (*project.diagnostics, *result.diagnostics) if d.severity.value != "note"]
    if diags:
        sys.stderr.write(render(diags, "concise", sources=project.sources))
    if result.plan is None:
        return f"{target}: the project does not compile; fix the errors above"
    return result.plan, target


def _default_model(project: Path | None, plan_path: Path, agent_root: str) -> str | None:
    places = []
    if project is not None:
        places += [project / agent_root / DEMO_SCRIPT, project / DEMO_SCRIPT]
    else:
        places.append(plan_path.parent / DEMO_SCRIPT)
    for place in places:
        if place.is_file():
            return f"script:{place}"
    return None


def _task(args: argparse.Namespace) -> str | None:
    parts: list[str] = []
    if args.task:
        parts.append(args.task)
    inputs: list[str] = []
    for item in args.input:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            return None
        inputs.append(f"{key.strip()}: {value}")
    if inputs:
        parts.append("Inputs:\n" + "\n".join(inputs))
    return "\n\n".join(parts) if parts else "No task was given: follow the stage instructions."


def run(args: argparse.Namespace) -> int:
    workdir = (args.workdir or Path.cwd()).resolve()
    if not workdir.is_dir():
        return _refuse(f"{workdir}: the workdir is not a directory")
    task = _task(args)
    if task is None:
        return _refuse("--input takes KEY=VALUE")
    loaded = _load(args)
    if isinstance(loaded, str):
        return _refuse(loaded)
    plan, project = loaded
    from charter.runtime.session import SessionError, normalise_allow, prepare

    found = plan.body.agent(args.agent)
    if found is None:
        known = ", ".join(a.name for a in plan.body.agents) or "none"
        return _refuse(f"no agent named {args.agent!r} in the plan (agents: {known})")
    spec = args.model or _default_model(project, args.target, found.root)
    if spec is None:
        return _refuse(
            f"no --model given and no {DEMO_SCRIPT} ships with agent {args.agent!r}; "
            "pass --model script:FILE or --model openai:MODEL"
        )
    from charter.runtime.models import ModelError, load_provider

    try:
        provider = load_provider(spec, base_url=args.base_url, api_key_env=args.api_key_env)
    except (ValueError, ModelError) as exc:
        return _refuse(str(exc))
    try:
        return _run(
            args, plan, project, found, provider, spec, task, workdir, prepare, normalise_allow
        )
    except SessionError as exc:
        return _refuse(str(exc))
    finally:
        provider.close()


def _run(
    args: argparse.Namespace,
    plan: Any,
    project: Path | None,
    found: Any,
    provider: Any,
    spec: str,
    task: str,
    workdir: Path,
    prepare: Any,
    normalise_allow: Any,
) -> int:
    from charter.runtime.audit import AuditLog
    from charter.runtime.env import build_env
    from charter.runtime.redact import Redactor
    from charter.runtime.run import (
        EventBus,
        JsonLinesSink,
        LineSource,
        LiveView,
        PromptApprovals,
        Prompter,
        QuietView,
        RunOptions,
        execute_run,
    )

    run_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
    run_dir = workdir / ".charter" / "runs" / run_id
    try:
        run_dir.mkdir(parents=True)
        (run_dir / "plan.json").write_text(plan.to_json(), encoding="utf-8")
        home = run_dir / "home"
        home.mkdir()
        events_file = (run_dir / "events.jsonl").open("w", encoding="utf-8")
    except OSError as exc:
        return _refuse(f"cannot create the run directory {run_dir}: {exc.strerror or exc}")

    from charter.runtime.sandbox.containment import ContainmentRefused, prepare_for_run

    # Every command runs in the sandbox its stage's profile declares; a run
    # that would have to run them uncontained without the user's say refuses.
    try:
        containment = prepare_for_run(
            plan,
            workspace=workdir,
            run_dir=run_dir,
            home=home,
            unattended=bool(args.yolo or args.allow),
        )
    except ContainmentRefused as exc:
        events_file.close()
        return _refuse(str(exc))
    redactor = Redactor()
    # Credentials in the environment (OPENAI_API_KEY and the like) are hidden
    # from every view of the run, whoever prints them.
    redactor.add_env(os.environ)
    env = build_env(os.environ, home=home)
    audit = AuditLog(run_dir / "audit.jsonl", redact=lambda text: redactor.redact(text, "stored"))
    bus = EventBus([JsonLinesSink(events_file, owns=True)])
    if args.json:
        bus.add(JsonLinesSink(sys.stdout))
    elif args.quiet:
        bus.add(QuietView())
    else:
        bus.add(LiveView())
    prompter = Prompter(
        LineSource(sys.stdin),
        timeout_s=float(found.limits.interaction_timeout_secs),
        cancel=threading.Event(),
        bus=bus,
    )
    options = RunOptions(
        prepared=prepare(plan),
        agent=found.name,
        task=task,
        workspace=workdir,
        run_dir=run_dir,
        run_id=run_id,
        provider=provider,
        approvals=PromptApprovals(prompter),
        bus=bus,
        audit=audit,
        redactor=redactor,
        env=env,
        yolo=bool(args.yolo),
        allow=tuple(normalise_allow(args.allow)),
        prompter=prompter,
        cancel=prompter.cancel,
        project_root=project.resolve() if project is not None else None,
        containment=containment,
    )
    shown_model = spec if not spec.startswith("script:") else f"script:{Path(spec[7:]).name}"
    bus.emit(
        "run_started",
        "main",
        run_id=run_id,
        agent_name=found.name,
        model=shown_model,
        plan_digest=plan.digest,
        workspace=str(workdir),
        run_dir=str(run_dir),
        yolo=bool(args.yolo),
        allow=sorted(options.allow),
    )
    audit.write("run_started", run=run_id, agent=found.name, plan=plan.digest, model=shown_model)
    for line in containment.notices:
        bus.emit("notice", "main", message=line)
        audit.write("sandbox", run=run_id, notice=line)
    output_path: Path | None = None
    code = EXIT_NO_OUTPUT
    answer: str | None = None
    try:
        report = execute_run(options)
        result = report.result
        if report.completed and result.output is not None:
            ext = _EXTENSIONS.get((result.output_format or "").strip().lower(), "txt")
            output_path = run_dir / f"output.{ext}"
            output_path.write_text(result.output, encoding="utf-8")
            code = EXIT_OK
            answer = result.output
            if args.output is not None:
                try:
                    args.output.write_text(result.output, encoding="utf-8")
                except OSError as exc:
                    print(
                        f"charter run: cannot write {args.output}: {exc.strerror or exc}",
                        file=sys.stderr,
                    )
                    code = EXIT_REFUSED
        if report.interrupted is not None:
            code = 128 + report.interrupted
        audit.write(
            "run_finished",
            run=run_id,
            status="interrupted" if report.interrupted else result.status,
            reason=result.reason,
            gates_forced=list(result.gates_forced) or None,
        )
        bus.emit(
            "run_finished",
            "main",
            status="interrupted" if report.interrupted else result.status,
            reason=result.reason,
            turns=result.turns,
            tool_calls=result.tool_calls,
            gates_forced=list(result.gates_forced),
            output=str(output_path) if output_path else None,
            output_text=result.output if args.json else None,
            audit=str(run_dir / "audit.jsonl"),
            events=str(run_dir / "events.jsonl"),
            exit_code=code,
        )
    finally:
        containment.close()
        audit.close()
        bus.close()
    if code == EXIT_OK and not args.json and answer is not None:
        sys.stdout.write(answer if answer.endswith("\n") else answer + "\n")
        sys.stdout.flush()
    return code
