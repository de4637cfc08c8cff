"""The compiled plan: the one contract between Charter's compiler and runtime.

The compiler resolves every name, permission, capability and schema once and
writes the answers here; the runtime executes what the plan says and never
looks anything up again. :mod:`.vocabulary` holds the decision words and
their order, :mod:`.model` the frozen models and their canonical JSON,
:mod:`.shell` the shell guard's policy as data. The package imports only
the standard library and pydantic (``tests/architecture`` proves it).
"""

from charter.runtime.plan import model, shell, vocabulary
from charter.runtime.plan.model import *  # noqa: F403
from charter.runtime.plan.shell import *  # noqa: F403
from charter.runtime.plan.vocabulary import *  # noqa: F403

__all__ = [*model.__all__, *shell.__all__, *vocabulary.__all__]
