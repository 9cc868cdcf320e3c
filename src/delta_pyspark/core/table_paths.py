"""Which file references in the log may be followed: the one rule reads, VACUUM, CLONE,
RESTORE and deletion-vector lookups share.

The protocol lets a log name a data file by an absolute URI or by a path relative to the
table root. A relative path that is empty, names the root itself, or climbs out of it
(``..``, also percent-encoded) cannot be a file of the table: following it would read
rows from elsewhere or, for VACUUM, treat a live file as garbage.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def relative_path_problem(path: str) -> str | None:
    """Why log path ``path`` cannot name a file inside the table, or None if it can.

    Absolute paths (``/...`` or with a scheme) are allowed by the protocol and not judged
    here; a relative one must decode and normalise to a path below the table root.
    """
    if path.startswith("/") or _SCHEME.match(path):
        return None
    decoded = unquote(path)
    if not decoded:
        return "is empty"
    normal = posixpath.normpath(decoded)
    if normal in (".", "..") or normal.startswith("../"):
        return "does not name a file inside the table"
    return None
