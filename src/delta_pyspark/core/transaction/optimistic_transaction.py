"""Optimistic transactions (PROTOCOL.md "Requirements for Writers"; delta-spark's
OptimisticTransaction semantics).

A transaction starts from a snapshot, records what it reads, stages actions, and
commits by creating ``read_version + 1`` with put-if-absent. When another writer
won that version, the winners are checked for logical conflicts; if none, the
same actions are retried at the next version (data files are never rewritten).
Nothing is visible until the put-if-absent succeeds, so a failed transaction
leaves no trace in the log.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from delta_pyspark.core.expressions.nodes import Expr
from delta_pyspark.core.log.commit_actions import CommitActions, parse_actions
from delta_pyspark.core.log.logical_files import action_key, added_and_removed
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.actions import (
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from delta_pyspark.core.protocol.column_mapping import (
    column_mapping_mode,
    physical_name,
    to_physical_schema,
    with_column_mapping,
)
from delta_pyspark.core.protocol.deletion_vectors import DeletionVectorWriter
from delta_pyspark.core.protocol.schema import parse_schema_string
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.protocol.table_features import check_writable, features_in_use
from delta_pyspark.core.snapshot import transaction_scope
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction import row_tracking
from delta_pyspark.core.transaction.commit import commit_info, encode_commit, post_commit
from delta_pyspark.core.transaction.conflicts import (
    ConflictContext,
    IsolationLevel,
    ReadSet,
    Rebase,
    check_commit,
    winner_label,
)
from delta_pyspark.core.transaction.row_deletion import FileRowDeletes, mark_rows_deleted, rebase
from delta_pyspark.core.uniform import compat as uniform
from delta_pyspark.core.uniform.compat import compat_v2_enabled
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaError,
    DeltaIllegalArgumentException,
    FileAlreadyExistsError,
    ProtocolChangedException,
)

DEFAULT_MAX_ATTEMPTS = 1000


class Transaction:
    """One atomic change to a table, from ``snapshot`` (None: the table is being created)."""

    def __init__(
        self,
        log: DeltaLog,
        snapshot: Snapshot | None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self.log = log
        self.snapshot = snapshot
        self.read_version = snapshot.version if snapshot else -1
        self.max_attempts = max_attempts
        self.reads = ReadSet()
        self.txn_id = str(uuid.uuid4())
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self._adds: list[AddFile] = []
        self._removes: list[RemoveFile] = []
        self._row_deletes: dict[str, FileRowDeletes] = {}
        self._dv_writers: list[DeletionVectorWriter] = []
        self._cdcs: list[AddCDCFile] = []
        self._txns: list[SetTransaction] = []
        self._domains: list[DomainMetadata] = []
        self.committed_version: int | None = None
        self.attempts = 0

    # ------------------------------------------------------------ what it read

    @property
    def metadata(self) -> Metadata:
        md = self._metadata or (self.snapshot.metadata if self.snapshot else None)
        if md is None:
            raise DeltaAnalysisException("a new table needs metadata before anything else")
        return md

    @property
    def protocol(self) -> Protocol:
        p = self._protocol or (self.snapshot.protocol if self.snapshot else None)
        if p is None:
            raise DeltaAnalysisException("a new table needs a protocol before anything else")
        return p

    def read_predicate(self, predicate: Expr, time_zone: str | None = None) -> None:
        """Record that rows matching ``predicate`` were read (used to scope conflicts).

        ``time_zone``: the zone of timestamp literals without one (Spark's session zone).
        """
        self.reads.predicates.append(predicate)
        if time_zone is not None:
            self.reads.time_zone = time_zone

    def read_whole_table(self) -> None:
        self.reads.whole_table = True

    def read_files(self, files: pa.Table) -> None:
        """Record the logical files actually read (``files`` has the snapshot's layout)."""
        if "_key" in files.column_names:
            self.reads.file_keys.update(files.column("_key").to_pylist())
        else:
            from delta_pyspark.core.log.logical_files import file_keys

            self.reads.file_keys.update(file_keys(files).to_pylist())

    def app_transaction_version(self, app_id: str) -> int | None:
        """The last committed version of ``app_id``; the commit then depends on it."""
        self.reads.app_ids.add(app_id)
        return self.snapshot.app_transaction_version(app_id) if self.snapshot else None

    # ------------------------------------------------------------ what it writes

    def update_metadata(self, metadata: Metadata) -> None:
        """Set the table's metadata (column mapping ids and names are filled in)."""
        self._metadata = with_column_mapping(metadata)

    def update_protocol(self, protocol: Protocol) -> None:
        self._protocol = protocol

    def add_files(self, adds: Iterable[AddFile]) -> None:
        self._adds.extend(a.copy() for a in adds)

    def remove_files(self, removes: Iterable[RemoveFile]) -> None:
        """Removes to commit; ``dataChange`` (required by the protocol) defaults to true."""
        self._removes.extend({"dataChange": True, **r} for r in removes)

    def delete_rows(self, files: pa.Table, rows: Sequence[np.ndarray]) -> list[FileRowDeletes]:
        """Delete ``rows[i]`` (physical row indexes) of file ``i`` with deletion vectors.

        The files are re-added with combined vectors (or removed when no row is left);
        the vectors are written to one new file just before the commit.
        """
        writer = self._dv_writer()
        deletes = mark_rows_deleted(files, rows, self.log.table_root, self.log.store, writer)
        for d in deletes:
            self._row_deletes[d.key] = d
        return deletes

    def _dv_writer(self) -> DeletionVectorWriter:
        writer = DeletionVectorWriter(self.log.table_root, self.log.store)
        self._dv_writers.append(writer)
        return writer

    def add_cdc_files(self, cdcs: Iterable[AddCDCFile]) -> None:
        self._cdcs.extend(c.copy() for c in cdcs)

    def set_app_transaction(self, app_id: str, version: int) -> None:
        self._txns.append(SetTransaction(app_id, version, int(time.time() * 1000)))

    def set_domain_metadata(self, domain: DomainMetadata) -> None:
        self._domains.append(domain)

    @property
    def removed_files(self) -> list[RemoveFile]:
        """Every remove action to commit, including files re-added with a new vector."""
        return self._removes + [d.remove for d in self._row_deletes.values()]

    @property
    def added_files(self) -> list[AddFile]:
        """Every add action to commit: new files and files re-added with a new vector."""
        return self._adds + [d.add for d in self._row_deletes.values() if d.add is not None]

    def absorb(self, statement: Transaction, base_paths: set[str]) -> None:
        """Take a later statement of a multi-statement transaction into this one (whose
        snapshot is the transaction's): one commit then does what the statements did.

        A file the transaction added and a later statement removed is in neither list (a
        commit may not add and remove the same file); a file added on top of the
        transaction's own (``base_paths`` are the snapshot's) gets its row ids when this
        commit assigns them. What ``statement`` read is read by this transaction.
        """
        adds = {action_key(a): a for a in self._adds}
        removes = {action_key(r): r for r in self._removes}
        for r in statement.removed_files:
            key = action_key(r)
            if adds.pop(key, None) is None:
                removes[key] = r
        for a in statement.added_files:
            key = action_key(a)
            removes.pop(key, None)
            if a["path"] not in base_paths:
                a = a.copy()
                a.pop("baseRowId", None)
                a.pop("defaultRowCommitVersion", None)
            adds[key] = a
        self._adds, self._removes = list(adds.values()), list(removes.values())
        self._cdcs += statement._cdcs
        self._txns += statement._txns
        self._domains += statement._domains
        self._metadata = statement._metadata or self._metadata
        self._protocol = statement._protocol or self._protocol
        read, mine = statement.reads, self.reads
        mine.predicates += read.predicates
        mine.whole_table |= read.whole_table
        mine.file_keys |= read.file_keys
        mine.app_ids |= read.app_ids
        mine.time_zone = read.time_zone

    @property
    def has_changes(self) -> bool:
        """Whether any file would be added or removed."""
        return bool(self._adds or self._removes or self._row_deletes)

    @property
    def is_blind_append(self) -> bool:
        return (
            self.reads.is_blind
            and not self.removed_files
            and all(a.get("dataChange", True) for a in self._adds)
        )

    def isolation_level(self) -> IsolationLevel:
        """SnapshotIsolation for commits that change no data, else the table's level."""
        adds, removes = self.added_files, self.removed_files
        changes_data = any(a.get("dataChange", True) for a in adds) or any(
            r.get("dataChange", True) for r in removes
        )
        if not changes_data and (adds or removes):
            return IsolationLevel.SNAPSHOT_ISOLATION
        level = self.metadata.configuration.get(props.ISOLATION_LEVEL, "WriteSerializable")
        return IsolationLevel.parse(level)

    # ------------------------------------------------------------ commit

    def check_writable(self) -> None:
        """Refuse a table whose protocol needs a writer feature this package lacks.

        Writes and DML call this before writing any data file; the commit checks the
        protocol it commits again.
        """
        check_writable(
            self.protocol,
            self.log.table_root,
            features_in_use(self.metadata),
            self.log.access_features,
        )

    def check_data_removable(self) -> None:
        """Refuse an operation that removes or changes rows on an append-only table.

        DML and overwrites call this before writing any data file, so a refused operation
        leaves nothing behind; the commit checks it again against its own removes.
        """
        if props.append_only(self.metadata.configuration):
            raise DeltaAnalysisException(
                f"table {self.log.table_root} is append-only (delta.appendOnly=true): "
                "this operation would remove or change existing data"
            )

    def _validate(self) -> None:
        md = self.metadata
        self.check_writable()
        if self.snapshot is None and self._metadata is None:
            raise DeltaAnalysisException("creating a table requires its metadata")
        if any(r.get("dataChange", True) for r in self.removed_files):
            self.check_data_removable()
        # Under column mapping the log keys partition values by physical name.
        mode = column_mapping_mode(md.configuration)
        parts = set(md.partition_columns)
        if mode != "none":
            schema = parse_schema_string(md.schema_string)
            parts = {physical_name(schema.field(c), mode) for c in md.partition_columns}
        for add in self._adds:
            if set((add.get("partitionValues") or {}).keys()) != parts:
                raise DeltaAnalysisException(
                    f"file {add.get('path')} has partition values for "
                    f"{sorted((add.get('partitionValues') or {}).keys())} but the table is "
                    f"partitioned by {sorted(parts)}"
                )
        uniform.check_commit(
            md,
            self.added_files,
            self.snapshot.metadata if self.snapshot else None,
            self._live_deletion_vectors(),
        )
        path = added_and_removed(self._adds, self.removed_files)
        if path is not None:  # readers refuse such a version as damaged (``parse_actions``)
            raise DeltaIllegalArgumentException(
                f"a commit cannot both add and remove the same file ({path}, with the same "
                "deletion vector): readers could not tell whether it stays"
            )

    def _live_deletion_vectors(self) -> int:
        """How many of the snapshot's files have a deletion vector (IcebergCompatV2 is only
        enabled on a table without any)."""
        if self.snapshot is None or not compat_v2_enabled(self.metadata.configuration):
            return 0
        files = self.snapshot.files
        return files.num_rows - files.column("deletionVector").null_count

    def _actions(self, info: CommitInfo) -> list[tuple[str, Mapping[str, Any]]]:
        actions: list[tuple[str, Mapping[str, Any]]] = [("commitInfo", info)]
        if self._protocol is not None:
            actions.append(("protocol", self._protocol.to_dict()))
        if self._metadata is not None:
            actions.append(("metaData", self._metadata.to_dict()))
        actions += [("txn", t.to_dict()) for t in self._txns]
        adds, mark = row_tracking.assign(
            self.protocol, self.metadata, self.added_files, self._row_id_mark, self.pending_version
        )
        domains = self._domains + ([mark] if mark is not None else [])
        actions += [("domainMetadata", d.to_dict()) for d in domains]
        actions += [("remove", r) for r in self.removed_files]
        actions += [("add", a) for a in adds]
        actions += [("cdc", c) for c in self._cdcs]
        return actions

    def _conflict_context(self, isolation: IsolationLevel) -> ConflictContext:
        schema = parse_schema_string(self.metadata.schema_string)
        physical = to_physical_schema(schema, column_mapping_mode(self.metadata.configuration))
        return ConflictContext(
            read_version=self.read_version,
            isolation=isolation,
            reads=self.reads,
            removed_keys={action_key(r) for r in self.removed_files},
            row_delete_keys=set(self._row_deletes),
            app_ids_written={t.app_id for t in self._txns},
            domains_written={d.domain for d in self._domains},
            arrow_schema=to_arrow_schema(physical),
            partition_columns=list(self.metadata.partition_columns),
            read_metadata=self.snapshot.metadata if self.snapshot else None,
            changes_metadata=self._metadata is not None,
        )

    def commit(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        user_metadata: str | None = None,
    ) -> Snapshot:
        """Commit atomically; retries past non-conflicting winners; returns the new snapshot.

        Inside a multi-table transaction (``transaction_scope``) a commit to one of its
        tables is only prepared here and becomes visible with the rest of the transaction
        when that commits: the table as the transaction now sees it is returned.
        """
        scope = transaction_scope.current()
        if scope is not None:
            joined = scope.collect(self, operation, parameters, metrics, user_metadata)
            if joined is not None:
                return joined
        self.prepare_commit(operation, parameters, metrics, user_metadata)
        while True:
            data = self.next_attempt()
            try:
                self.log.write_commit(self.pending_version, data)
                break
            except FileAlreadyExistsError:
                self.rebase_past_winners()
        return self.finish_commit()

    # The steps of ``commit``, public so a multi-table transaction can interleave several
    # tables' attempts and ratify them together.

    def prepare_commit(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        user_metadata: str | None = None,
    ) -> None:
        """Validate and fix what every attempt commits; nothing is written yet."""
        if self.committed_version is not None:
            raise DeltaError("transaction already committed")
        self._validate()
        self._metadata, backfill, self._row_id_mark = row_tracking.prepare(
            self.snapshot, self.protocol, self._metadata
        )
        if backfill is not None:  # files lacking row ids, re-added as this commit needs
            self.read_files(backfill)
            self._adds += row_tracking.backfill_actions(backfill)
        self._isolation = self.isolation_level()
        self._operation = (operation, dict(parameters or {}), metrics, user_metadata)
        self.pending_version = self.read_version + 1
        self._winners: list[CommitActions] = []
        self._ctx: ConflictContext | None = None
        self._close_dv_writers()
        self._enabling_ict = self._enables_in_commit_timestamps()
        self._previous_mtime = self.snapshot.timestamp if self.snapshot else 0

    def next_attempt(self) -> bytes:
        """The commit file of the next attempt at ``pending_version``."""
        self.attempts += 1
        version = self.pending_version
        ict = None
        if props.in_commit_timestamps(self.metadata.configuration):
            ict = max(int(time.time() * 1000), self._latest_timestamp(self._winners) + 1)
            if self._enabling_ict:  # after the previous commit's file time, recorded as such
                ict = max(ict, self._previous_mtime + 1)
                self._stamp_ict_enablement(version, ict)
        operation, parameters, metrics, user_metadata = self._operation
        info = commit_info(
            operation,
            parameters,
            self.read_version,
            self._isolation.value,
            self.is_blind_append,
            metrics,
            user_metadata,
            self.txn_id,
            ict,
        )
        self._pending_actions = self._actions(info)
        return encode_commit(self._pending_actions)

    def rebase_past_winners(self) -> None:
        """After losing ``pending_version``: check every winner for a logical conflict
        (raising the typed conflict) and move past them to the next free version."""
        if self.read_version < 0:
            first = self.log.commit_files(0)[0][1]
            winner = parse_actions(self.log.store.read(first.path), "version 0")
            check_commit(self._conflict_ctx(), 0, winner)
            raise ProtocolChangedException("the table was created concurrently")
        if self.attempts >= self.max_attempts:
            raise DeltaError(
                f"gave up committing to {self.log.table_root} after {self.attempts} "
                "attempts; concurrent writers kept winning"
            )
        ctx = self._conflict_ctx()
        for v, status in self.log.commit_files(self.pending_version):
            winner = parse_actions(self.log.store.read(status.path), status.path)
            self._rebase(ctx, check_commit(ctx, v, winner), winner, v)
            self._row_id_mark = row_tracking.high_water_mark(winner.domains, self._row_id_mark)
            self._winners.append(winner)
            self.pending_version = v + 1
            self._previous_mtime = status.modification_time
        self._close_dv_writers()

    def _conflict_ctx(self) -> ConflictContext:
        if self._ctx is None:
            self._ctx = self._conflict_context(self._isolation)
        return self._ctx

    def finish_commit(self) -> Snapshot:
        """After the last attempt won: the new snapshot, with the post-commit hooks run."""
        version = self.pending_version
        self.committed_version = version
        committed = parse_actions(encode_commit(self._pending_actions), f"version {version}")
        snapshot = self._post_commit_snapshot(version, self._winners, committed)
        post_commit(self.log, snapshot, self.txn_id)
        return snapshot

    def _close_dv_writers(self) -> None:
        """Write the pending deletion vector files (before the commit that names them)."""
        for writer in self._dv_writers:
            writer.close()
        self._dv_writers = []

    def _rebase(
        self, ctx: ConflictContext, rebases: list[Rebase], winner: CommitActions, version: int
    ) -> None:
        """Combine this transaction's row deletions with a winner's on the same files."""
        if not rebases:
            return
        writer = self._dv_writer()
        label = winner_label(version, winner.commit_info)
        for r in rebases:
            mine = self._row_deletes.pop(r.key)
            moved = rebase(mine, r.winner_add, self.log.table_root, self.log.store, writer, label)
            self._row_deletes[moved.key] = moved
            for keys in (ctx.removed_keys, ctx.row_delete_keys):
                keys.discard(r.key)
                keys.add(moved.key)
            ctx.reads.file_keys.add(moved.key)

    def _enables_in_commit_timestamps(self) -> bool:
        """Whether this commit turns in-commit timestamps on for a table whose earlier
        commits lack them (then it must record where they start)."""
        return (
            self.snapshot is not None
            and props.in_commit_timestamps(self.metadata.configuration)
            and not props.in_commit_timestamps(self.snapshot.configuration)
        )

    def _stamp_ict_enablement(self, version: int, ict: int) -> None:
        """Record the enablement version and timestamp (this attempt's) in the metadata."""
        conf = dict(self.metadata.configuration) | {
            props.ICT_ENABLEMENT_VERSION: str(version),
            props.ICT_ENABLEMENT_TIMESTAMP: str(ict),
        }
        self._metadata = self.metadata.with_changes(configuration=conf)

    def _latest_timestamp(self, winners: list[CommitActions]) -> int:
        from delta_pyspark.core.protocol.actions import commit_timestamp

        for w in reversed(winners):
            ts = commit_timestamp(w.commit_info)
            if ts is not None:
                return ts
        return self.snapshot.timestamp if self.snapshot else 0

    def _post_commit_snapshot(
        self, version: int, winners: list[CommitActions], committed: CommitActions
    ) -> Snapshot:
        if self.snapshot is None:
            snapshot = self.log.snapshot(version)
        else:
            snapshot = self.log.apply_commits(self.snapshot, version, [*winners, committed])
        self.log.remember(snapshot)
        return snapshot
