"""Logical files (PROTOCOL.md "Action Reconciliation").

A file action names a logical file by its path and its deletion vector's unique id:
``(path, deletionVector.uniqueId)``. These are that key, for one action dict and
vectorised over an Arrow table of file actions (the ``_key`` column replay keeps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.log.arrow_buffers import combined, utf8_scalar

KEY_COLUMN = "_key"

_EMPTY = utf8_scalar("")
_NUL = utf8_scalar("\x00")
_AT = utf8_scalar("@")


def canonical_path(path: str) -> str:
    """Paths compare without a ``file:`` scheme (``file:///a`` and ``/a`` are one file)."""
    if path.startswith("file://"):
        return path[7:]
    if path.startswith("file:"):
        return path[5:]
    return path


def dv_unique_id(dv: Mapping[str, Any] | None) -> str:
    if not dv:
        return ""
    uid = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
    offset = dv.get("offset")
    return f"{uid}@{offset}" if offset is not None else uid


def action_key(action: Mapping[str, Any]) -> str:
    """Logical file key of an add/remove dict: canonical path, NUL, DV unique id."""
    return f"{canonical_path(action['path'])}\x00{dv_unique_id(action.get('deletionVector'))}"


def added_and_removed(
    adds: Iterable[Mapping[str, Any]], removes: Iterable[Mapping[str, Any]]
) -> str | None:
    """The path of a file both added and removed (same deletion vector) by one version's
    actions, if any: no valid version holds one."""
    both = {action_key(a) for a in adds} & {action_key(r) for r in removes}
    return min(both).split("\x00")[0] if both else None


def file_keys(table: pa.Table) -> pa.Array:
    """Vectorised ``action_key`` over a file-action table."""
    return combined(_file_keys(table))


def _file_keys(table: pa.Table) -> pa.Array | pa.ChunkedArray:
    """``file_keys``, chunked like ``table``."""
    path = table.column("path")
    if pc.any(pc.starts_with(path, "file:")).as_py():
        path = pc.replace_substring_regex(path, r"^file:(//)?", "")
    dv = table.column("deletionVector")
    if dv.null_count == len(dv):
        # No deletion vectors (the common case): the key is the path and a NUL.
        return pc.binary_join_element_wise(path, _EMPTY, _NUL)
    storage = pc.fill_null(pc.struct_field(dv, "storageType"), _EMPTY)
    inline = pc.fill_null(pc.struct_field(dv, "pathOrInlineDv"), _EMPTY)
    offset = pc.cast(pc.struct_field(dv, "offset"), pa.string())
    with_at = pc.fill_null(pc.binary_join_element_wise(_AT, offset, _EMPTY), _EMPTY)
    dv_id = pc.binary_join_element_wise(storage, inline, with_at, _EMPTY)
    return pc.binary_join_element_wise(path, dv_id, _NUL)


def with_keys(table: pa.Table) -> pa.Table:
    if KEY_COLUMN in table.column_names:
        return table
    return table.append_column(KEY_COLUMN, _file_keys(table))
