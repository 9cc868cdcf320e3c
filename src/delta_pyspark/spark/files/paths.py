"""Translating between the log's URI-encoded file paths and what Spark expects."""

from __future__ import annotations

from urllib.parse import quote

from delta_pyspark.core.storage.locations import is_local, to_local_path

# Characters java.net.URI leaves unescaped in a path (unreserved, punct, '/').
_URI_SAFE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'()/;:@&=+$,"
)


def spark_file_uri(path: str) -> str:
    """The string Spark reports as ``_metadata.file_path`` for a file (a decoded local path
    or object-store URL): its URI, the path escaped as ``java.net.URI`` does."""
    if is_local(path):
        prefix, rest = "file:", to_local_path(path)
    else:
        start = path.index("://") + 3
        end = path.find("/", start)
        prefix, rest = (path, "") if end < 0 else (path[:end], path[end:])
    out = []
    for ch in rest:
        if ch in _URI_SAFE or ord(ch) > 127:
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode()))
    return prefix + "".join(out)


def to_log_path(relative: str) -> str:
    """A path relative to the table root, URI-encoded as the log stores it."""
    return quote(relative, safe="/=:@&+$,;~!*'()-._")
