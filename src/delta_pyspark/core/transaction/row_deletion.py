"""Deleting rows with deletion vectors (PROTOCOL.md "Deletion Vectors").

With ``delta.enableDeletionVectors=true``, DELETE, UPDATE and MERGE do not rewrite
a file to drop rows: they remove the file and add it back (same path) with a
deletion vector holding its old deleted rows plus the new ones. A file whose rows
are all deleted is removed outright. Stats keep the physical ``numRecords`` and
are marked ``tightBounds: false``; readers subtract the vector's cardinality.

Row-level concurrency: when a concurrent winner changed only the deletion vector
of a file this transaction also deletes rows from, the two changes are combined
(:func:`rebase`) if their rows are disjoint; the same row deleted twice is a
physical conflict (``ConcurrentDeleteDeleteException``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from delta_pyspark.core.log.logical_files import action_key
from delta_pyspark.core.protocol.actions import AddFile, RemoveFile, remove_actions
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    DeletionVectorWriter,
    read_deletion_vector,
    to_bitmap64,
)
from delta_pyspark.core.protocol.table_features import supports
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.exceptions import ConcurrentDeleteDeleteException

# Add-action fields carried over when a file is re-added with a new deletion vector.
_KEPT_FIELDS = (
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "stats",
    "tags",
    "baseRowId",
    "defaultRowCommitVersion",
    "clusteringProvider",
)


def deletion_vectors_enabled(snapshot: Snapshot) -> bool:
    """Whether DML should write deletion vectors (property on and feature supported)."""
    enabled = str(snapshot.configuration.get("delta.enableDeletionVectors", "")).lower()
    return enabled == "true" and supports(snapshot.protocol, "deletionVectors")


@dataclass
class FileRowDeletes:
    """One file's rows deleted by this transaction, as the actions that commit them."""

    remove: RemoveFile  # the file as the snapshot had it (old vector, if any)
    add: AddFile | None  # the same file with the combined vector; None: all rows gone
    rows: BitMap64  # the rows this transaction deletes (none of them deleted before)
    num_records: int | None  # physical rows of the file, from its stats

    @property
    def key(self) -> str:
        return action_key(self.remove)


def num_records(stats: str | None) -> int | None:
    """``numRecords`` of an ``add.stats`` JSON (physical rows), None when absent."""
    if not stats:
        return None
    value = json.loads(stats).get("numRecords")
    return int(value) if value is not None else None


def _loose_stats(stats: str | None) -> str | None:
    """Stats of a file with deleted rows: min/max still bound the live rows, not tightly."""
    if not stats:
        return stats
    parsed = json.loads(stats)
    parsed["tightBounds"] = False
    return json.dumps(parsed, separators=(",", ":"))


def _with_vector(
    add: Mapping[str, Any],
    rows: BitMap64,
    num_records: int | None,
    writer: DeletionVectorWriter,
) -> AddFile | None:
    """``add`` re-added with ``rows`` as its vector (None when every row is deleted)."""
    if num_records is not None and len(rows) >= num_records:
        return None
    out = {k: add[k] for k in _KEPT_FIELDS if add.get(k) is not None}
    out["dataChange"] = True
    out["stats"] = _loose_stats(add.get("stats"))
    out["deletionVector"] = writer.add(rows).to_dict()
    # an add's fields (``_KEPT_FIELDS``) and a new vector
    return cast(AddFile, {k: v for k, v in out.items() if v is not None})


def existing_deletes(action: Mapping[str, Any], table_root: str, store: LogStore) -> BitMap64:
    """The rows an add/remove action's deletion vector already deletes."""
    dv = action.get("deletionVector")
    if not dv:
        return BitMap64()
    return read_deletion_vector(DeletionVectorDescriptor.from_dict(dv), table_root, store)


def mark_rows_deleted(
    files: pa.Table,
    rows: Sequence[np.ndarray],
    table_root: str,
    store: LogStore,
    writer: DeletionVectorWriter,
) -> list[FileRowDeletes]:
    """Actions deleting ``rows[i]`` (physical row indexes) from file ``i`` of ``files``.

    Rows already deleted by the file's current vector are ignored. ``writer`` collects
    the new vectors; the caller closes it (writing the file) before committing.
    """
    out = []
    removes = remove_actions(files)
    times = files.column("modificationTime").to_pylist()
    for remove, mtime, new_rows in zip(removes, times, rows, strict=True):
        old = existing_deletes(remove, table_root, store)
        fresh = to_bitmap64(new_rows) - old
        if not fresh:
            continue
        current = {**remove, "modificationTime": mtime}
        n = num_records(remove.get("stats"))
        out.append(FileRowDeletes(remove, _with_vector(current, old | fresh, n, writer), fresh, n))
    return out


def rebase(
    mine: FileRowDeletes,
    winner_add: Mapping[str, Any],
    table_root: str,
    store: LogStore,
    writer: DeletionVectorWriter,
    label: str,
) -> FileRowDeletes:
    """``mine`` re-targeted at the file as ``winner_add`` left it (a concurrent vector).

    Raises ConcurrentDeleteDeleteException if the winner deleted any of the same rows.
    """
    theirs = existing_deletes(winner_add, table_root, store)
    overlap = mine.rows & theirs
    if overlap:
        raise ConcurrentDeleteDeleteException(
            f"row {overlap.min()} of file {mine.remove['path']} (and {len(overlap) - 1} more), "
            f"which this transaction deletes or updates, was already deleted or updated by "
            f"concurrent commit {label}. Re-run the operation against the new version."
        )
    remove = remove_actions(_as_table(winner_add))[0]
    add = _with_vector(winner_add, theirs | mine.rows, mine.num_records, writer)
    return FileRowDeletes(remove, add, mine.rows, mine.num_records)


def _as_table(add: Mapping[str, Any]) -> pa.Table:
    from delta_pyspark.core.protocol.actions import ADD_SCHEMA, file_actions_to_arrow

    return file_actions_to_arrow([dict(add)], ADD_SCHEMA)


def dv_metrics(deletes: Sequence[FileRowDeletes]) -> dict[str, int]:
    """delta-spark's deletion-vector operation metrics for a set of row deletions."""
    added = sum(1 for d in deletes if d.add is not None and not d.remove.get("deletionVector"))
    updated = sum(1 for d in deletes if d.add is not None and d.remove.get("deletionVector"))
    removed = sum(1 for d in deletes if d.add is None and d.remove.get("deletionVector"))
    return {
        "numDeletionVectorsAdded": added,
        "numDeletionVectorsRemoved": removed,
        "numDeletionVectorsUpdated": updated,
    }
