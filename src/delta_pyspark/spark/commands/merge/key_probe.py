"""Merges on one integral key found by probing: the JVM helper's ``KeyProbeParquetFormat``
reads the candidate files' key column and looks each key up among the source's, with no
Spark join. The one-pass upsert (``one_pass``) reads the files through it. A merge with
deletion vectors, or a copy-on-write one rewriting files by position, whose matched clauses
are decided by the source row alone gets its phase 1 from it (``_probe_matches``): the
matched rows' positions and keys, from which the driver derives each row's clause from its
source row. Phase 1 was otherwise a broadcast join of the target with the source and an
aggregation of the matches per file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    deleted_row_indexes,
)
from delta_pyspark.core.protocol.schema import StructType, type_name
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.spark.commands.change_data import records_changes
from delta_pyspark.spark.commands.conditions import as_column
from delta_pyspark.spark.commands.merge.common import _SOURCE_MARK, COPY
from delta_pyspark.spark.commands.merge.matching import _distinct, _Matches
from delta_pyspark.spark.commands.merge.planning import _Plan
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.commands.rewrite import rows_by_file
from delta_pyspark.spark.files.scan import file_uris, read_files
from delta_pyspark.spark.jvm.helpers import KeyProbe

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

# Key types the probe looks up as longs, where Spark's equality is the longs' equality.
_INTEGRAL = {"byte", "short", "integer", "long"}
# Source rows whose keys the driver collects for the probe (with each row's clause and id
# and the hash table, about 45 MB at most; the table, 16 MB, is broadcast): past that the
# general path joins as Spark chooses.
_MAX_KEYS = 1_000_000


class _KeyProbe(_MergeState):
    """Choosing the probe and finding a merge's matches with it."""

    def _probe_key(
        self,
        snapshot: Snapshot,
        schema: StructType,
        plan: _Plan,
        keys: list[tuple[str, SparkColumn]],
    ) -> tuple[str, SparkColumn] | None:
        """The join key (target column, source column) when a probe can find the merge's
        matches, as far as the condition and table say: the condition is one equality of
        integral columns, the target's stored in the data files (not a partition column),
        no clause concerns target rows the source does not match, and no row ids are kept."""
        if self.by_source or not plan.only_keys or len(plan.key_pairs) != 1 or len(keys) != 1:
            return None
        name = keys[0][0]
        if type_name(schema.field(name).type) not in _INTEGRAL or self.preserved is not None:
            return None
        if name.lower() in {c.lower() for c in snapshot.partition_columns}:
            return None
        return keys[0]

    def _probe_fits(
        self, txn: Transaction, snapshot: Snapshot, schema: StructType, candidates: Any, rows: int
    ) -> bool:
        """Whether this execution can probe, given its key (``_probe_key``): the table's
        schema unchanged, no change data to record (it needs the joined rows), candidate
        files to read and at most ``_MAX_KEYS`` source rows."""
        if self.probe_key is None or schema != snapshot.schema or records_changes(txn):
            return False
        return 0 < rows <= _MAX_KEYS and candidates.num_rows > 0

    def _probes_matches(
        self,
        txn: Transaction,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        candidates: Any,
        rows: int,
    ) -> bool:
        """Whether phase 1 of this merge (with deletion vectors, or rewriting files by
        position) is a probe (``_probe_matches``): besides ``_probe_fits``, each matched
        clause's condition reads the source row alone and each matched clause deletes or
        updates the row from its source row alone (``_updates_from_source``), so a matched
        row's fate is its source row's."""
        if not self.matched_by_source_row or not self._probe_fits(
            txn, snapshot, schema, candidates, rows
        ):
            return False
        updates = any(c.action == "update" for c in self.matched)
        return not updates or self._updates_from_source(schema, src)

    def _probe_matches(
        self, snapshot: Snapshot, schema: StructType, src: DataFrame, candidates: Any
    ) -> _Matches | None:
        """Phase 1 by probe: the changed rows' positions and files, the counts per clause,
        the ids of the source rows that matched and of those that update. None when a key
        matched several times (a target row matched by several source rows, or a source row
        matching several target rows): the general path then decides, as it does for any
        merge."""
        from pyspark.sql import functions as F

        assert self.probe_key is not None
        name, column = self.probe_key
        key = column.cast("long").alias("k")
        action = F.lit(COPY)
        for code, clause in reversed(self._codes()):
            if clause.when == "matched":
                holds = F.lit(True) if clause.condition is None else as_column(clause.condition)
                action = F.when(F.coalesce(holds, F.lit(False)), F.lit(code)).otherwise(action)
        keyed = src.select(key, action.cast("long"), F.col(_SOURCE_MARK))
        keyed = keyed.where(F.col("k").isNotNull())
        mode = column_mapping_mode(snapshot.configuration)
        probe = KeyProbe(keyed, physical_name(schema.field(name), mode), False)
        read_files(self.spark, snapshot, candidates, probe=probe).count()
        uris, counts, (positions, holders, actions, marks) = probe.matched_rows()
        files = np.repeat(np.arange(len(uris)), counts)
        live = _live(snapshot, self.log.store, candidates, uris, counts, positions)
        files, positions, holders = files[live], positions[live], holders[live]
        actions, marks = actions[live], marks[live]
        if (holders > 1).any() or len(_distinct(marks)) < len(marks):
            return None
        found = _Matches({}, set(), set(), False, (candidates.slice(0, 0), []))
        codes, numbers = np.unique(actions, return_counts=True)
        found.counts = {int(c): int(n) for c, n in zip(codes, numbers, strict=True)}
        changed = actions != COPY
        found.matched_uris = {uris[i] for i in np.unique(files)}
        found.touched_uris = {uris[i] for i in np.unique(files[changed])}
        found.changed = rows_by_file(
            snapshot,
            candidates,
            pa.array(uris, pa.string()).take(pa.array(files[changed])),
            pa.array(positions[changed]),
        )
        found.matched_marks = np.sort(marks)
        update = [code for code, c in self._codes() if c.when == "matched" and c.action == "update"]
        if update:  # the updated rows are these source rows
            found.updated_marks = np.sort(marks[np.isin(actions, update)])
            found.upserted = self._upserts_every_source_row(schema)
        return found


def _live(
    snapshot: Snapshot,
    store: LogStore,
    candidates: Any,
    uris: list[str],
    counts: np.ndarray,
    positions: np.ndarray,
) -> np.ndarray:
    """Which probed rows (``counts[i]`` positions of file ``uris[i]``, file after file) their
    file's deletion vector does not delete already: the probe reads every row."""
    live = np.ones(len(positions), bool)
    ends = np.cumsum(counts)
    number = {uri: i for i, uri in enumerate(uris)}
    vectors = candidates.column("deletionVector").to_pylist()
    for uri, dv in zip(file_uris(snapshot, candidates), vectors, strict=True):
        i = number.get(uri)
        if dv is None or i is None:
            continue
        deleted = deleted_row_indexes(
            DeletionVectorDescriptor.from_dict(dv), snapshot.table_root, store
        )
        rows = slice(ends[i] - counts[i], ends[i])
        live[rows] = ~np.isin(positions[rows], deleted)
    return live
