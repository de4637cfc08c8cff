"""Running an agent core's own Python tools (``agent/tools/<id>/module.py``).

The gate pipeline calls :func:`run_authored` only after every gate has
passed: visibility, schema, the tool's singular registry capability, the
permission decision and approval. Nothing of the module is loaded before
that, so a call that is refused never runs a line of the tool's code.

Order of work for one call:

1. The module file is located below the project root from the plan's
   relative path, and its bytes are read once.
2. Their sha256 must equal the digest the compiler pinned. A module edited
   after compile is refused and never imported.
3. Those same bytes (not a second read of the file) are compiled and
   executed as a fresh module; the entrypoint named by the plan is called
   as ``execute(ctx, args)`` with a :class:`ToolContext`. A coroutine
   function runs on its own event loop in the worker thread.
4. The return value becomes a :class:`~charter.runtime.results.ToolResult`
   (see :func:`convert_result`); an exception becomes an error result. Every
   text is redacted for its view before anyone sees it.

Import and call run in a worker thread with a deadline (the plan's
``limits.shell_timeout_secs``). What a timeout can and cannot stop:

* the caller always gets a ``timeout`` result when the deadline passes, and
  the run goes on;
* an ``async`` entrypoint is cancelled at its next ``await``;
* ``ctx.cancelled`` is set, so cooperative code can stop early;
* a synchronous function that never checks ``ctx.cancelled`` keeps running
  in its (daemon) thread until it returns: CPython cannot stop a thread
  from outside. Whatever it does after the deadline is not reported.

``ctx.capability`` checks only the tool's own ``capabilities`` list (its
effect grants). The singular registry capability that lets the tool be
called is checked by the capability gate and is not visible here. In this
in-process mode (the anchor's ``host_shared``) module code can call any
Python or OS API directly; the facade makes well-behaved tools state and
check what they do.

When the run's stage has a sandbox in force (``rt.sandbox``, set by
``charter run``), the call instead runs in a fresh interpreter inside that
sandbox (``charter.runtime.sandbox.authored_child``): same digest check,
same context, same result conversion, but the module never runs in the
runtime's process, a timeout stops it for good, and it reaches only what the
sandbox lets it.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import inspect
import json
import os
import sys
import threading
import time
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from charter.runtime.capped import read_regular
from charter.runtime.policy.capabilities import is_granted
from charter.runtime.redact import redacted_views
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.authored_sdk import CapabilityDenied, install

if TYPE_CHECKING:
    from charter.runtime.plan import AuthoredTool, ToolEntry
    from charter.runtime.sandbox.container import ContainerSandbox
    from charter.runtime.sandbox.launcher import Sandbox
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "MAX_MODULE_BYTES",
    "MAX_RESULT_CHARS",
    "RESERVED_KEYS",
    "CapabilityDenied",
    "CapabilityFacade",
    "ToolContext",
    "ToolOutput",
    "TurnInfo",
    "convert_result",
    "run_authored",
]

MAX_MODULE_BYTES = 2 * 1024 * 1024  # the compiler refuses larger modules too
MAX_RESULT_CHARS = 1_000_000
MAX_OUTPUT_MESSAGES = 200
# Lifecycle fields the runtime owns; a tool cannot claim it was denied,
# approved or not started.
RESERVED_KEYS = frozenset({"executionStarted", "denial", "approval"})
_TEXT_KEYS = frozenset({"content", "model_output", "display_output", "is_error", "error"})


@dataclass(frozen=True, slots=True)
class CapabilityFacade:
    """What ``ctx.capability`` offers: the tool's effect grants, read-only."""

    grants: tuple[str, ...]
    tool: str

    slot_path: str = ""

    def can(self, capability: str, *, slot_path: str | None = None) -> bool:
        """Whether the tool is granted ``capability``. Demiurge also takes
        ``slot_path``, naming the slot whose declaration counts; the plan
        pins only this tool's grants, so another slot's answer is no."""
        if slot_path not in (None, "", self.slot_path):
            return False
        return isinstance(capability, str) and is_granted(capability, self.grants)

    def require(self, capability: str, *, slot_path: str | None = None) -> None:
        if not self.can(capability, slot_path=slot_path):
            listed = ", ".join(self.grants) or "none"
            raise CapabilityDenied(
                f"tool '{self.tool}' is not granted the capability {capability!r} "
                f"(its capabilities: {listed})"
            )


