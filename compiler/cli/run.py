"""``charter run PLAN_OR_PROJECT --agent NAME``: run an agent from a plan.

Given a project directory the project is compiled first; given a plan file
(JSON) it is loaded and its digest checked. Every run gets a directory,
``<workspace>/.charter/runs/<run-id>/``, private to the user (0700, files
0600, whatever the umask), holding the plan it ran (``plan.json``), the audit
log (``audit.jsonl``, a hash chain sealed by ``run_finished``), the event
stream (``events.jsonl``) and the answer (``output.<ext>``).

Model requests are bounded: ``--model-time-limit`` (else the config's
``request_timeout_secs``, else 120 s) per attempt and ``--model-retries``
retries (default 3); each retry is an event with its reason.

SIGINT and SIGTERM end the run within about a second, whatever is in flight
(see ``charter.runtime.run.runner``); ``run_finished`` is still written. A
signal before the run started, or a second one while it finishes, never
prints a traceback.

Exit codes: 0 the run ended with an output; 4 it ended without one (limits,
a model failure, a script whose expectations were not met); 2 it refused to
start (a bad plan or project, an unknown agent, a bad model spec, usage);
130 it was interrupted with Ctrl-C (143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import signal
import sqlite3
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from charter.compiler.cli._options import add_format, add_hidden_alias, add_workspace

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
DEFAULT_MODEL_RETRIES = 3


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("a timeout must be a positive number of seconds")
    return value


def _retries(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("retries must be between 0 and 100")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    from charter.compiler.cli._plan_arg import add_plan_operand

    add_plan_operand(p, "target")
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
    p.add_argument(
        "--stage-models",
        metavar="PROVIDERS",
        default="",
        help="comma-separated providers the --model endpoint serves (e.g. openrouter): a "
        "stage whose model list names one runs on that model, falling back along its list",
    )
    p.add_argument("--base-url", help="the OpenAI-compatible endpoint (openai: models)")
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="NAME",
        help="the environment variable holding the API key (default OPENAI_API_KEY)",
    )
    p.add_argument(
        "--model-time-limit",
        dest="model_timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up on one model request after this long (default: the config's "
        "request_timeout_secs, else 120)",
    )
    add_hidden_alias(p, "--model-timeout", dest="model_timeout", type=_seconds)
    p.add_argument(
        "--model-retries",
        type=_retries,
        metavar="N",
        help=f"retry a failed model request (timeout, 429, 5xx) N times (default "
        f"{DEFAULT_MODEL_RETRIES})",
    )
    p.add_argument(
        "--yolo",
        action="store_true",
        help="unattended: lift every liftable ask and withdraw blocking tools not required",
    )
    p.add_argument(
        "--allow", action="append", default=[], metavar="TOOL", help="lift this tool's ask"
    )
    add_workspace(
        p,
        type=Path,
        help="the workspace the tools are confined to (default: the current directory)",
    )
    p.add_argument("--output", type=Path, metavar="FILE", help="also write the answer here")
    p.add_argument(
        "--session",
        metavar="NAME",
        help="keep this run's conversation as session NAME (.charter/sessions.db)",
    )
    p.add_argument("--resume", action="store_true", help="continue session NAME where it stopped")
    p.add_argument("--config", type=Path, help="the user config.toml used to compile a project")
    p.add_argument("--no-user-config", action="store_true", help="ignore the user's config")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the answer and problems")
    add_format(p, help="text: the live view (default); json: one JSON event per line")
    add_hidden_alias(p, "--json", dest="format", action="store_const", const="json")


def _refuse(message: str) -> int:
    print(f"charter run: {message}", file=sys.stderr)
    return EXIT_REFUSED


def _load(args: argparse.Namespace) -> tuple[Any, Path | None] | str:
    """The plan and the project directory it came from (None for a plan file),
    or why there is none."""
    from charter.compiler.cli._plan_arg import load_plan_or_project

    loaded = load_plan_or_project(
        args.target, config=args.config, use_user_config=not args.no_user_config
    )
    if isinstance(loaded, str):
        return loaded
    return loaded.plan, loaded.project


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


def _inputs(args: argparse.Namespace) -> dict[str, str] | str:
    """The caller's named inputs (``--input KEY=VALUE``; ``KEY=@FILE`` reads
    the file), or why they are unusable. Caller-seeded regions are filled
    from these, as Leviath fills them from ``--<region> TEXT|@FILE``."""
    out: dict[str, str] = {}
    for item in args.input:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            return "--input takes KEY=VALUE (or KEY=@FILE)"
        if value.startswith("@"):
            try:
                value = Path(value[1:]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                return f"--input {key.strip()}=@{value[1:]}: cannot read the file: {exc}"
        out[key.strip()] = value
    return out


def _task(args: argparse.Namespace, inputs: dict[str, str]) -> str:
    parts: list[str] = []
    if args.task:
        parts.append(args.task)
    if inputs:
        parts.append("Inputs:\n" + "\n".join(f"{k}: {v}" for k, v in inputs.items()))
    return "\n\n".join(parts) if parts else "No task was given: follow the stage instructions."


class _Interrupted(BaseException):
    """SIGINT or SIGTERM outside the run's own event loop (while compiling,
    say): unwinds the command like KeyboardInterrupt, for either signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _SignalGuard:
    """SIGINT and SIGTERM handlers for the parts of a command outside the
    run's event loop, which installs its own (and, leaving, puts Python's
    defaults back: :meth:`arm` again after it). No traceback either way.

    ``raising``: a signal unwinds what is being done (:class:`_Interrupted`;
    before the run starts). Otherwise it is noted in ``seen`` and ``cancel``
    is set, so a run that is starting stops at its first check, and the run
    directory, the audit seal and the answer are still written. Handlers can
    only be set in the main thread; elsewhere the guard does nothing."""

    def __init__(self, *, raising: bool, cancel: threading.Event | None = None) -> None:
        self.raising = raising
        self.cancel = cancel
        self.seen: list[int] = []
        self._active = threading.current_thread() is threading.main_thread()
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        self.seen.append(signum)
        if self.cancel is not None:
            self.cancel.set()
        if self.raising:
            raise _Interrupted(signum)

    def arm(self) -> None:
        if self._active:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, self._handler)

    def __enter__(self) -> _SignalGuard:
        if self._active:
            self._previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        self.arm()
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._previous.items():
            signal.signal(sig, old)


