"""Merges on one integral key found by probing: the JVM helper's ``KeyProbeParquetFormat``
reads the candidate files' key column and looks each key up among the source's, with no
Spark join. The one-pass upsert (``one_pass``) reads the files through it. A merge with
deletion vectors, or a copy-on-write one rewriting files by position, whose matched clauses
are decided by the source row alone gets its phase 1 from it (``_probe_matches``): the
matched rows' positions and keys, from which the driver derives each row's clause from its
source row. Phase 1 was otherwise a broadcast join of the target with the source and an
aggregation of the matches per file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.protocol.actions import AddFile
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    any_deletion_vectors,
    deleted_row_indexes,
)
from delta_pyspark.core.protocol.schema import StructType, type_name
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.spark.commands.change_data import records_changes
from delta_pyspark.spark.commands.conditions import as_column
from delta_pyspark.spark.commands.merge.common import _SOURCE_MARK, COPY, _union
from delta_pyspark.spark.commands.merge.matching import _distinct, _Matches
from delta_pyspark.spark.commands.merge.planning import _Plan
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.commands.rewrite import discard_files, rows_by_file, write_rows
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


@dataclass
class _Written:
    """What a probe's own job wrote (``_KeyProbe._probe_and_write``)."""

    adds: list[AddFile]
    unchanged_rows: bool  # the changed files' rows no clause changes (a positional rewrite)
    source_rows: bool  # every source row (``_Matches.upserted``)


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

    def _phase_one_by_probe(
        self,
        txn: Transaction,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        candidates: Any,
        rows: int,
        dv: bool,
        positional: bool,
    ) -> tuple[_Matches | None, _Written | None]:
        """Phase 1 by probe where it applies (a merge with deletion vectors, or rewriting
        by ``positional``, that ``_probes_matches``): the matches, and what the probe's own
        job wrote (``_probe_and_write``) where some rows do not depend on the matches. No
        matches where the general path finds them."""
        if not (dv or positional) or not self._probes_matches(
            txn, snapshot, schema, src, candidates, rows
        ):
            return None, None
        rewrite = positional and not any_deletion_vectors(candidates)
        upserted = any(c.action == "update" for c in self.matched) and (
            self._upserts_every_source_row(schema)
        )
        if rewrite or upserted:
            return self._probe_and_write(snapshot, schema, src, candidates, rewrite, upserted)
        return self._probe_matches(snapshot, schema, src, candidates), None

    def _probe_matches(
        self, snapshot: Snapshot, schema: StructType, src: DataFrame, candidates: Any
    ) -> _Matches | None:
        """Phase 1 by probe: the changed rows' positions and files, the counts per clause,
        the ids of the source rows that matched and of those that update. None when a key
        matched several times (a target row matched by several source rows, or a source row
        matching several target rows) or a matched clause's condition failed on a source row
        (``_probe_for``): the general path then decides, as it does for any merge."""
        probe = self._probe_for(snapshot, schema, src, rewrite=False)
        if probe is None:
            return None
        read_files(self.spark, snapshot, candidates, probe=probe).count()
        return self._matches_found(probe, snapshot, schema, candidates)

    def _probe_and_write(
        self,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        candidates: Any,
        rewrite: bool,
        upserted: bool,
    ) -> tuple[_Matches | None, _Written | None]:
        """Phase 1 by probe in the job that writes what does not depend on its matches,
        saving a job and running both on the task slots at once: with ``rewrite`` (a
        copy-on-write merge rewriting by position, files without deletion vectors), the
        changed files' unchanged rows, read without the rows whose key's clause changes
        them (``KeyProbe.rewrite``), saving a second read of the files; when ``upserted``
        (``_Matches.upserted``), every source row. Returns the matches (as
        ``_probe_matches``) and what was written, or nothing, with nothing left written,
        where ``_probe_matches`` gives None."""
        probe = self._probe_for(snapshot, schema, src, rewrite)
        if probe is None:
            return None, None
        frames = [read_files(self.spark, snapshot, candidates, probe=probe)]
        if upserted:
            slots = self.spark.sparkContext.defaultParallelism
            frames.append(self._updates_of_source_rows(src, schema, None).coalesce(slots))
        adds = write_rows(_union(frames), snapshot, schema)
        found = self._matches_found(probe, snapshot, schema, candidates)
        if found is None:
            discard_files(snapshot, adds)
            return None, None
        return found, _Written(adds, rewrite, upserted)

    def _probe_for(
        self, snapshot: Snapshot, schema: StructType, src: DataFrame, rewrite: bool
    ) -> KeyProbe | None:
        """The probe (``KeyProbe.rewrite`` with ``rewrite``, else ``KeyProbe.probe``) of the
        keyed source, or None when a matched clause's condition fails on a source row (say
        a division by zero under ANSI): building the probe evaluates the conditions on every
        source row, while a merge evaluates them on matched rows only, so the general path
        then decides, and fails only where a matched row fails."""
        from pyspark.errors import PySparkException

        keyed, column = self._keyed_source(src), self._probed_column(snapshot, schema)
        try:
            if rewrite:
                return KeyProbe.rewrite(keyed, column, COPY)
            return KeyProbe.probe(keyed, column)
        except PySparkException:
            return None

    def _keyed_source(self, src: DataFrame) -> DataFrame:
        """The probe's source: each source row's key (long; rows without one left out), the
        code of the matched clause its row takes (COPY if none) and its id."""
        from pyspark.sql import functions as F

        assert self.probe_key is not None
        key = self.probe_key[1].cast("long").alias("k")
        action = F.lit(COPY)
        for code, clause in reversed(self._codes()):
            if clause.when == "matched":
                holds = F.lit(True) if clause.condition is None else as_column(clause.condition)
                action = F.when(F.coalesce(holds, F.lit(False)), F.lit(code)).otherwise(action)
        keyed = src.select(key, action.cast("long"), F.col(_SOURCE_MARK))
        return keyed.where(F.col("k").isNotNull())

    def _probed_column(self, snapshot: Snapshot, schema: StructType) -> str:
        """The key column's name in the data files."""
        assert self.probe_key is not None
        mode = column_mapping_mode(snapshot.configuration)
        return physical_name(schema.field(self.probe_key[0]), mode)

    def _matches_found(
        self, probe: KeyProbe, snapshot: Snapshot, schema: StructType, candidates: Any
    ) -> _Matches | None:
        """A finished probe's matches (see ``_probe_matches``)."""
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
    with_vectors = candidates.filter(pc.is_valid(candidates.column("deletionVector")))
    if not with_vectors.num_rows:
        return live
    ends = np.cumsum(counts)
    number = {uri: i for i, uri in enumerate(uris)}
    vectors = with_vectors.column("deletionVector").to_pylist()
    for uri, dv in zip(file_uris(snapshot, with_vectors), vectors, strict=True):
        i = number.get(uri)
        if i is None:
            continue
        deleted = deleted_row_indexes(
            DeletionVectorDescriptor.from_dict(dv), snapshot.table_root, store
        )
        rows = slice(ends[i] - counts[i], ends[i])
        live[rows] = ~np.isin(positions[rows], deleted)
    return live
