"""``charter run PLAN_OR_PROJECT --agent NAME``: run an agent from a plan.

Given a project directory the project is compiled first; given a plan file
(JSON) it is loaded and its digest checked. The run itself, from the checks
before it starts to the sealed audit log, is the runtime's
(:func:`charter.runtime.launch_run`, in ``runtime/run/launch.py``, which
describes the run directory): this verb parses the options, hands the runtime
a loader for the plan, and prints the refusal or the answer.

Model requests are bounded: ``--model-time-limit`` (else the config's
``request_timeout_secs``, else 120 s) per attempt and ``--model-retries``
retries (default 3); each retry is an event with its reason.

SIGINT and SIGTERM end the run within about a second, whatever is in flight;
``run_finished`` is still written. A signal before the run started, or a
second one while it finishes, never prints a traceback.

Exit codes: 0 the run ended with an output; 4 it ended without one (limits,
a model failure, a script whose expectations were not met); 2 it refused to
start (a bad plan or project, an unknown agent, a bad model spec, usage);
130 it was interrupted with Ctrl-C (143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Literal

# The front doors load nothing until a name is used, so `charter run --help`
# and the other verbs' start-up never pay for the run machinery.
import charter.runtime as runtime
from charter.compiler.cli._options import (
    add_format,
    add_hidden_alias,
    add_workspace,
    from_options,
)
from charter.compiler.cli._plan_arg import add_plan_operand, load_plan_or_project

__all__ = ["add_arguments", "run"]

# Said in --model-retries' help; the runtime applies the same default.
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


def _refuse(message: str, code: int = 2) -> int:
    print(f"charter run: {message}", file=sys.stderr)
    return code


def _request(args: argparse.Namespace) -> runtime.LaunchRequest:
    view: Literal["live", "quiet", "json"] = (
        "json" if args.format == "json" else "quiet" if args.quiet else "live"
    )
    return from_options(
        runtime.LaunchRequest, args, inputs=tuple(args.input), allow=tuple(args.allow), view=view
    )


def run(args: argparse.Namespace) -> int:
    if args.quiet and args.format == "json":
        return _refuse("-q and --format json are two views of a run: choose one")

    def load() -> tuple[runtime.Plan, Path | None] | str:
        # Called by the runtime after its own checks of the options, under
        # its signal guard: compiling a project can take a while.
        loaded = load_plan_or_project(
            args.target, config=args.config, use_user_config=not args.no_user_config
        )
        if isinstance(loaded, str):
            return loaded
        return loaded.plan, loaded.project

    try:
        end = runtime.launch_run(_request(args), load)
    except runtime.RunRefused as exc:
        return _refuse(str(exc), exc.exit_code)
    if end.answer is not None:
        sys.stdout.write(end.answer if end.answer.endswith("\n") else end.answer + "\n")
        sys.stdout.flush()
    return end.code
