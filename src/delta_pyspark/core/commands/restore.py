"""RESTORE: make the latest version equal an older one in one commit (delta-spark's
RestoreTableCommand semantics).

The commit adds back (``dataChange=true``) every logical file of the old version
missing from the current one and removes every current logical file the old version
lacks; logical files compare on (path, deletion vector unique id) as log replay
does. The old metadata is restored if it differs (keeping the larger
``delta.columnMapping.maxColumnId`` so ids are never reused); the protocol is never
downgraded: the commit carries the union of both versions' protocols. A clustered
table gets the old version's clustering columns back (none if it had none).

As in delta-spark, the version to restore must be older than the latest one
(restoring to the latest version is refused, it is not a no-op commit), and a
restore whose old files are gone from storage (vacuumed) fails before committing
with :class:`RestoreMissingFilesError` unless the caller turns the check off
(Spark's ``spark.sql.files.ignoreMissingFiles``).

Concurrency: RESTORE reads the whole table. A concurrent commit that removes any
file raises ``ConcurrentDeleteReadException``; one that changes metadata or protocol
raises ``MetadataChangedException``/``ProtocolChangedException``; a concurrent blind
append raises ``ConcurrentAppendException`` under ``Serializable``, while under
``WriteSerializable`` (the default) it is ordered after the restore: the restore
commits and the appended rows stay, exactly as if the append had run just after it.
A failed restore writes nothing.

The files added back must lie inside the table when named by a relative path: a
version whose log names one by an empty, ``.`` or escaping (``..``) relative path,
or by an absolute path naming the table directory or one above it, is refused with
``CorruptLogError`` before anything outside the table is even looked at. Other
absolute paths (a shallow clone's files) are restored as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.commands.clustering import DOMAIN as CLUSTERING_DOMAIN
from delta_pyspark.core.commands.clustering import domain_metadata as clustering_domain
from delta_pyspark.core.commands.clustering import snapshot_columns
from delta_pyspark.core.log.logical_files import KEY_COLUMN
from delta_pyspark.core.log.table_paths import dv_file_path, resolve_path
from delta_pyspark.core.protocol.actions import Metadata, Protocol, add_actions, remove_actions
from delta_pyspark.core.protocol.column_mapping import MAX_COLUMN_ID_KEY
from delta_pyspark.core.protocol.table_features import implied_writer_features, reader_features
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.locations import normalise
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import (
    DeltaIllegalArgumentException,
    VersionNotFoundError,
)

METRIC_COLUMNS = (
    ("tableSizeAfterRestore", "table_size_after_restore"),
    ("numOfFilesAfterRestore", "num_of_files_after_restore"),
    ("numRemovedFiles", "num_removed_files"),
    ("numRestoredFiles", "num_restored_files"),
    ("removedFilesSize", "removed_files_size"),
    ("restoredFilesSize", "restored_files_size"),
)
"""delta-spark's commitInfo metric names and the matching result-DataFrame columns."""


class RestoreMissingFilesError(DeltaIllegalArgumentException):
    """Files of the version to restore are gone from storage (vacuumed or deleted)."""

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing

    def __reduce__(self) -> tuple[type, tuple[str, list[str]]]:
        # the default rebuilds from ``args`` (the message only): keep the missing files too
        return (type(self), (str(self.args[0]), self.missing))


# --------------------------------------------------------------------------- helpers


def merge_protocols(a: Protocol, b: Protocol) -> Protocol:
    """The smallest protocol supporting everything ``a`` and ``b`` support."""
    legacy = a.min_writer_version < 7 and b.min_writer_version < 7
    if legacy and a.min_reader_version < 3 and b.min_reader_version < 3:
        return Protocol(
            max(a.min_reader_version, b.min_reader_version),
            max(a.min_writer_version, b.min_writer_version),
        )
    writer = implied_writer_features(a) | implied_writer_features(b)
    reader = reader_features(a) | reader_features(b)
    for p in (a, b):
        if writer == implied_writer_features(p) and reader == reader_features(p):
            return p  # one already covers the other: keep it as written
    if max(a.min_reader_version, b.min_reader_version) >= 3 or reader - {"columnMapping"}:
        return Protocol(3, 7, frozenset(reader), frozenset(writer))
    return Protocol(max(a.min_reader_version, b.min_reader_version), 7, None, frozenset(writer))


def _size(files: pa.Table) -> int:
    total = pc.sum(files.column("size")).as_py() if files.num_rows else 0
    return int(total or 0)


def _restored_metadata(old: Metadata, current: Metadata) -> Metadata:
    """``old`` with the larger column-mapping high-water mark of the two."""
    a, b = old.configuration.get(MAX_COLUMN_ID_KEY), current.configuration.get(MAX_COLUMN_ID_KEY)
    if a is None or b is None or int(a) >= int(b):
        return old
    return old.with_changes(configuration=dict(old.configuration) | {MAX_COLUMN_ID_KEY: b})


def _restore_clustering(txn: Transaction, target: Snapshot, current: Snapshot) -> None:
    """A clustered table gets back the clustering columns of the version restored, or none
    when that version had none (the protocol keeps the feature: it is never downgraded),
    as delta-spark restores them; other domains stay as they are."""
    domain = current.domain_metadata.get(CLUSTERING_DOMAIN)
    if domain is not None and not domain.removed:
        txn.set_domain_metadata(clustering_domain(snapshot_columns(target)))


