"""Model providers for ``charter run``: one small interface, two providers.

* ``script:FILE`` plays a YAML script of turns (offline, deterministic);
* ``openai:MODEL`` talks to any OpenAI-compatible chat-completions endpoint.

:func:`load_provider` turns a ``--model`` spec into a provider. The HTTP stack
is imported only when an ``openai:`` spec is loaded, so commands that never
talk to a model do not pay for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from charter.runtime.models.base import (
    CHOOSE_EDGE_TOOL,
    EdgeChoice,
    Message,
    ModelError,
    ModelProvider,
    ModelRequestError,
    ModelResponseError,
    ModelTimeoutError,
    ModelToolCall,
    ModelTurn,
    RetryNotice,
    RetryObserver,
    Role,
    ScriptError,
    ScriptExhaustedError,
    ScriptExpectationError,
    ToolSpec,
    Usage,
    edge_tool_spec,
    parse_arguments,
    split_edge_calls,
)
from charter.runtime.models.script import ScriptProvider, load_script

if TYPE_CHECKING:
    from charter.runtime.models.openai import RetryPolicy

__all__ = [
    "CHOOSE_EDGE_TOOL",
    "PROVIDER_KINDS",
    "EdgeChoice",
    "Message",
    "ModelError",
    "ModelProvider",
    "ModelRequestError",
    "ModelResponseError",
    "ModelTimeoutError",
    "ModelToolCall",
    "ModelTurn",
    "RetryNotice",
    "RetryObserver",
    "Role",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptExpectationError",
    "ScriptProvider",
    "ToolSpec",
    "Usage",
    "edge_tool_spec",
    "load_provider",
    "load_script",
    "parse_arguments",
    "split_edge_calls",
]

PROVIDER_KINDS = ("script", "openai")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def load_provider(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    timeout_s: float = 120.0,
    retry: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
    **openai_options: Any,
) -> ModelProvider:
    """The provider a ``--model`` spec names.

    ``script:FILE`` loads and validates the script now, so a bad file stops
    the run before it starts. ``openai:MODEL`` reads the API key from the
    variable ``api_key_env`` of ``environ`` (default: the process
    environment); an unset or empty variable means no key. Further keyword
    options (``transport``, ``client``, ``extra_body``, ``sleep``, ``rng``)
    go to :class:`~charter.runtime.models.openai.OpenAIProvider`.

    A spec that cannot be understood raises ValueError saying what was
    expected; a script that cannot be used raises :class:`ScriptError`
    (itself a ValueError).
    """
    kind, sep, rest = spec.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in PROVIDER_KINDS:
        raise ValueError(
            f"unknown model {spec!r}: expected script:FILE (a scripted model) "
            "or openai:MODEL (an OpenAI-compatible endpoint)"
        )
    if not rest.strip():
        what = "script file" if kind == "script" else "model name"
        raise ValueError(f"model {spec!r} names no {what} after '{kind}:'")
    if kind == "script":
        if base_url is not None:
            raise ValueError("a base URL applies only to openai: models, not to a script")
        if openai_options or retry is not None:
            raise ValueError("HTTP options apply only to openai: models, not to a script")
        return ScriptProvider.from_file(rest.strip())
    if not _ENV_NAME.match(api_key_env):
        raise ValueError(f"{api_key_env!r} is not an environment variable name")
    env = os.environ if environ is None else environ
    # Imported here: httpx costs tens of milliseconds that check/validate skip.
    from charter.runtime.models.openai import DEFAULT_BASE_URL, OpenAIProvider

    return OpenAIProvider(
        rest.strip(),
        base_url=base_url or DEFAULT_BASE_URL,
        api_key=env.get(api_key_env) or None,
        api_key_env=api_key_env,
        timeout_s=timeout_s,
        retry=retry,
        **openai_options,
    )
