"""Logical conflict detection between a transaction and the commits that won.

Follows delta-spark's ConflictChecker (what each check means and which exception
it raises) with one deliberate improvement: a concurrently added file conflicts
with this transaction's reads only if its partition values *and* min/max/null
statistics say it may hold a row matching a predicate the transaction read; the
reference stops at partition granularity. Files without stats stay conservative.

Row-level concurrency: a winning DELETE/UPDATE/MERGE that re-added a file with a
new deletion vector only deleted rows of it. That is not a file deletion: it
conflicts only physically, when this transaction deletes rows of the same file
too; :func:`check_commit` then returns the file as a :class:`Rebase` for the
transaction to combine the two vectors (or fail if they share a row).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.expressions.nodes import Expr
from delta_pyspark.core.expressions.printer import to_sql
from delta_pyspark.core.log.commit_actions import CommitActions
from delta_pyspark.core.log.logical_files import action_key, canonical_path, file_keys
from delta_pyspark.core.protocol.actions import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    AddFile,
    CommitInfo,
    Metadata,
    file_actions_to_arrow,
)
from delta_pyspark.core.protocol.identity_columns import only_high_water_marks_moved
from delta_pyspark.core.skipping.data_skipping import may_match
from delta_pyspark.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    MetadataChangedException,
    ProtocolChangedException,
)


class IsolationLevel(StrEnum):
    SERIALIZABLE = "Serializable"
    WRITE_SERIALIZABLE = "WriteSerializable"
    SNAPSHOT_ISOLATION = "SnapshotIsolation"

    @classmethod
    def parse(cls, value: str) -> IsolationLevel:
        for level in cls:
            if level.value.lower() == value.strip().lower():
                return level
        from delta_pyspark.exceptions import DeltaIllegalArgumentException

        raise DeltaIllegalArgumentException(
            f"invalid delta.isolationLevel {value!r}: use Serializable or WriteSerializable"
        )


@dataclass
class ReadSet:
    """What a transaction read, so concurrent commits can be tested against it."""

    predicates: list[Expr] = field(default_factory=list)
    whole_table: bool = False
    file_keys: set[str] = field(default_factory=set)
    app_ids: set[str] = field(default_factory=set)
    # The zone timestamp literals without one in ``predicates`` are in (Spark's session zone).
    time_zone: str = "UTC"

    @property
    def is_blind(self) -> bool:
        return not (self.predicates or self.whole_table or self.file_keys)


@dataclass
class ConflictContext:
    """The committing transaction as the checker sees it."""

    read_version: int
    isolation: IsolationLevel
    reads: ReadSet
    removed_keys: set[str]
    app_ids_written: set[str]
    domains_written: set[str]
    arrow_schema: pa.Schema
    partition_columns: list[str]
    # Keys of removed files whose change is a deletion vector update (rebasable).
    row_delete_keys: set[str] = field(default_factory=set)
    # The metadata the transaction read, and whether it commits metadata of its own.
    read_metadata: Metadata | None = None
    changes_metadata: bool = False


@dataclass(frozen=True)
class Rebase:
    """A file both this transaction and a winner deleted rows from (by deletion vectors)."""

    key: str  # this transaction's remove key (the file as it read it)
    winner_add: AddFile  # the file as the winner left it


# Operations whose re-add of a file with a new deletion vector only deletes rows.
_ROW_DELETING_OPERATIONS = frozenset({"DELETE", "UPDATE", "MERGE"})


def _row_deletions(winner: CommitActions) -> dict[str, AddFile]:
    """Canonical path -> re-add, for files whose rows the winner deleted by vector."""
    op = str((winner.commit_info or {}).get("operation", "")).upper()
    if op not in _ROW_DELETING_OPERATIONS or not winner.removes:
        return {}
    removed = {canonical_path(r["path"]) for r in winner.removes}
    return {
        canonical_path(a["path"]): a
        for a in winner.adds
        if a.get("deletionVector") and canonical_path(a["path"]) in removed
    }


def winner_label(version: int, commit_info: CommitInfo | None) -> str:
    info: CommitInfo = commit_info or {}
    op = info.get("operation", "unknown operation")
    ts = info.get("inCommitTimestamp", info.get("timestamp"))
    when = (
        datetime.fromtimestamp(int(ts) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if ts is not None
        else "unknown time"
    )
    return f"version {version} ({op} at {when})"


def _describe_file(add: AddFile) -> str:
    pv = add.get("partitionValues") or {}
    if pv:
        return (
            "partition " + ", ".join(f"{k}={v}" for k, v in pv.items()) + f" (file {add['path']})"
        )
    return f"file {add['path']}"


def check_commit(ctx: ConflictContext, version: int, winner: CommitActions) -> list[Rebase]:
    """Raise the typed conflict if ``winner`` (committed at ``version``) invalidates ``ctx``.

    Returns the files whose deletion vectors both changed, to be combined row by row.
    """
    label = winner_label(version, winner.commit_info)
    if winner.protocol is not None:
        if ctx.read_version < 0:
            raise ProtocolChangedException(
                f"the table was created concurrently by {label}; retry the write against "
                "the existing table"
            )
        raise ProtocolChangedException(
            f"the protocol was changed by concurrent commit {label}; re-read the table and retry"
        )
    if winner.metadata is not None and not _tolerated_metadata(ctx, winner.metadata):
        raise MetadataChangedException(
            f"the table metadata (schema, partitioning or properties) was changed by concurrent "
            f"commit {label}; re-read the table and retry"
        )
    row_deletions = _row_deletions(winner)
    _check_added_files(ctx, version, winner, label, row_deletions)
    rebases = _check_deleted_files(ctx, winner, label, row_deletions)
    _check_app_ids(ctx, winner, label)
    return rebases


def _tolerated_metadata(ctx: ConflictContext, metadata: Metadata) -> bool:
    """delta-spark's one metadata change a transaction survives: identity high-water marks
    moved by a winner, when the transaction commits no metadata itself."""
    return (
        not ctx.changes_metadata
        and ctx.read_metadata is not None
        and only_high_water_marks_moved(ctx.read_metadata, metadata)
    )


def _check_added_files(
    ctx: ConflictContext,
    version: int,
    winner: CommitActions,
    label: str,
    row_deletions: dict[str, AddFile],
) -> None:
    if ctx.isolation is IsolationLevel.SNAPSHOT_ISOLATION or ctx.reads.is_blind:
        return
    winner_blind = bool((winner.commit_info or {}).get("isBlindAppend", False))
    if ctx.isolation is IsolationLevel.WRITE_SERIALIZABLE and winner_blind:
        return  # WriteSerializable: blind appends may be ordered after this transaction
    added = [
        a
        for a in winner.adds
        if a.get("dataChange", True) and canonical_path(a["path"]) not in row_deletions
    ]
    if not added:
        return
    if ctx.reads.whole_table:
        raise ConcurrentAppendException(
            f"files were added to the table by concurrent commit {label} "
            f"({_describe_file(added[0])}) while this transaction read the whole table. "
            "Add a partition or key predicate to "
            "the operation's condition so it reads only what it changes."
        )
    table = file_actions_to_arrow(added, ADD_SCHEMA)
    hit = pa.array([False] * len(added))
    for expr in ctx.reads.predicates:
        hit = pc.or_(
            hit,
            may_match(
                expr,
                table,
                ctx.arrow_schema,
                ctx.partition_columns,
                time_zone=ctx.reads.time_zone,
            ),
        )
    if pc.any(hit).as_py():
        idx = pc.index(hit, True).as_py()
        cond = " OR ".join(to_sql(p) for p in ctx.reads.predicates)
        raise ConcurrentAppendException(
            f"files were added to {_describe_file(added[idx])} by concurrent commit {label} that "
            f"may hold rows matching this transaction's read predicate [{cond}]. Make the "
            "condition more selective (e.g. add the partition predicate) so the two operations "
            "touch disjoint data."
        )


def _check_deleted_files(
    ctx: ConflictContext,
    winner: CommitActions,
    label: str,
    row_deletions: dict[str, AddFile],
) -> list[Rebase]:
    if not winner.removes:
        return []
    removed = file_actions_to_arrow(winner.removes, REMOVE_SCHEMA)
    rebases = []
    for key in file_keys(removed).to_pylist():
        path = key.split("\x00", 1)[0]
        readded = row_deletions.get(path)
        if readded is not None:  # only rows of this file were deleted
            if key in ctx.removed_keys:
                if key not in ctx.row_delete_keys:
                    _raise_delete_delete(path, label)
                rebases.append(Rebase(key, readded))
            elif key in ctx.reads.file_keys:
                ctx.reads.file_keys.add(action_key(readded))
            continue
        if key in ctx.reads.file_keys or ctx.reads.whole_table:
            raise ConcurrentDeleteReadException(
                f"file {path}, which this transaction read, was removed by concurrent commit "
                f"{label}. Re-run the operation; to avoid this, make concurrent operations touch "
                "disjoint partitions or files."
            )
        if key in ctx.removed_keys:
            _raise_delete_delete(path, label)
    return rebases


def _raise_delete_delete(path: str, label: str) -> None:
    raise ConcurrentDeleteDeleteException(
        f"file {path}, which this transaction removes, was already removed by concurrent "
        f"commit {label}. Re-run the operation against the new version."
    )


def _check_app_ids(ctx: ConflictContext, winner: CommitActions, label: str) -> None:
    ids = ctx.reads.app_ids | ctx.app_ids_written
    clash = next((t.app_id for t in winner.txns if t.app_id in ids), None)
    if clash is not None:
        raise ConcurrentTransactionException(
            f"application transaction id {clash!r} was committed concurrently by {label}. Two "
            "writers (e.g. streaming queries) must not share one txnAppId/checkpoint location."
        )
    domain = next((d.domain for d in winner.domains if d.domain in ctx.domains_written), None)
    if domain is not None:
        raise ConcurrentTransactionException(
            f"domain metadata {domain!r} was changed concurrently by {label}."
        )