def resolve_version(log: DeltaLog, current: Snapshot, timestamp_ms: int) -> int:
    """The version a timestamp restores to: the latest committed at or before it (a
    timestamp after the last commit resolves to the latest version, as delta-spark's
    ``canReturnLastCommit``)."""
    records = log.commit_records()
    if records and timestamp_ms >= records[-1].timestamp:
        return current.version
    return log.version_at_timestamp(timestamp_ms)


# --------------------------------------------------------------------------- restore


@dataclass
class PreparedRestore:
    """A staged RESTORE transaction: ``commit()`` makes it happen."""

    log: DeltaLog
    current: Snapshot
    target: Snapshot
    to_add: pa.Table
    to_remove: pa.Table
    txn: Transaction
    parameters: dict[str, Any]

    @property
    def metrics(self) -> dict[str, int]:
        return {
            "tableSizeAfterRestore": self.target.size_in_bytes,
            "numOfFilesAfterRestore": self.target.num_files,
            "numRemovedFiles": self.to_remove.num_rows,
            "numRestoredFiles": self.to_add.num_rows,
            "removedFilesSize": _size(self.to_remove),
            "restoredFilesSize": _size(self.to_add),
        }

    def commit(self) -> dict[str, int]:
        """Commit the restore; returns delta-spark's metrics (also in commitInfo)."""
        metrics = self.metrics
        self.txn.commit("RESTORE", self.parameters, metrics)
        return metrics


def missing_files(store: LogStore, root: str, files: pa.Table) -> list[str]:
    """Data and deletion-vector files of ``files`` that do not exist in ``store``."""
    missing = []
    for path, dv in zip(
        files.column("path").to_pylist(), files.column("deletionVector").to_pylist(), strict=True
    ):
        for local in (resolve_path(root, path), dv_file_path(root, dv)):
            if local is not None and not store.exists(local):
                missing.append(local)
    return missing


def prepare_restore(
    log: DeltaLog,
    version: int | None = None,
    timestamp_ms: int | None = None,
    *,
    timestamp_text: str | None = None,
    check_files: bool = True,
) -> PreparedRestore:
    """Read the latest and the old version and stage the RESTORE commit.

    Give exactly one of ``version`` and ``timestamp_ms`` (``timestamp_text``: the
    timestamp as the user wrote it, recorded in commitInfo).
    """
    if (version is None) == (timestamp_ms is None):
        raise DeltaIllegalArgumentException(
            "Either the version or timestamp should be provided for restore"
        )
    current = log.snapshot()
    if version is None:
        assert timestamp_ms is not None
        version = resolve_version(log, current, timestamp_ms)
        parameters: dict[str, Any] = {"timestamp": timestamp_text or str(timestamp_ms)}
    else:
        parameters = {"version": version, "timestamp": None}  # delta-spark records both
    if version < 0 or version > current.version:
        raise VersionNotFoundError(
            f"cannot restore {current.table_root} to version {version}: the latest version "
            f"is {current.version}"
        )
    if version == current.version:
        raise DeltaIllegalArgumentException(
            f"Version to restore ({version}) should be less than the last available version "
            f"({current.version}): the table is already at that version"
        )
    target = log.snapshot(version)

    old, new = target.files_with_keys, current.files_with_keys
    add_mask = pc.invert(pc.is_in(old.column(KEY_COLUMN), value_set=new.column(KEY_COLUMN)))
    remove_mask = pc.invert(pc.is_in(new.column(KEY_COLUMN), value_set=old.column(KEY_COLUMN)))
    to_add = old.filter(add_mask).drop_columns([KEY_COLUMN])
    to_remove = new.filter(remove_mask).drop_columns([KEY_COLUMN])

    root = normalise(current.table_root)
    if check_files and to_add.num_rows:
        missing = missing_files(log.store, root, to_add)
        if missing:
            shown = ", ".join(missing[:5])
            raise RestoreMissingFilesError(
                f"cannot restore {current.table_root} to version {version}: {len(missing)} "
                f"file(s) of that version no longer exist (deleted by VACUUM or by hand): "
                f"{shown}{' ...' if len(missing) > 5 else ''}. Restore a more recent version, "
                "or set spark.sql.files.ignoreMissingFiles=true to restore without checking.",
                missing,
            )

    txn = Transaction(log, current)
    txn.read_whole_table()
    txn.remove_files(remove_actions(to_remove, data_change=True))
    txn.add_files(add_actions(to_add, data_change=True))
    metadata = _restored_metadata(target.metadata, current.metadata)
    if metadata != current.metadata:
        txn.update_metadata(metadata)
    protocol = merge_protocols(target.protocol, current.protocol)
    if protocol != current.protocol:
        txn.update_protocol(protocol)
    _restore_clustering(txn, target, current)
    return PreparedRestore(log, current, target, to_add, to_remove, txn, parameters)


def restore(
    log: DeltaLog,
    version: int | None = None,
    timestamp_ms: int | None = None,
    *,
    timestamp_text: str | None = None,
    check_files: bool = True,
) -> dict[str, int]:
    """RESTORE the table to ``version`` (or the version at ``timestamp_ms``)."""
    prepared = prepare_restore(
        log, version, timestamp_ms, timestamp_text=timestamp_text, check_files=check_files
    )
    return prepared.commit()


def metrics_row(metrics: Mapping[str, int]) -> tuple[int, ...]:
    """The metrics in the result DataFrame's column order."""
    return tuple(int(metrics[name]) for name, _ in METRIC_COLUMNS)
