"""MERGE INTO: upsert a source DataFrame into the table in one atomic commit.

Execution, in the spirit of delta-spark's:

1. The source is materialised once (a local checkpoint: its rows are computed once
   and kept as rows, which is cheaper than building a columnar cache), each row tagged
   with an id, so a non-deterministic source yields the same rows to every step and
   the commit. Its row count and the range of its join keys are observed as it is
   materialised; with not-matched-by-source clauses one aggregation says whether those
   keys are unique, and a tiny job collects the keys of a source of at most
   ``_MAX_KEY_SET`` rows.
2. Candidate target files: the merge condition's target-only conjuncts plus the
   range (or set) of source join keys prune files by partition values and stats.
   The same predicate is the transaction's read predicate, so merges on disjoint
   key ranges do not conflict.
3. Find touched files: join candidates with the source; per target row the first
   clause that applies. One aggregated job gives the files to rewrite, the
   per-clause row counts and whether a target row matched several source rows: with
   not-matched-by-source clauses (an outer join: every candidate row) unique source
   keys skip the aggregation per target row; without them the aggregation covers the
   matched pairs only, and where positions are collected (below) a repeated position
   shows a row matched twice, so it is skipped until one does. Without
   not-matched-by-source clauses the same job collects the ids of the source rows that
   matched (or, past a target row matched twice, the matched pairs are kept: a local
   checkpoint the aggregated job fills as it reads them). With deletion vectors (or a
   positional rewrite, below) the changed rows' positions are collected, and the updated
   rows' new values are kept in the pairs, except for an UPDATE SET *: its updated rows
   are the source rows whose ids phase 1 collected.
4. Copy-on-write: rewrite only touched files. Their unchanged rows are read without
   the changed rows' positions when the source is much smaller than the candidate
   files (``_keeps_rows_by_position``), else the files are left-outer-joined with the
   source clause by clause. Deletion vectors: mark the changed rows deleted. Updated
   rows are written from the kept pairs (or those source rows) when there are any. For
   insert clauses, append the source rows whose ids did not match (a filter by the
   collected ids; with kept pairs an anti-join with them; with neither, the source
   anti-joined with the files that had matches). An unconditional UPDATE SET * followed
   by one unconditional INSERT * writes every source row once either way: the new rows
   are then the source's rows, read once. All of it goes to one Spark write and one
   commit.

Not-matched-by-source clauses make every target row a candidate.

Key probes (``key_probe``), for a condition that is one equality of integral keys: the JVM
helper's ``KeyProbeParquetFormat`` looks each target row's key up among the source's inside
the Parquet scan, with no Spark join, and reports each file's matched keys and positions in
an accumulator.

- One-pass upsert (``one_pass``): a copy-on-write merge of that UPDATE SET * / INSERT *
  shape skips step 3. The candidate files are read without the rows whose key is a source
  key (a file with none yields nothing and is not rewritten), and written with the source's
  rows in one job; the matched keys name the files to remove and show a target row matched
  twice (an error) or a source row matched twice (the general path then runs, and the
  files the one pass wrote are deleted).
- Step 3 by probe (``_probe_matches``), for deletion vectors or a positional rewrite: when
  each matched clause's condition reads the source row alone and its action is a DELETE or
  an UPDATE SET * from the source row, each matched row's clause is its source row's,
  evaluated on the source, and the probe's positions are the changed rows'. A key matched
  several times hands the merge to the general path. The probe's own job writes what does
  not depend on its result (``_probe_and_write``): a positional rewrite's unchanged rows
  (the probe's reader yields each changed file without its changed rows, so the files are
  read once), and an upsert's source rows; a fallback deletes them."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.protocol.schema import (
    StructField,
    StructType,
    parse_schema_string,
    schema_to_string,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.row_deletion import deletion_vectors_enabled
from delta_pyspark.exceptions import DeltaUnsupportedOperationException
from delta_pyspark.spark.columns.identity import merge_generated_columns, record_high_water_marks
from delta_pyspark.spark.columns.row_tracking import preserved_names
from delta_pyspark.spark.commands.auto_compact import commit_and_compact
from delta_pyspark.spark.commands.change_data import records_changes, write_changes
from delta_pyspark.spark.commands.conditions import condition_sql
from delta_pyspark.spark.commands.merge.changes import _Changes
from delta_pyspark.spark.commands.merge.clauses import MergeClause, _validate_clauses
from delta_pyspark.spark.commands.merge.common import (
    _MAX_COLLECTED_SOURCE_ROWS,
    _SOURCE_MARK,
    _union,
)
from delta_pyspark.spark.commands.merge.copy_on_write import _CopyOnWrite
from delta_pyspark.spark.commands.merge.deletion_vectors import (
    _deletion_vector_metrics,
    _DeletionVectors,
)
from delta_pyspark.spark.commands.merge.inserts import _Inserts
from delta_pyspark.spark.commands.merge.key_probe import _KeyProbe, _Written
from delta_pyspark.spark.commands.merge.matching import _Matches, _Matching
from delta_pyspark.spark.commands.merge.metrics import _Metrics, _ordered
from delta_pyspark.spark.commands.merge.one_pass import _OnePass
from delta_pyspark.spark.commands.merge.planning import _Planning
from delta_pyspark.spark.commands.merge.positional import _Positional
from delta_pyspark.spark.commands.merge.projection import _Projection
from delta_pyspark.spark.commands.merge.source import (
    _Source,
    _SourceSummary,
)
from delta_pyspark.spark.commands.rewrite import (
    elapsed_ms,
    files_by_uri,
    without_empty_files,
    write_rows,
)
from delta_pyspark.spark.conf import user_metadata
from delta_pyspark.spark.jvm.bridge import internal_plans
from delta_pyspark.spark.jvm.plans import unpersist_checkpoint, within_broadcast_threshold
from delta_pyspark.spark.types import from_spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class MergeCommand(
    _Planning,
    _Source,
    _Matching,
    _Projection,
    _DeletionVectors,
    _Positional,
    _CopyOnWrite,
    _Inserts,
    _KeyProbe,
    _OnePass,
    _Changes,
    _Metrics,
):
    """One execution of a merge (see the module docstring for the steps)."""

    def __init__(
        self,
        spark: SparkSession,
        log: DeltaLog,
        target_alias: str | None,
        source: DataFrame,
        condition: Any,
        clauses: tuple[MergeClause, ...],
        evolve: bool,
    ) -> None:
        _validate_clauses(clauses)
        self.evolve = evolve
        self.spark = spark
        self.log = log
        self.alias = target_alias
        self.source = source
        self.condition = condition
        self.clauses = clauses
        self.matched = [c for c in clauses if c.when == "matched"]
        self.inserts = [c for c in clauses if c.when == "notMatched"]
        self.by_source = [c for c in clauses if c.when == "notMatchedBySource"]
        self.broadcast_source = False  # decided once the source is materialised
        self.preserved: tuple[str, str] | None = None  # row tracking's columns, when kept
        self.protocol = None
        # the join key when a probe may find the matches (``_KeyProbe._probe_key``)
        self.probe_key: tuple[str, Any] | None = None
        self.matched_by_source_row = False  # set with the plan (``_Plan``)

    @internal_plans()
    def run(self) -> dict[str, Any]:
        from pyspark.sql import functions as F

        start = time.monotonic()
        snapshot = self.log.snapshot()
        self.protocol = snapshot.protocol
        schema = self._target_schema(snapshot.schema)
        self.preserved = preserved_names(snapshot)
        generated = merge_generated_columns(schema, self.clauses, self.source.columns)
        txn = Transaction(self.log, snapshot)
        txn.check_writable()
        if generated and records_changes(txn) and (self.matched or self.by_source):
            raise DeltaUnsupportedOperationException(
                "MERGE generating IDENTITY values on a table recording change data, with "
                "update or delete clauses too, is not supported (its change data would "
                "hold other values); run the inserts as a separate MERGE or INSERT"
            )
        if any(c.when != "notMatched" for c in self.clauses):
            txn.check_data_removable()
        # Each source row gets an id (fixed once the checkpointed rows exist): phase 1 records
        # which ids matched, so the insert step need not join the target again.
        marked = self.source.withColumn(_SOURCE_MARK, F.monotonically_increasing_id())
        plan = self._plan_for(snapshot, marked)
        keys = self._join_keys(snapshot, marked, plan)
        self.probe_key = self._probe_key(snapshot, schema, plan, keys)
        self.matched_by_source_row = plan.matched_by_source_row
        src, summary = self._materialise_source(marked, keys)
        cached: list[DataFrame] = []
        try:
            # Only an outer join (by-source clauses) makes grouping the source's keys
            # cheaper than grouping phase 1's matched pairs per target row (0.3 s of a
            # 2-4 s merge of 200k rows into 10M).
            self._summarise_source(
                src, keys, summary, prune=not self.by_source, check_unique=bool(self.by_source)
            )
            self.broadcast_source = within_broadcast_threshold(src)
            candidates = self._candidates(txn, snapshot, plan, keys, summary)
            txn.read_files(candidates)
            if schema != snapshot.schema:
                txn.update_metadata(
                    snapshot.metadata.with_changes(schema_string=schema_to_string(schema))
                )
                schema = parse_schema_string(txn.metadata.schema_string)  # mapped names
            metrics = self._execute(txn, snapshot, schema, src, candidates, summary, start, cached)
            metrics["numSourceRows"] = summary.rows
        finally:
            for df in reversed(cached):
                unpersist_checkpoint(df)
            unpersist_checkpoint(src)
        metrics["executionTimeMs"] = elapsed_ms(start)
        if txn.has_changes:
            record_high_water_marks(txn, txn.metadata, generated, txn.added_files)
            commit_and_compact(
                self.spark,
                txn,
                "MERGE",
                self._parameters(),
                _ordered(metrics),
                user_metadata(self.spark),
            )
        return metrics

    def _parameters(self) -> dict[str, str]:
        def described(when: str) -> str:
            return json.dumps([c.describe() for c in self.clauses if c.when == when])

        return {
            "predicate": json.dumps([condition_sql(self.condition)]),
            "matchedPredicates": described("matched"),
            "notMatchedPredicates": described("notMatched"),
            "notMatchedBySourcePredicates": described("notMatchedBySource"),
        }

    def _target_schema(self, table: StructType) -> StructType:
        """The table schema, plus source columns that ``*All`` clauses bring when evolving."""
        if not self.evolve or not any(c.star for c in self.clauses):
            return table
        source = from_spark_schema(self.source.schema)
        known = {f.name.lower() for f in table.fields}
        new = [
            StructField(f.name, f.type, True, f.metadata)
            for f in source.fields
            if f.name.lower() not in known
        ]
        return StructType(table.fields + tuple(new)) if new else table

    def _copied_rows(
        self,
        snapshot: Snapshot,
        touched: Any,
        src: DataFrame,
        schema: StructType,
        found: _Matches,
        positional: bool,
        written: _Written | None,
    ) -> list[DataFrame]:
        """The rows to write for the ``touched`` files: their unchanged rows by position
        (unless the probe's job wrote them), else all of them through the join."""
        if not touched.num_rows or (written is not None and written.unchanged_rows):
            return []
        if positional:
            return [self._unchanged_rows(snapshot, touched, found)]
        return [self._copied_by_join(snapshot, touched, src, schema, found)]

    def _execute(
        self,
        txn: Transaction,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        candidates: Any,
        source: _SourceSummary,
        start: float,
        cached: list[DataFrame],
    ) -> dict[str, Any]:
        """Find the matches, write the new files and remove or mark the old rows."""
        dv = deletion_vectors_enabled(snapshot)
        if not dv and self._upserts_in_one_pass(
            txn, snapshot, schema, src, candidates, source.rows
        ):
            metrics = self._upsert_in_one_pass(txn, snapshot, schema, src, candidates, start)
            if metrics is not None:
                return metrics
        positional = not dv and self._keeps_rows_by_position(
            snapshot, schema, candidates, source, src
        )
        found, written = self._phase_one_by_probe(
            txn, snapshot, schema, src, candidates, source.rows, dv, positional
        )
        unique = source.unique
        if unique is None and not (dv or positional) and source.rows > _MAX_COLLECTED_SOURCE_ROWS:
            unique = False  # too many positions to collect: count the matches per target row
        if found is None:
            found = self._find_matches(
                snapshot, schema, src, candidates, dv or positional, unique, cached
            )
        scan_ms = elapsed_ms(start)
        fresh: list[DataFrame] = []  # new versions of changed rows, inserted rows
        if dv:
            touched = candidates.slice(0, 0)  # no file is rewritten
            deletes = self._delete_changed_rows(txn, snapshot, schema, src, found, fresh)
        else:
            deletes = []
            touched = files_by_uri(snapshot, candidates, sorted(found.touched_uris))
        # rows of rewritten files (all of them in the join path)
        copied = self._copied_rows(snapshot, touched, src, schema, found, positional, written)
        if touched.num_rows and positional and found.has_new_values and not found.upserted:
            fresh.append(self._updated_rows(found, schema, src))
        if found.upserted:  # the updated and the inserted rows: the source's, once each
            if written is None or not written.source_rows:
                fresh.append(self._updates_of_source_rows(src, schema, None))
        elif self.inserts:
            new = self._unmatched(snapshot, src, source.rows, candidates, found)
            fresh.append(self._project(new, None, src, schema, None))
        if fresh:
            # from the kept pairs and source, in as many partitions as those have: as
            # many files as task slots instead (coalescing keeps every slot busy)
            slots = self.spark.sparkContext.defaultParallelism
            copied.append(_union(fresh).coalesce(slots))
        adds = written.adds if written is not None else []
        adds += write_rows(_union(copied), snapshot, schema) if copied else []
        adds = without_empty_files(snapshot, adds)
        rewritten = remove_actions(touched)
        txn.remove_files(rewritten)
        removes = rewritten + [d.remove for d in deletes if d.add is None]
        txn.add_files(adds)
        metrics = self._metrics(snapshot, touched, found.counts, adds, removes, scan_ms, start)
        if (touched.num_rows or deletes) and records_changes(txn):
            changes = self._changes(snapshot, schema, src, candidates, found, source.rows)
            metrics["numTargetChangeFilesAdded"] = write_changes(txn, snapshot, changes, schema)
        if dv:
            _deletion_vector_metrics(metrics, deletes)
        return metrics