@dataclass(frozen=True, slots=True)
class TurnInfo:
    """``ctx.turn``: where in the run this call happens."""

    agent: str = ""
    stage: str = ""
    run_id: str = ""
    call_id: str = ""


@dataclass(slots=True)
class ToolOutput:
    """``ctx.output``: progress messages for the operator while the tool
    runs. They are kept (bounded) and shown in the operator view of the
    result; the model does not see them."""

    messages: list[str] = field(default_factory=list)
    dropped: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def send(self, text: Any) -> None:
        with self._lock:
            if len(self.messages) >= MAX_OUTPUT_MESSAGES:
                self.dropped += 1
                return
            self.messages.append(_to_text(text)[:10_000])

    write = send


@dataclass(frozen=True, slots=True)
class ToolContext:
    """The ``ctx`` an authored entrypoint receives."""

    turn: TurnInfo
    slot_id: str
    slot_path: str
    capability: CapabilityFacade
    output: ToolOutput
    workspace: Path
    cancelled: threading.Event


# -- results ----------------------------------------------------------------------


def _to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, Mapping | list | tuple | int | float):
        try:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):
            pass
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a __str__ that raises still needs an answer
        return f"<{type(value).__name__} object>"


def _json_safe(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` that only holds JSON types (others become text)."""
    if depth > 20:
        return "<too deep>"
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v, depth + 1) for v in value]
    return _to_text(value)


def _fields(value: Any) -> Mapping[str, Any] | None:
    """The fields of a compatible result: a mapping, or an object with a
    ``content`` attribute (an SDK ToolResult-like class)."""
    if isinstance(value, Mapping):
        return value
    if hasattr(value, "content") and not isinstance(value, str | bytes):
        names = [*_TEXT_KEYS, "data", "terminate", *RESERVED_KEYS]
        return {n: getattr(value, n) for n in names if hasattr(value, n)}
    return None


def _cap(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return (
        text[:MAX_RESULT_CHARS] + f"\n[truncated: {len(text) - MAX_RESULT_CHARS} more characters]"
    )


def convert_result(value: Any) -> ToolResult:
    """Turn what an entrypoint returned into a result (not yet redacted).

    * a :class:`ToolResult` is kept, with its status (a tool cannot return a
      refusal status such as ``denied``: those become ``error``);
    * a mapping, or an object with a ``content`` attribute: ``content`` is
      the model text unless ``model_output`` is given, ``display_output`` is
      the operator text, ``is_error`` (or a true ``error``) marks a failure,
      and the other keys are kept as data; ``executionStarted``, ``denial``
      and ``approval`` are ignored;
    * anything else is converted to text (JSON when it can be).
    """
    if isinstance(value, ToolResult):
        status = value.status if value.status in ("ok", "error", "timeout") else "error"
        return ToolResult(
            status,
            _cap(value.content),
            display=None if value.display is None else _cap(value.display),
            data=_json_safe(value.data) if isinstance(value.data, dict) else {},
        )
    fields = _fields(value)
    if fields is None:
        text = _to_text(value)
        return ToolResult("ok", _cap(text) if text else "(the tool returned no output)")
    content = _to_text(fields.get("content"))
    model = fields.get("model_output")
    display = fields.get("display_output")
    failed = bool(fields.get("is_error")) or fields.get("error") is True
    extra = {
        str(k): v
        for k, v in fields.items()
        if str(k) not in _TEXT_KEYS and str(k) not in RESERVED_KEYS
    }
    data = extra.pop("data", None)
    payload: dict[str, Any] = _json_safe(extra)
    if isinstance(data, Mapping):
        payload.update(_json_safe(data))
    model_text = _to_text(model) if model is not None else content
    if not model_text:
        model_text = "(the tool returned no output)"
    if failed and not model_text.startswith("[error]"):
        model_text = f"[error] {model_text}"
    return ToolResult(
        "error" if failed else "ok",
        _cap(model_text),
        rule="authored-tool-error" if failed else None,
        display=None if display is None else _cap(_to_text(display)),
        data=payload,
    )


# -- loading ------------------------------------------------------------------------

_MODULES: dict[tuple[str, str], types.ModuleType] = {}
_MODULES_LOCK = threading.Lock()


def _load(path: Path, data: bytes, digest: str, tool_id: str) -> types.ModuleType:
    """Execute ``data`` (the bytes whose digest was just checked) as a
    module; one module object per file and digest, reused across calls."""
    key = (str(path), digest)
    with _MODULES_LOCK:
        cached = _MODULES.get(key)
    if cached is not None:
        return cached
    # The tool's folder is a package of its own, so the module's relative
    # imports (`from .search import ...`, helpers shipped beside module.py)
    # resolve inside that folder, as Demiurge's loader makes them.
    package = f"charter_authored.{tool_id.replace('-', '_')}_{digest[:16]}"
    name = f"{package}.{path.stem}"
    holder = types.ModuleType(package)
    holder.__path__ = [str(path.parent)]
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__package__ = package
    code = compile(data, str(path), "exec", dont_inherit=True)
    install()  # `from demiurge.sdk import ToolResult` (see charter.runtime.tools.authored_sdk)
    # Registered while it runs so dataclasses and pickling can find it.
    sys.modules.setdefault("charter_authored", _namespace("charter_authored"))
    sys.modules[package] = holder
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - the module's own, digest-checked code
    except BaseException:
        sys.modules.pop(name, None)
        sys.modules.pop(package, None)
        raise
    with _MODULES_LOCK:
        _MODULES[key] = module
    return module


def _namespace(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []
    return module


def _slot_path(directory: str, agent_root: str) -> str:
    """The tool's path relative to its agent core (``agent/tools/<id>``)."""
    if agent_root in ("", "."):
        return directory
    return directory.removeprefix(agent_root.rstrip("/") + "/")


def _locate(root: Path, authored: AuthoredTool) -> Path | str:
    rel = Path(authored.module)
    if rel.is_absolute() or ".." in rel.parts:
        return f"the plan's module path {authored.module!r} is not below the project root"
    base = root.resolve()
    path = (base / rel).resolve()
    if base != path and base not in path.parents:
        return f"the module path {authored.module!r} leaves the project root"
    return path


# -- running ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Outcome:
    value: Any = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Future[Any] | None = None


def _worker(
    outcome: _Outcome,
    path: Path,
    data: bytes,
    digest: str,
    entry: ToolEntry,
    ctx: ToolContext,
    args: dict[str, Any],
) -> None:
    authored = entry.authored
    assert authored is not None
    _worker_in(outcome, path, data, digest, authored.tool_id, authored.entrypoint, ctx, args)


def _worker_in(
    outcome: _Outcome,
    path: Path,
    data: bytes,
    digest: str,
    tool_id: str,
    entrypoint: str,
    ctx: ToolContext,
    args: dict[str, Any],
) -> None:
    """Load the module and call its entrypoint (in a worker thread, or in
    the contained child process: ``charter.runtime.sandbox.authored_child``)."""
    try:
        module = _load(path, data, digest, tool_id)
        function = entrypoint.rpartition(":")[2] or "execute"
        target = getattr(module, function, None)
        if not callable(target):
            raise LookupError(f"the module defines no callable '{function}'")
        if inspect.iscoroutinefunction(target):
            loop = asyncio.new_event_loop()
            outcome.loop = loop
            try:
                task = loop.create_task(target(ctx, args))
                outcome.task = task
                outcome.value = loop.run_until_complete(task)
            finally:
                loop.close()
        else:
            value = target(ctx, args)
            if inspect.isawaitable(value):  # a sync function handing back a coroutine
                outcome.value = asyncio.run(_await(value))
            else:
                outcome.value = value
    except BaseException as exc:  # noqa: BLE001 - everything is reported as a result
        outcome.error = exc
    finally:
        outcome.done.set()


async def _await(value: Any) -> Any:
    return await value


def _error_text(tool: str, exc: BaseException, path: Path) -> tuple[str, str, str]:
    """(rule, model text, operator text) for an exception the tool raised."""
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(path):
            where = f" (at {path.name}:{tb.tb_lineno})"
        tb = tb.tb_next
    if isinstance(exc, CapabilityDenied):
        text = f"{tool} was refused a capability: {exc}"
        return "capability-not-granted", text, text + where
    if isinstance(exc, SyntaxError) and exc.filename == str(path):
        text = f"{tool} could not be loaded: its module does not compile (line {exc.lineno})"
        return "authored-module-invalid", text, text
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001
        message = "<unprintable message>"
    text = (
        f"{tool} failed: {type(exc).__name__}: {message}"
        if message
        else (f"{tool} failed: {type(exc).__name__}")
    )
    return "tool-crashed", text, text + where


def _stopped(name: str, timed_out: bool, timeout: int, note: str) -> ToolResult:
    """The result of a call stopped at its deadline or with the run, in or
    out of process; ``note`` says what became of the work."""
    if timed_out:
        text = f"[timed out] {name} did not finish within {timeout}s; {note}"
        return ToolResult("timeout", text, rule="timeout", data={"timeout_s": timeout})
    return ToolResult(
        "error", f"[cancelled] {name} was cancelled with the run; {note}", rule="cancelled"
    )


def run_authored(
    entry: ToolEntry,
    args: Mapping[str, Any],
    rt: ToolRuntime,
    *,
    turn: TurnInfo | None = None,
    agent_root: str = "",
) -> ToolResult:
    """Run the authored tool ``entry`` for a call every gate has passed.

    ``rt`` is the run's :class:`~charter.runtime.tools.base.ToolRuntime`
    (its workspace, project root, redactor, timeout and cancel event are
    used). Never raises for anything the module does."""
    redactor = rt.redactor
    authored = entry.authored
    name = entry.name
    if authored is None:
        return refusal("unavailable", "dispatch", "authored-missing", f"'{name}' has no module")
    try:
        redactor.discover_value(dict(args))
    except Exception:  # noqa: BLE001 - discovery is best effort; redaction still runs
        pass
    root = Path(rt.project_root or rt.workspace)
    located = _locate(root, authored)
    if isinstance(located, str):
        return refusal("denied", "dispatch", "authored-module-path", f"'{name}': {located}")
    path = located
    try:
        # read with the bound, and only a regular file: a FIFO in its place
        # would hold the run, a file grown since a size check unbound it
        read = read_regular(path, MAX_MODULE_BYTES)
        if read is None or len(read) > MAX_MODULE_BYTES:
            shown = "not a regular file" if read is None else (
                f"larger than {MAX_MODULE_BYTES} bytes")  # fmt: skip
            return refusal(
                "denied",
                "dispatch",
                "authored-module-too-large" if read is not None else "authored-module-path",
                f"'{name}': {authored.module} is {shown}",
            )
        data = read
    except OSError as exc:
        return refusal(
            "unavailable",
            "dispatch",
            "authored-module-missing",
            f"'{name}': cannot read {authored.module} ({exc.strerror or type(exc).__name__})",
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != authored.module_sha256:
        # Checked before anything of the file runs: an edit since compile
        # may be anything, and the approval given was for the compiled code.
        return refusal(
            "denied",
            "dispatch",
            "authored-module-changed",
            f"'{name}': {authored.module} changed since the plan was compiled (digest "
            f"{digest[:12]}, plan pins {authored.module_sha256[:12]}); it was not loaded. "
            "Recompile the project to use the new code",
        )
    sandbox = rt.sandbox
    if sandbox is not None:
        return _run_contained(entry, path, data, digest, args, rt, turn, agent_root, sandbox)
    output = ToolOutput()
    slot_path = _slot_path(authored.directory, agent_root)
    ctx = ToolContext(
        turn=turn or TurnInfo(),
        slot_id=authored.tool_id,
        slot_path=slot_path,
        capability=CapabilityFacade(authored.capabilities, name, slot_path),
        output=output,
        workspace=Path(rt.workspace).resolve(),
        cancelled=threading.Event(),
    )
    outcome = _Outcome()
    # Arguments are a private copy: the tool cannot change what was audited.
    call_args = json.loads(json.dumps(dict(args), default=str))
    thread = threading.Thread(
        target=_worker,
        args=(outcome, path, data, digest, entry, ctx, call_args),
        name=f"authored:{name}",
        daemon=True,
    )
    timeout = max(1, int(rt.timeout_s))
    cancel = rt.cancel
    started = time.monotonic()
    thread.start()
    stopped = ""
    while not outcome.done.wait(0.02):
        if cancel.is_set():
            stopped = "cancelled"
            break
        if time.monotonic() - started >= timeout:
            stopped = "timeout"
            break
    if stopped:
        ctx.cancelled.set()
        loop, task = outcome.loop, outcome.task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass  # the loop already finished
        async_note = (
            "it was cancelled" if task is not None else "a synchronous tool may still be running"
        )
        return redacted_views(_stopped(name, stopped == "timeout", timeout, async_note), redactor)
    if outcome.error is not None:
        raised = outcome.error
        try:
            # The message may carry a credential (a URL with a password, a
            # token=... option); collect it so every view hides it.
            redactor.discover(str(raised))
        except Exception:  # noqa: BLE001 - a __str__ that raises; redaction still runs
            pass
        rule, model_text, operator_text = _error_text(name, raised, path)
        result = ToolResult(
            "error", f"[error] {model_text}", rule=rule, display=f"[error] {operator_text}"
        )
    else:
        try:
            result = convert_result(outcome.value)
        except Exception as exc:  # noqa: BLE001 - a value that cannot be converted
            result = refusal(
                "error",
                "dispatch",
                "authored-result-invalid",
                f"{name} returned a value that cannot be shown ({type(exc).__name__})",
            )
        result = ToolResult(
            result.status,
            result.content,
            gate=None,
            rule=result.rule,
            display=result.display,
            data={**result.data, "execution_started": True},
        )
    extra = ""
    if output.messages:
        extra = "\n[progress]\n" + "\n".join(output.messages)
        if output.dropped:
            extra += f"\n[{output.dropped} more progress messages dropped]"
    return redacted_views(result, redactor, extra)


def _run_contained(
    entry: ToolEntry,
    path: Path,
    data: bytes,
    digest: str,
    args: Mapping[str, Any],
    rt: ToolRuntime,
    turn: TurnInfo | None,
    agent_root: str,
    sandbox: Sandbox | ContainerSandbox,
) -> ToolResult:
    """Run the call in a fresh interpreter inside the stage's sandbox (see
    ``charter.runtime.sandbox.authored_child``); the module never runs in
    this process."""
    import uuid

    from charter.runtime.proc import run_command
    from charter.runtime.sandbox.authored_child import boot_argv

    authored = entry.authored
    assert authored is not None
    redactor = rt.redactor
    name = entry.name
    request = {
        "name": name,
        "tool_id": authored.tool_id,
        "entrypoint": authored.entrypoint,
        "digest": digest,
        "module_path": str(path),
        "module_b64": base64.b64encode(data).decode("ascii"),
        "args": json.loads(json.dumps(dict(args), default=str)),
        "turn": dataclasses.asdict(turn or TurnInfo()),
        "slot_id": authored.tool_id,
        "slot_path": _slot_path(authored.directory, agent_root),
        "capabilities": list(authored.capabilities),
        "workspace": str(Path(rt.workspace).resolve()),
    }
    file_name = f"charter-authored-{uuid.uuid4().hex}.json"
    host_file = Path(sandbox.private_tmp) / file_name
    timeout = max(1, int(rt.timeout_s))
    try:
        fd = os.open(host_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(request, f)
        proc = run_command(
            boot_argv(f"{sandbox.inside_tmp}/{file_name}"),
            cwd=Path(rt.workspace),
            env=dict(rt.env or {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}),
            timeout_s=timeout,
            output_cap=4 * MAX_RESULT_CHARS + 65536,
            cancel=rt.cancel,
            sandbox=sandbox,
        )
    finally:
        try:
            host_file.unlink()
        except OSError:
            pass
    if proc.error is not None:
        return redacted_views(
            refusal("error", "dispatch", "authored-sandbox-failed", f"{name}: {proc.error}"),
            redactor,
        )
    if proc.timed_out or proc.cancelled:
        note = "its process was stopped"
        return redacted_views(_stopped(name, proc.timed_out, timeout, note), redactor)
    try:
        answer = json.loads(proc.stdout)
        if not isinstance(answer, dict):
            raise ValueError("not an object")
    except ValueError:
        tail = proc.stderr.strip().splitlines()[-5:]
        text = f"{name} ended without an answer (exit code {proc.exit_code})"
        if tail:
            text += ": " + " / ".join(tail)[:1000]
        return redacted_views(refusal("error", "dispatch", "tool-crashed", text), redactor)
    content = str(answer.get("content", ""))
    if answer.get("raised"):
        try:
            redactor.discover(content)
        except Exception:  # noqa: BLE001 - discovery is best effort
            pass
    said = answer.get("status")
    status: Literal["ok", "error", "timeout"] = (
        said if said in ("ok", "error", "timeout") else "error"
    )
    raw_data = answer.get("data")
    data_out: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
    display = answer.get("display")
    result = ToolResult(
        status,
        content,
        gate=None,
        rule=answer.get("rule"),
        display=None if display is None else str(display),
        data={**data_out, "execution_started": True, "contained": True},
    )
    extra = ""
    messages = [str(m) for m in answer.get("progress") or ()]
    if messages:
        extra = "\n[progress]\n" + "\n".join(messages)
        if answer.get("dropped"):
            extra += f"\n[{answer['dropped']} more progress messages dropped]"
    return redacted_views(result, redactor, extra)
