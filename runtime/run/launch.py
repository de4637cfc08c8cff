"""Starting one ``charter run``: from a request and a plan to a finished run.

:func:`launch_run` is what the ``charter run`` verb calls once it has parsed
its arguments; an embedder calls it the same way. It takes a
:class:`LaunchRequest` (the verb's options as data) and a loader that
returns the plan (a plan file read, or a project compiled by the caller: the
runtime never compiles), checks everything a run needs before it starts, and
then runs it. Every run gets a directory, ``<workspace>/.charter/runs/<run-id>/``,
private to the user (0700, files 0600, whatever the umask), holding the plan
it ran (``plan.json``), the audit log (``audit.jsonl``, a hash chain sealed by
``run_finished``), the event stream (``events.jsonl``) and the answer
(``output.<ext>``).

A run that cannot start raises :class:`RunRefused`, which carries the exit
code (2, or 128 + the signal for one interrupted while loading); a run that
started returns a :class:`LaunchResult`: 0 with an output, 4 without one
(limits, a model failure, a script whose expectations were not met), 128 +
the signal when interrupted. The answer is returned for the caller to print;
the run's own view (live, quiet or JSON events) is written as it goes.

SIGINT and SIGTERM end the run within about a second, whatever is in flight
(see :mod:`charter.runtime.run.runner`); ``run_finished`` is still written. A
signal before the run started, or a second one while it finishes, never
unwinds into a traceback.
"""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

from charter.runtime import models
from charter.runtime.audit import AuditLog
from charter.runtime.errors import CharterError
from charter.runtime.models import ModelError, ModelProvider
from charter.runtime.plan import AgentPlan, Plan
from charter.runtime.plan.prepared import prepare
from charter.runtime.policy.env import build_env
from charter.runtime.policy.session import SessionError
from charter.runtime.redact import Redactor
from charter.runtime.run.events import EventBus, JsonLinesSink, LiveView, QuietView
from charter.runtime.run.people import LineSource, PromptApprovals, Prompter
from charter.runtime.run.runner import RunOptions, execute_run
from charter.runtime.run.sessions import SessionStore, SessionStoreError, sessions_path
from charter.runtime.run.workdir import workdir_concern
from charter.runtime.sandbox.containment import ContainmentRefused, prepare_for_run

__all__ = [
    "DEFAULT_MODEL_RETRIES",
    "DEMO_SCRIPT",
    "EXIT_NO_OUTPUT",
    "EXIT_OK",
    "EXIT_REFUSED",
    "LaunchRequest",
    "LaunchResult",
    "PlanLoader",
    "RunRefused",
    "launch_run",
]

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

# The plan and the project directory it was compiled from (None for a plan
# file), or why there is none (a message).
PlanLoader = Callable[[], "tuple[Plan, Path | None] | str"]


