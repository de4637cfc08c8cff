"""Which model a stage's turn asks for, and when a failure moves it on.

With ``charter run --stage-models PROVIDERS`` (the providers the run's model
endpoint serves), a stage runs on the first entry of its own model list whose
provider is one of them, sending that entry's model name, as Leviath picks the
first entry whose provider is configured. When the entry in use stops being
usable (its key is refused, its account is out of credit, the model is not
there, or the endpoint cannot be reached after every retry) the stage moves to
the next such entry for the rest of the run, and after the last one to the
run's own model. An ordinary bad request never spends a fallback. Without
``--stage-models`` every stage runs on the run's own model, as Leviath's
``--model`` overrides every stage.
"""

from __future__ import annotations

from collections.abc import Sequence

from charter.runtime.models import ModelRequestError
from charter.runtime.plan import Stage

__all__ = ["candidates", "falls_over"]

# An endpoint that answers these is not usable with that model or key.
_UNUSABLE = frozenset({401, 402, 403, 404, 429})


def candidates(stage: Stage, providers: Sequence[str]) -> tuple[str, ...]:
    """The model names the stage may run on, best first."""
    if not providers:
        return ()
    return tuple(m.model for m in stage.models if m.provider in providers)


def falls_over(exc: ModelRequestError) -> bool:
    """Whether the failure means the model in use is unusable (not a bad
    request that another model would refuse too)."""
    return exc.status is None or exc.status in _UNUSABLE or exc.status >= 500
