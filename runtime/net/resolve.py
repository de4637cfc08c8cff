"""Name resolution behind one small interface, so the URL policy can be tested
without a network and the transport can be given a stub.

A resolver turns a normalised host name (lowercase A-labels, no trailing dot,
never an IP literal: the policy decides literals itself) into the list of IP
addresses a connection might use. Failures raise :class:`ResolutionError`; the
caller turns them into a refusal, never into a retry with a looser lookup.
"""

from __future__ import annotations

import concurrent.futures
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from charter.runtime.errors import CharterError

__all__ = ["ResolutionError", "Resolver", "StaticResolver", "SystemResolver"]


class ResolutionError(CharterError):
    """The name could not be resolved (NXDOMAIN, timeout, resolver error)."""


@runtime_checkable
class Resolver(Protocol):
    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        """Every address ``host`` resolves to (IP strings, zone ids removed).

        An empty tuple means the name exists but has no usable address.
        """
        ...


GetAddrInfo = Callable[..., Sequence[tuple[object, object, object, object, tuple[object, ...]]]]


@dataclass(frozen=True)
class SystemResolver:
    """The operating system's resolver (``getaddrinfo``), bounded by a timeout.

    ``getaddrinfo`` itself cannot be interrupted, so the lookup runs on a
    worker thread and a slow answer is abandoned: the request fails closed and
    the thread finishes on its own.
    """

    timeout: float = 5.0
    # None means socket.getaddrinfo, looked up at call time (tests patch it).
    getaddrinfo: GetAddrInfo | None = field(default=None, repr=False)

    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            lookup = self.getaddrinfo or socket.getaddrinfo
            future = pool.submit(lookup, host, port, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            infos = future.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            raise ResolutionError(f"resolving {host!r} timed out after {self.timeout:g}s") from None
        except (OSError, UnicodeError) as exc:
            raise ResolutionError(f"resolving {host!r} failed: {exc}") from None
        finally:
            pool.shutdown(wait=False)
        answers: list[str] = []
        for family, _type, _proto, _canon, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6) or not sockaddr:
                continue
            address = str(sockaddr[0]).split("%", 1)[0]
            if address not in answers:
                answers.append(address)
        return tuple(answers)


@dataclass(frozen=True)
class StaticResolver:
    """A resolver answering from a table, for tests and offline runs.

    A name missing from the table fails like NXDOMAIN; a value that is an
    exception instance is raised (wrapped in :class:`ResolutionError`).
    """

    answers: Mapping[str, Sequence[str] | BaseException]
    calls: list[str] = field(default_factory=list, compare=False, repr=False)

    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        self.calls.append(host)
        try:
            value = self.answers[host]
        except KeyError:
            raise ResolutionError(f"{host!r} does not exist") from None
        if isinstance(value, BaseException):
            raise ResolutionError(f"resolving {host!r} failed: {value}") from value
        return tuple(value)
