"""Every rule key a gate can put on an outcome: the one registry.

A refusal names its gate and a stable rule key; tools, transcripts, the
audit log and people's scripts match on the key, so the keys are a closed
set. :data:`RULES` maps each key to the gates that may report it. It is
built from four families, each defined where its decision is made, plus the
gates' own keys listed here:

- the shell guard's keys (``charter.runtime.shell.policy.RULE_KEYS``,
  documented in docs/shell-guard.md), reported by the shell gate;
- workspace confinement's ``path-*`` keys, reported by the confinement gate
  (and the shell gate, for a command's working directory);
- the URL policy's refusals as ``url-<reason>``, reported by the url gate
  (the reasons are documented in docs/url-policy.md);
- the data-flow verdicts ``dataflow-*``, reported by the dataflow gate.

The gates' own keys are documented in docs/runtime.md; ``tests/architecture``
checks that every key a gate module can produce is here and documented. A
built-in tool's own refusals (gate ``dispatch``, such as ``tool-crashed`` or
a sub-agent's ``spawn-refused``) are the tool's, documented with the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from charter.runtime.shell.policy import RULE_KEYS as SHELL_RULE_KEYS

__all__ = ["DATAFLOW_RULES", "GATE_RULES", "PATH_RULES", "RULES", "URL_RULES"]

# The gates' own keys, each with the gates that report it.
GATE_RULES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        # visibility
        "unknown-tool": ("visibility",),
        "not-offered-in-stage": ("visibility",),
        "not-offered-unattended": ("visibility",),
        "no-tool-entry": ("visibility",),
        "mcp-tool-unavailable": ("visibility",),
        # schema
        "arguments-not-object": ("schema",),
        "invalid-unicode": ("schema",),
        "schema-violation": ("schema",),
        "schema-unusable": ("schema",),
        # capability
        "capability-not-granted": ("capability",),
        "secret-binding-refused": ("capability",),
        # permission (an allow or an ask is also a decision with a key)
        "no-decision": ("permission",),
        "plan-deny": ("permission",),
        "plan-allow": ("permission",),
        "plan-ask": ("approval",),
        "launch-flag": ("permission", "shell"),
        # shell, beyond the guard's own keys
        "shell-deny": ("shell",),
        "env-overlay-refused": ("shell",),
        "env-overlay-needs-approval": ("approval",),
        # approval: a person (or nobody) said no
        "approval-denied": ("approval", "dataflow"),
        "approval-expired": ("approval", "dataflow"),
        "approval-unavailable": ("approval", "dataflow"),
        # dispatch
        "mcp-not-connected": ("dispatch",),
        "script-not-in-plan": ("dispatch",),
        "no-builtin-implementation": ("dispatch",),
        "no-implementation": ("dispatch",),
        "path-args-mismatch": ("dispatch",),
    }
)

# What charter.runtime.policy.workspace.confine reports ("path-inside" is its allow).
PATH_RULES: tuple[str, ...] = (
    "path-backslash",
    "path-client-settings",
    "path-control",
    "path-drive",
    "path-empty",
    "path-encoded",
    "path-hardlink",
    "path-home",
    "path-inside",
    "path-mount",
    "path-nul",
    "path-op",
    "path-outside",
    "path-run-records",
    "path-sensitive",
    "path-symlink-escape",
    "path-too-long",
    "path-traversal",
    "path-unc",
    "path-unresolvable",
    "path-url",
    "path-vcs-internal",
)

# The URL policy's refusals of a literal target, as the url gate keys them.
URL_RULES: tuple[str, ...] = tuple(
    "url-" + reason
    for reason in (
        "benchmark-address",
        "broadcast-address",
        "cgnat-address",
        "documentation-address",
        "instance-data",
        "invalid-host",
        "invalid-port",
        "invalid-url",
        "link-local-address",
        "localhost-name",
        "loopback-address",
        "metadata-address",
        "metadata-hostname",
        "missing-host",
        "multicast-address",
        "private-address",
        "reserved-address",
        "unspecified-address",
        "unsupported-scheme",
    )
)

DATAFLOW_RULES: tuple[str, ...] = (
    "dataflow-allowlisted",
    "dataflow-blocked",
    "dataflow-clean",
    "dataflow-local",
    "dataflow-off",
)


def _build() -> Mapping[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}

    def add(rule: str, gates: tuple[str, ...]) -> None:
        # A key in two families would make a refusal ambiguous.
        if rule in out:
            raise ValueError(f"rule key {rule!r} is registered twice")
        out[rule] = gates

    for rule, gates in GATE_RULES.items():
        add(rule, gates)
    for rule in PATH_RULES:
        add(rule, ("confinement", "shell", "approval"))
    for rule in URL_RULES:
        add(rule, ("url",))
    for rule in DATAFLOW_RULES:
        add(rule, ("dataflow",))
    for rule in SHELL_RULE_KEYS:
        add(rule, ("shell", "approval"))
    return MappingProxyType(out)


# Every key, with the gates that may report it.
RULES: Mapping[str, tuple[str, ...]] = _build()
