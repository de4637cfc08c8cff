"""Gate 7, url: the URL policy on the literal URL of a fetch (tools whose
plan entry says ``guard: url``).

A target refused by its text alone (a metadata address, a private or
loopback literal, ``localhost``, another scheme) is refused when the call is
decided, not only when Charter's own transport connects: an agent behind a
hook fetches with its own client, which never asks the policy. Names that
need DNS pass here; Charter's transport still pins every answer.
"""

from __future__ import annotations

from charter.runtime.gates.outcome import Outcome, deny
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall

__all__ = ["GATE", "check"]

GATE = "url"


def check(session: Session, call: ToolCall, out: Outcome) -> Outcome:
    entry = out.entry
    if entry is None or entry.guard != "url":
        return out
    url = call.args.get("url")
    if not isinstance(url, str):
        return out  # the schema gate reports it
    from charter.runtime.net.urlpolicy import UrlPolicy, audit_origin

    verdict = UrlPolicy(allow_local_network=session.agent.agent.allow_local_network).check(url)
    if verdict.verdict != "deny":
        return out
    return deny(
        call,
        GATE,
        f"url-{verdict.reason}",
        f"{audit_origin(verdict)} is refused: {verdict.detail}; the URL policy is not a "
        "permission, and no flag lifts it",
        canonical=out.canonical,
        entry=entry,
        provenance=out.provenance,
        paths=out.paths,
    )
