"""The bearer token a decision server asks of every request, and where it is read from.

``charter init`` writes the workspace's token to :data:`TOKEN_FILE` (private:
``.charter/serve/`` is in the .gitignore it writes), in the header form a curl
hook sends with ``-H @FILE``. A token file that exists is always used, so a
server never quietly answers without the token its hooks send.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TOKEN_FILE", "read_token", "token_files"]

TOKEN_FILE = Path(".charter") / "serve" / "token"


def token_files(workspace: str | None, target: Path) -> list[Path]:
    """The token files that apply when no file is named: the workspace's
    (``workspace`` or the current directory), and the one of the
    ``.charter`` folder the plan or project ``target`` is in."""
    out = [Path(workspace or ".") / TOKEN_FILE]
    for parent in (target.resolve(), *target.resolve().parents):
        if parent.name == ".charter":
            out.append(parent / "serve" / "token")
            break
    return out


def read_token(path: Path) -> str:
    """The token in ``path``: the token alone, or the header line
    ``Authorization: Bearer TOKEN`` (the form init writes, which a curl hook
    sends with ``-H @FILE``). Raises ValueError with the reason it cannot be used."""
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from exc
    if st.st_mode & 0o077:
        raise ValueError(
            f"{path}: the token file can be read by other users (mode "
            f"{st.st_mode & 0o777:o}); make it private: chmod 600 {path}"
        )
    value = text.strip()
    name, sep, rest = value.partition(":")
    if sep and name.strip().lower() == "authorization":
        value = rest.strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() == "bearer":
        value = rest.strip()
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{path}: expected a token, or the line 'Authorization: Bearer TOKEN'")
    return value
