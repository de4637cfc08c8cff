"""An approval provider for tests that run calls through the gates."""

from __future__ import annotations

from charter.runtime.policy.approval import ApprovalAnswer, ApprovalRequest

__all__ = ["Recorder"]


class Recorder:
    """An approval provider that answers ``kind`` every time and keeps the requests."""

    def __init__(self, kind: str = "once") -> None:
        self.kind = kind
        self.requests: list[ApprovalRequest] = []

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(req)
        return ApprovalAnswer(self.kind, "", "test")  # type: ignore[arg-type]
