"""Translating between the log's URI-encoded file paths and what Spark expects."""

from __future__ import annotations

from urllib.parse import quote

# Characters java.net.URI leaves unescaped in a path (unreserved, punct, '/').
_URI_SAFE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'()/;:@&=+$,"
)


def spark_file_uri(local_path: str) -> str:
    """The string Spark reports as ``_metadata.file_path`` for a local file."""
    out = []
    for ch in local_path:
        if ch in _URI_SAFE or ord(ch) > 127:
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode()))
    return "file:" + "".join(out)


def to_log_path(relative: str) -> str:
    """A path relative to the table root, URI-encoded as the log stores it."""
    return quote(relative, safe="/=:@&+$,;~!*'()-._")