class RunRefused(CharterError):
    """The run did not start: the message says why, ``exit_code`` is what
    ``charter run`` exits with (2; 128 + the signal when one arrived first)."""

    def __init__(self, message: str, exit_code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchRequest:
    """What ``charter run``'s options ask for, as data."""

    agent: str
    # the plan file or project directory given: where the demo script used
    # when no model is named is looked for (None: nowhere)
    target: Path | None = None
    task: str | None = None
    # named inputs as given, KEY=VALUE or KEY=@FILE (the file is read)
    inputs: Sequence[str] = ()
    model: str | None = None
    # the providers the --model endpoint serves, comma-separated
    stage_models: str = ""
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    model_timeout: float | None = None
    model_retries: int | None = None
    yolo: bool = False
    allow: Sequence[str] = ()
    workspace: Path | None = None  # None: the current directory
    output: Path | None = None  # also write the answer here
    session: str | None = None
    resume: bool = False
    view: Literal["live", "quiet", "json"] = "live"


@dataclass(frozen=True, slots=True)
class LaunchResult:
    code: int
    # what the caller prints on stdout: the answer of a completed run that
    # is not shown as JSON events, else None
    answer: str | None


def launch_run(request: LaunchRequest, load: PlanLoader) -> LaunchResult:
    """Check what the run needs, load its plan with ``load`` (under the
    signal guard, so Ctrl-C while compiling is no traceback) and run it."""
    try:
        with _SignalGuard(raising=True):
            ready = _prepare_run(request, load)
    except _Interrupted as exc:
        raise RunRefused("interrupted before the run started", 128 + exc.signum) from None
    try:
        return _run(request, ready)
    except SessionError as exc:
        raise RunRefused(str(exc)) from None
    finally:
        ready.provider.close()


@dataclass(frozen=True, slots=True)
class _Ready:
    """Everything checked before a run starts."""

    plan: Plan
    project: Path | None
    found: AgentPlan
    provider: ModelProvider
    spec: str
    task: str
    inputs: dict[str, str]
    workspace: Path


def _default_model(project: Path | None, plan_path: Path | None, agent_root: str) -> str | None:
    places = []
    if project is not None:
        places += [project / agent_root / DEMO_SCRIPT, project / DEMO_SCRIPT]
    elif plan_path is not None:
        places.append(plan_path.parent / DEMO_SCRIPT)
    for place in places:
        if place.is_file():
            return f"script:{place}"
    return None


def _inputs(request: LaunchRequest) -> dict[str, str]:
    """The caller's named inputs (``KEY=VALUE``; ``KEY=@FILE`` reads the
    file). Caller-seeded regions are filled from these, as Leviath fills
    them from ``--<region> TEXT|@FILE``."""
    out: dict[str, str] = {}
    for item in request.inputs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RunRefused("--input takes KEY=VALUE (or KEY=@FILE)")
        if value.startswith("@"):
            try:
                value = Path(value[1:]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise RunRefused(
                    f"--input {key.strip()}=@{value[1:]}: cannot read the file: {exc}"
                ) from None
        out[key.strip()] = value
    return out


def _task(request: LaunchRequest, inputs: dict[str, str]) -> str:
    parts: list[str] = []
    if request.task:
        parts.append(request.task)
    if inputs:
        parts.append("Inputs:\n" + "\n".join(f"{k}: {v}" for k, v in inputs.items()))
    return "\n\n".join(parts) if parts else "No task was given: follow the stage instructions."


class _Interrupted(BaseException):
    """SIGINT or SIGTERM outside the run's own event loop (while compiling,
    say): unwinds the command like KeyboardInterrupt, for either signal. A
    BaseException on purpose: an ``except Exception`` on the way up must not
    swallow it."""

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


def _missing_inputs(request: LaunchRequest, required: Sequence[str]) -> list[str]:
    given = {item.partition("=")[0].strip() for item in request.inputs}
    if request.task:
        given.add("task")
    return [key for key in required if key not in given]


def _task_refusal(request: LaunchRequest, found: AgentPlan) -> str | None:
    """A task given to an agent whose context layout has no region for it
    would be ignored, so it is refused, as Leviath refuses it (an agent
    without a layout reads the task from the conversation)."""
    if not request.task:
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


def _required_messages(found: AgentPlan, missing: Sequence[str]) -> list[str]:
    """What the blueprint says when a required region's caller input is
    missing (its ``required_message``, ``{region}`` filled in), as Leviath
    says it at spawn."""
    out: dict[str, str] = {}
    for stage in found.stages:
        for region in stage.regions:
            seed = region.seed
            if not (region.required and region.required_message and seed is not None):
                continue
            if seed.source == "caller" and seed.key is not None and seed.key in missing:
                said = region.required_message.replace("{region}", region.name)
                how = "a task" if seed.key == "task" else f"--input {seed.key}=VALUE (or =@FILE)"
                out.setdefault(seed.key, f"{said.rstrip()} [in charter run: {how}]")
    return list(out.values())


def _check_workdir(request: LaunchRequest, workspace: Path, allowed: Sequence[str]) -> None:
    """A workspace that is a home directory or a filesystem root is
    confirmed by the person first (see runtime/run/workdir.py); with nobody
    to ask, the run does not start."""
    try:
        home: Path | None = Path.home().resolve()
    except (RuntimeError, OSError):
        home = None
    concern = workdir_concern(workspace, home, allowed)
    if concern is None:
        return
    why = (
        f"the workspace {workspace} is {concern}: an agent there can read and change "
        "everything under it"
    )
    fix = "run from a project directory, or add it to [security] allowed_workdirs in your config"
    if request.yolo or request.allow or not sys.stdin.isatty():
        raise RunRefused(f"{why}, and nobody is here to confirm it; {fix}")
    sys.stderr.write(f"charter run: {why}.\nRun here anyway? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() in ("y", "yes"):
        return
    raise RunRefused(f"not confirmed; {fix}")


def _prepare_run(request: LaunchRequest, load: PlanLoader) -> _Ready:
    workspace = (request.workspace or Path.cwd()).resolve()
    if not workspace.is_dir():
        raise RunRefused(f"{workspace}: the workspace is not a directory")
    inputs = _inputs(request)
    task = _task(request, inputs)
    loaded = load()
    if isinstance(loaded, str):
        raise RunRefused(loaded)
    plan, project = loaded
    found = plan.body.agent(request.agent)
    if found is None:
        known = ", ".join(a.name for a in plan.body.agents) or "none"
        raise RunRefused(f"no agent named {request.agent!r} in the plan (agents: {known})")
    _check_workdir(request, workspace, found.allowed_workdirs)
    unread = _task_refusal(request, found)
    if unread is not None:
        raise RunRefused(unread)
    missing = _missing_inputs(request, found.required_inputs)
    said = _required_messages(found, missing)
    if said:
        raise RunRefused("; ".join(said))
    if missing:
        raise RunRefused(
            f"agent {found.name!r} needs "
            + ", ".join("a task" if key == "task" else f"--input {key}=VALUE" for key in missing)
            + " (a required region is filled from it; Leviath does not start without it either)"
        )
    spec = request.model or _default_model(project, request.target, found.root)
    if spec is None:
        raise RunRefused(
            f"no --model given and no {DEMO_SCRIPT} ships with agent {request.agent!r}; "
            "pass --model script:FILE or --model openai:MODEL"
        )
    options: dict[str, Any] = {}
    if spec.partition(":")[0].strip().lower() == "openai":
        # The HTTP stack is loaded only for an openai: model (see
        # charter.runtime.models): a scripted run never pays for it.
        from charter.runtime.models.openai import RetryPolicy

        timeout = request.model_timeout or found.limits.model_request_timeout_secs
        if timeout is not None:
            options["timeout_s"] = float(timeout)
        retries = DEFAULT_MODEL_RETRIES if request.model_retries is None else request.model_retries
        options["retry"] = RetryPolicy(attempts=retries + 1)
    elif request.model_timeout is not None or request.model_retries is not None:
        raise RunRefused("--model-time-limit and --model-retries apply to openai: models only")
    try:
        # Looked up when called: a test (or an embedder) may put its own
        # provider factory in charter.runtime.models.
        provider = models.load_provider(
            spec, base_url=request.base_url, api_key_env=request.api_key_env, **options
        )
    except (ValueError, ModelError) as exc:
        raise RunRefused(str(exc)) from None
    return _Ready(plan, project, found, provider, spec, task, inputs, workspace)


def _run(request: LaunchRequest, ready: _Ready) -> LaunchResult:
    plan, found, workspace = ready.plan, ready.found, ready.workspace
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
            raise RunRefused(
                f"cannot create the run directory {run_dir}: {exc.strerror or exc}"
            ) from None
        # Every command runs in the sandbox its stage's profile declares; a
        # run that would have to run them uncontained without the user's say
        # refuses.
        try:
            containment = prepare_for_run(
                plan,
                workspace=workspace,
                run_dir=run_dir,
                home=home,
                unattended=bool(request.yolo or request.allow),
            )
        except ContainmentRefused as exc:
            events_file.close()
            raise RunRefused(str(exc)) from None
        redactor = Redactor()
        # Credentials in the environment (OPENAI_API_KEY and the like) are
        # hidden from every view of the run, whoever prints them.
        redactor.add_env(os.environ)
        env = build_env(os.environ, home=home)
        audit = AuditLog(
            run_dir / "audit.jsonl", redact=lambda text: redactor.redact(text, "stored")
        )
        bus = EventBus([JsonLinesSink(events_file, owns=True)])
        if request.view == "json":
            bus.add(JsonLinesSink(sys.stdout))
        elif request.view == "quiet":
            bus.add(QuietView())
        else:
            bus.add(LiveView())
        session_store = None
        try:
            book = None
            if request.session is not None or request.resume:
                if request.session is None:
                    raise RunRefused("--resume needs --session NAME: which session to continue")
                try:
                    session_store = SessionStore(sessions_path(workspace))
                    book = session_store.open(request.session, found.name, resume=request.resume)
                except (SessionStoreError, OSError, sqlite3.Error) as exc:
                    raise RunRefused(f"cannot open session {request.session!r}: {exc}") from None
            prompter = Prompter(
                LineSource(sys.stdin),
                timeout_s=float(found.limits.interaction_timeout_secs),
                cancel=cancel,
                bus=bus,
            )
            options = RunOptions(
                prepared=prepare(plan),
                agent=found.name,
                task=ready.task,
                inputs=ready.inputs,
                workspace=workspace,
                run_dir=run_dir,
                run_id=run_id,
                provider=ready.provider,
                approvals=PromptApprovals(prompter),
                bus=bus,
                audit=audit,
                redactor=redactor,
                env=env,
                yolo=bool(request.yolo),
                # Each agent's session reads these as its plan names them.
                allow=tuple(request.allow),
                prompter=prompter,
                cancel=cancel,
                project_root=ready.project.resolve() if ready.project is not None else None,
                containment=containment,
                session=book,
                stage_providers=tuple(
                    x.strip() for x in request.stage_models.split(",") if x.strip()
                ),
            )
            return _execute(request, options, audit, ready.spec, guard)
        finally:
            if session_store is not None:
                session_store.close()
            containment.close()
            audit.close()
            bus.close()


def _execute(
    request: LaunchRequest, options: RunOptions, audit: AuditLog, spec: str, guard: _SignalGuard
) -> LaunchResult:
    bus, run_dir, run_id = options.bus, options.run_dir, options.run_id
    plan = options.prepared.plan
    as_json = request.view == "json"
    shown_model = spec if not spec.startswith("script:") else f"script:{Path(spec[7:]).name}"
    bus.emit(
        "run_started",
        "main",
        run_id=run_id,
        agent_name=options.agent,
        model=shown_model,
        plan_digest=plan.digest,
        workspace=str(options.workspace),
        run_dir=str(run_dir),
        yolo=bool(request.yolo),
        allow=sorted(options.allow),
        # What the run was asked to do, so its record says which task (a
        # scheduled run's prompt, a resumed session's next request) it ran.
        task=options.redactor.redact(options.task, "stored"),
        session=options.session.name if options.session is not None else None,
    )
    audit.write("run_started", run=run_id, agent=options.agent, plan=plan.digest, model=shown_model)
    containment = options.containment
    for line in containment.notices if containment is not None else ():
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
            if request.output is not None:
                try:
                    request.output.write_text(result.output, encoding="utf-8")
                except OSError as exc:
                    # Said before run_finished, whose record carries this code.
                    print(
                        f"charter run: cannot write {request.output}: {exc.strerror or exc}",
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
        output_text=output if as_json else None,
        audit=str(run_dir / "audit.jsonl"),
        audit_hash=audit.head,
        events=str(run_dir / "events.jsonl"),
        exit_code=code,
    )
    answer = output if code == EXIT_OK and not as_json else None
    return LaunchResult(code, answer)


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
