"""The root of every exception the runtime raises on purpose.

Callers catch :class:`CharterError` to handle anything Charter reports, or a
subclass for one concern. Where an exception also is a built-in kind
(``ValueError``, ``OSError``...), code written against that kind keeps
working. Private exceptions that never leave their module (a retry signal)
are control flow and not drawn. The compiler's branch (``CompilerError``) is
drawn in :mod:`charter.compiler.errors`. The runtime's tree, with each
class's module, kept true by ``tests/architecture/test_errors.py``::

    CharterError (errors)
        Abandoned (deadline)
        AwkError (shell.programs.awk)
        BadEncoding (tools.web)
        BuiltinError (rhai.builtins)
        CapabilityDenied (tools.authored_sdk), also PermissionError
        ConnectRefused (mcp.client)
        ContainmentRefused (sandbox.containment)
        HookFailed (run.hooks)
        HostError (rhai.interp)
        LaunchError (mcp.launch)
        ListenError (serve.server), also ValueError
        LockError (mcp.lock), also ValueError
        LockWriteError (mcp.relock)
        ModelError (models.base)
            ModelRequestError (models.base)
                ModelTimeoutError (models.base)
            ModelResponseError (models.base)
            ScriptError (models.base), also ValueError
            ScriptExhaustedError (models.base)
            ScriptExpectationError (models.base)
        NotRegularFile (tools.beneath), also OSError
        PathChanged (tools.beneath)
        PlanError (plan.loader)
        PlanLoadError (serve.plans)
        RegistryError (tools.registry)
        RepeatedKey (jsonbound), also ValueError
        ResolutionError (net.resolve)
        RhaiError (rhai.errors)
            RhaiLimitError (rhai.errors)
            RhaiRuntimeError (rhai.errors)
            RhaiSyntaxError (rhai.errors)
        RunRefused (run.launch)
        SandboxError (sandbox.launcher)
        SandboxRefused (sandbox.oneshot)
        SandboxUnavailable (sandbox.launcher)
        SedError (shell.programs.sed)
        SeedFailed (run.seeds)
        ServeRefused (serve.launch)
        SessionError (policy.session)
        SessionStoreError (run.sessions)
        ShellSyntaxError (shell.tree)
            ShellTooLong (shell.tree)
        TaskStoreError (tools.tasks.store), also OSError
        TooDeep (jsonbound), also ValueError
        TooManySecrets (redact)
        UrlError (net.urlpolicy), also ValueError
        UrlRefused (net.urlpolicy)
            BlockedRequest (net.transport), also httpx.TransportError
"""

from __future__ import annotations

__all__ = ["CharterError"]


class CharterError(Exception):
    """Something Charter refuses or cannot do, with a message that says why."""
