"""Every exception the runtime periphery raises to its callers descends from
CharterError, so one ``except CharterError`` catches whatever Charter reports.
The builtin base each had before stays, so existing ``except ValueError`` or
``except OSError`` handlers keep catching them."""

from __future__ import annotations

import pytest

from charter.runtime.errors import CharterError
from charter.runtime.mcp.client import ConnectRefused
from charter.runtime.mcp.launch import LaunchError
from charter.runtime.mcp.lock import LockError
from charter.runtime.models.base import (
    ModelError,
    ModelRequestError,
    ModelResponseError,
    ModelTimeoutError,
    ScriptError,
    ScriptExhaustedError,
    ScriptExpectationError,
)
from charter.runtime.net.resolve import ResolutionError
from charter.runtime.net.transport import BlockedRequest
from charter.runtime.net.urlpolicy import UrlError, UrlRefused, parse_url
from charter.runtime.redact import TooManySecrets
from charter.runtime.sandbox.containment import ContainmentRefused
from charter.runtime.sandbox.launcher import SandboxError, SandboxUnavailable
from charter.runtime.serve.plans import PlanLoadError
from charter.runtime.serve.server import ListenError
from charter.runtime.tools.tasks.store import TaskStoreError

ERRORS: list[tuple[type[Exception], type[Exception]]] = [
    # (the class, the builtin base it kept)
    (BlockedRequest, Exception),
    (ConnectRefused, Exception),
    (ContainmentRefused, Exception),
    (LaunchError, Exception),
    (ListenError, ValueError),
    (LockError, ValueError),
    (ModelError, Exception),
    (ModelRequestError, Exception),
    (ModelResponseError, Exception),
    (ModelTimeoutError, Exception),
    (PlanLoadError, Exception),
    (ResolutionError, Exception),
    (SandboxError, Exception),
    (SandboxUnavailable, Exception),
    (ScriptError, ValueError),
    (ScriptExhaustedError, Exception),
    (ScriptExpectationError, Exception),
    (TaskStoreError, OSError),
    (TooManySecrets, Exception),
    (UrlError, ValueError),
    (UrlRefused, Exception),
]


@pytest.mark.parametrize(("cls", "builtin"), ERRORS, ids=[c.__name__ for c, _ in ERRORS])
def test_descends_from_charter_error_and_keeps_its_builtin_base(
    cls: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(cls, CharterError)
    assert issubclass(cls, builtin)


def test_a_refused_url_is_caught_as_charter_error_with_its_reason() -> None:
    with pytest.raises(CharterError) as caught:
        parse_url("ftp://example.com/")
    assert isinstance(caught.value, UrlError)
    assert caught.value.reason == "unsupported-scheme"