def run(args: argparse.Namespace) -> int:
    try:
        with _SignalGuard(raising=True):
            prepared = _prepare_run(args)
    except _Interrupted as exc:
        print("charter run: interrupted before the run started", file=sys.stderr)
        return 128 + exc.signum
    if isinstance(prepared, int):
        return prepared
    plan, project, found, provider, spec, ask, workspace = prepared
    from charter.runtime.plan.prepared import prepare
    from charter.runtime.policy.session import SessionError

    try:
        return _run(args, plan, project, found, provider, spec, ask, workspace, prepare)
    except SessionError as exc:
        return _refuse(str(exc))
    finally:
        provider.close()


def _missing_inputs(args: argparse.Namespace, required: Sequence[str]) -> list[str]:
    given = {item.partition("=")[0].strip() for item in args.input}
    if args.task:
        given.add("task")
    return [key for key in required if key not in given]


def _task_refusal(args: argparse.Namespace, found: Any) -> str | None:
    """A task given to an agent whose context layout has no region for it
    would be ignored, so it is refused, as Leviath refuses it (an agent
    without a layout reads the task from the conversation)."""
    if not args.task:
        return None
    regions = [r for stage in found.stages for r in stage.regions]
    if not regions:
        return None
    caller = [r.seed.key for r in regions if r.seed is not None and r.seed.source == "caller"]
    if "task" in caller:
        return None
    takes = ", ".join(f"--input {k}=..." for k in dict.fromkeys(caller)) or "no caller input"
    return (
        f"agent {found.name!r} was given a task, but no context region of it is seeded from "
        f"the task, so it would be ignored; it takes {takes}. Leave out --task, or add a "
        'region such as task = { kind = "pinned", seed = "task" } to its [context.regions]'
    )


def _required_messages(found: Any, missing: Sequence[str]) -> list[str]:
    """What the blueprint says when a required region's caller input is
    missing (its ``required_message``, ``{region}`` filled in), as Leviath
    says it at spawn."""
    out: dict[str, str] = {}
    for stage in found.stages:
        for region in stage.regions:
            seed = region.seed
            if not (region.required and region.required_message and seed is not None):
                continue
            if seed.source == "caller" and seed.key in missing:
                said = region.required_message.replace("{region}", region.name)
                how = "a task" if seed.key == "task" else f"--input {seed.key}=VALUE (or =@FILE)"
                out.setdefault(seed.key, f"{said.rstrip()} [in charter run: {how}]")
    return list(out.values())


def _workdir_refusal(
    args: argparse.Namespace, workspace: Path, allowed: Sequence[str]
) -> int | None:
    """A workspace that is a home directory or a filesystem root is
    confirmed by the person first (see runtime/run/workdir.py); with nobody
    to ask, the run does not start."""
    from charter.runtime.run.workdir import workdir_concern

    try:
        home: Path | None = Path.home().resolve()
    except (RuntimeError, OSError):
        home = None
    concern = workdir_concern(workspace, home, allowed)
    if concern is None:
        return None
    why = (
        f"the workspace {workspace} is {concern}: an agent there can read and change "
        "everything under it"
    )
    fix = "run from a project directory, or add it to [security] allowed_workdirs in your config"
    if args.yolo or args.allow or not sys.stdin.isatty():
        return _refuse(f"{why}, and nobody is here to confirm it; {fix}")
    sys.stderr.write(f"charter run: {why}.\nRun here anyway? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() in ("y", "yes"):
        return None
    return _refuse(f"not confirmed; {fix}")


def _prepare_run(args: argparse.Namespace) -> tuple[Any, ...] | int:
    if args.quiet and args.format == "json":
        return _refuse("-q and --format json are two views of a run: choose one")
    workspace = (args.workspace or Path.cwd()).resolve()
    if not workspace.is_dir():
        return _refuse(f"{workspace}: the workspace is not a directory")
    inputs = _inputs(args)
    if isinstance(inputs, str):
        return _refuse(inputs)
    task = _task(args, inputs)
    loaded = _load(args)
    if isinstance(loaded, str):
        return _refuse(loaded)
    plan, project = loaded
    found = plan.body.agent(args.agent)
    if found is None:
        known = ", ".join(a.name for a in plan.body.agents) or "none"
        return _refuse(f"no agent named {args.agent!r} in the plan (agents: {known})")
    refused = _workdir_refusal(args, workspace, found.allowed_workdirs)
    if refused is not None:
        return refused
    unread = _task_refusal(args, found)
    if unread is not None:
        return _refuse(unread)
    missing = _missing_inputs(args, found.required_inputs)
    said = _required_messages(found, missing)
    if said:
        return _refuse("; ".join(said))
    if missing:
        return _refuse(
            f"agent {found.name!r} needs "
            + ", ".join("a task" if key == "task" else f"--input {key}=VALUE" for key in missing)
            + " (a required region is filled from it; Leviath does not start without it either)"
        )
    spec = args.model or _default_model(project, args.target, found.root)
    if spec is None:
        return _refuse(
            f"no --model given and no {DEMO_SCRIPT} ships with agent {args.agent!r}; "
            "pass --model script:FILE or --model openai:MODEL"
        )
    from charter.runtime.models import ModelError, load_provider

    options: dict[str, Any] = {}
    if spec.partition(":")[0].strip().lower() == "openai":
        from charter.runtime.models.openai import RetryPolicy

        timeout = args.model_timeout or found.limits.model_request_timeout_secs
        if timeout is not None:
            options["timeout_s"] = float(timeout)
        retries = DEFAULT_MODEL_RETRIES if args.model_retries is None else args.model_retries
        options["retry"] = RetryPolicy(attempts=retries + 1)
    elif args.model_timeout is not None or args.model_retries is not None:
        return _refuse("--model-time-limit and --model-retries apply to openai: models only")
    try:
        provider = load_provider(
            spec, base_url=args.base_url, api_key_env=args.api_key_env, **options
        )
    except (ValueError, ModelError) as exc:
        return _refuse(str(exc))
    return plan, project, found, provider, spec, (task, inputs), workspace


def _run(
    args: argparse.Namespace,
    plan: Any,
    project: Path | None,
    found: Any,
    provider: Any,
    spec: str,
    ask: tuple[str, dict[str, str]],
    workspace: Path,
    prepare: Any,
) -> int:
    task, inputs = ask
    from charter.runtime.audit import AuditLog
    from charter.runtime.policy.env import build_env
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
    run_dir = workspace / ".charter" / "runs" / run_id
    cancel = threading.Event()
    with _SignalGuard(raising=False, cancel=cancel) as guard:
        try:
            _private_dir(run_dir)
            with _private_file(run_dir / "plan.json") as out:
                out.write(plan.to_json())
            home = _private_dir(run_dir / "home")
            events_file = _private_file(run_dir / "events.jsonl")
        except OSError as exc:
            return _refuse(f"cannot create the run directory {run_dir}: {exc.strerror or exc}")
        from charter.runtime.sandbox.containment import ContainmentRefused, prepare_for_run

        # Every command runs in the sandbox its stage's profile declares; a
        # run that would have to run them uncontained without the user's say
        # refuses.
        try:
            containment = prepare_for_run(
                plan,
                workspace=workspace,
                run_dir=run_dir,
                home=home,
                unattended=bool(args.yolo or args.allow),
            )
        except ContainmentRefused as exc:
            events_file.close()
            return _refuse(str(exc))
        redactor = Redactor()
        # Credentials in the environment (OPENAI_API_KEY and the like) are
        # hidden from every view of the run, whoever prints them.
        redactor.add_env(os.environ)
        env = build_env(os.environ, home=home)
        audit = AuditLog(
            run_dir / "audit.jsonl", redact=lambda text: redactor.redact(text, "stored")
        )
        bus = EventBus([JsonLinesSink(events_file, owns=True)])
        if args.format == "json":
            bus.add(JsonLinesSink(sys.stdout))
        elif args.quiet:
            bus.add(QuietView())
        else:
            bus.add(LiveView())
        session_store = None
        try:
            book = None
            if args.session is not None or args.resume:
                from charter.runtime.run.sessions import (
                    SessionStore,
                    SessionStoreError,
                    sessions_path,
                )

                if args.session is None:
                    return _refuse("--resume needs --session NAME: which session to continue")
                try:
                    session_store = SessionStore(sessions_path(workspace))
                    book = session_store.open(args.session, found.name, resume=bool(args.resume))
                except (SessionStoreError, OSError, sqlite3.Error) as exc:
                    return _refuse(f"cannot open session {args.session!r}: {exc}")
            prompter = Prompter(
                LineSource(sys.stdin),
                timeout_s=float(found.limits.interaction_timeout_secs),
                cancel=cancel,
                bus=bus,
            )
            options = RunOptions(
                prepared=prepare(plan),
                agent=found.name,
                task=task,
                inputs=inputs,
                workspace=workspace,
                run_dir=run_dir,
                run_id=run_id,
                provider=provider,
                approvals=PromptApprovals(prompter),
                bus=bus,
                audit=audit,
                redactor=redactor,
                env=env,
                yolo=bool(args.yolo),
                # Each agent's session reads these as its plan names them.
                allow=tuple(args.allow),
                prompter=prompter,
                cancel=cancel,
                project_root=project.resolve() if project is not None else None,
                containment=containment,
                session=book,
                stage_providers=tuple(
                    x.strip() for x in args.stage_models.split(",") if x.strip()
                ),
            )
            return _execute(args, options, plan, found, spec, guard, execute_run)
        finally:
            if session_store is not None:
                session_store.close()
            containment.close()
            audit.close()
            bus.close()


def _execute(
    args: argparse.Namespace,
    options: Any,
    plan: Any,
    found: Any,
    spec: str,
    guard: _SignalGuard,
    execute_run: Any,
) -> int:
    bus, audit, run_dir, run_id = options.bus, options.audit, options.run_dir, options.run_id
    shown_model = spec if not spec.startswith("script:") else f"script:{Path(spec[7:]).name}"
    bus.emit(
        "run_started",
        "main",
        run_id=run_id,
        agent_name=found.name,
        model=shown_model,
        plan_digest=plan.digest,
        workspace=str(options.workspace),
        run_dir=str(run_dir),
        yolo=bool(args.yolo),
        allow=sorted(options.allow),
        # What the run was asked to do, so its record says which task (a
        # scheduled run's prompt, a resumed session's next request) it ran.
        task=options.redactor.redact(options.task, "stored"),
        session=options.session.name if options.session is not None else None,
    )
    audit.write("run_started", run=run_id, agent=found.name, plan=plan.digest, model=shown_model)
    for line in options.containment.notices:
        bus.emit("notice", "main", message=line)
        audit.write("sandbox", run=run_id, notice=line)
    output_path: Path | None = None
    code = EXIT_NO_OUTPUT
    status, reason, output = "interrupted", "interrupted before the agent started", None
    turns = calls = 0
    forced: list[str] = []
    interrupted = guard.seen[0] if guard.seen else None
    if interrupted is None:
        try:
            report = execute_run(options)
        finally:
            # The run's event loop put Python's own handlers back: what
            # follows writes the records and must not be cut short.
            guard.arm()
        result = report.result
        status, reason, output = result.status, result.reason, result.output
        turns, calls, forced = result.turns, result.tool_calls, list(result.gates_forced)
        interrupted = report.interrupted
        if interrupted is None and guard.seen:
            interrupted = guard.seen[0]  # before the run's own handlers were up
        if report.completed and result.output is not None:
            ext = _EXTENSIONS.get((result.output_format or "").strip().lower(), "txt")
            output_path = run_dir / f"output.{ext}"
            with _private_file(output_path) as out:
                out.write(result.output)
            code = EXIT_OK
            if args.output is not None:
                try:
                    args.output.write_text(result.output, encoding="utf-8")
                except OSError as exc:
                    print(
                        f"charter run: cannot write {args.output}: {exc.strerror or exc}",
                        file=sys.stderr,
                    )
                    code = EXIT_REFUSED
    if interrupted is not None:
        code = 128 + interrupted
        status = "interrupted"
    audit.write(
        "run_finished",
        run=run_id,
        status=status,
        reason=reason,
        gates_forced=forced or None,
        exit_code=code,
    )
    bus.emit(
        "run_finished",
        "main",
        status=status,
        reason=reason,
        turns=turns,
        tool_calls=calls,
        gates_forced=forced,
        output=str(output_path) if output_path else None,
        output_text=output if (args.format == "json") else None,
        audit=str(run_dir / "audit.jsonl"),
        audit_hash=audit.head,
        events=str(run_dir / "events.jsonl"),
        exit_code=code,
    )
    if code == EXIT_OK and not (args.format == "json") and output is not None:
        sys.stdout.write(output if output.endswith("\n") else output + "\n")
        sys.stdout.flush()
    return code


def _private_dir(path: Path) -> Path:
    """A directory only the user can enter, whatever the umask. Missing
    parents (``.charter/runs``) are made the same way."""
    if not path.parent.is_dir():
        _private_dir(path.parent)
    path.mkdir(mode=0o700)
    if os.name == "posix":
        os.chmod(path, 0o700)  # mkdir's mode is masked by the umask; never widened
    return path


def _private_file(path: Path) -> IO[str]:
    """A new file only the user can read, open for writing text."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    if os.name == "posix":
        os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")
