"""MERGE INTO: upsert a source DataFrame into the table in one atomic commit.

Execution, in the spirit of delta-spark's:

1. The source is materialised once (a local checkpoint: its rows are computed once
   and kept as rows, which is cheaper than building a columnar cache), each row tagged
   with an id, so a non-deterministic source yields the same rows to every step and
   the commit. One aggregation over it gives its row count, the range of its join
   keys and whether those keys are unique (a second, tiny job collects the keys of a
   source of at most ``_MAX_KEY_SET`` rows).
2. Candidate target files: the merge condition's target-only conjuncts plus the
   range (or set) of source join keys prune files by partition values and stats.
   The same predicate is the transaction's read predicate, so merges on disjoint
   key ranges do not conflict.
3. Find touched files: join candidates with the source; per target row the first
   clause that applies. One aggregated job gives the files to rewrite, the
   per-clause row counts and whether a target row matched several source rows
   (unique source keys make each matched pair a distinct target row, so the
   per-row aggregation is skipped). Without not-matched-by-source clauses the
   matched pairs are persisted: the source ids in them are exactly the source rows
   that match, and with deletion vectors (or a positional rewrite, below) they carry
   the updated rows' new values and the changed rows' positions are collected.
4. Copy-on-write: rewrite only touched files. Their unchanged rows are read without
   the changed rows' positions when the source is much smaller than the candidate
   files (``_keeps_rows_by_position``), else the files are left-outer-joined with the
   source clause by clause. Deletion vectors: mark the changed rows deleted. Updated
   rows are written from the persisted pairs when there are any. For insert clauses,
   append the source rows whose ids did not match (without persisted pairs: the
   source anti-joined with the files that had matches). All of it goes to one Spark
   write and one commit.

Not-matched-by-source clauses make every target row a candidate.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from delta_pyspark.core.actions import remove_actions
from delta_pyspark.core.change_data import CHANGE_TYPE, DELETE, INSERT, POSTIMAGE, PREIMAGE
from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.core.expression_parser import parse_predicate
from delta_pyspark.core.expressions import (
    And,
    Column,
    Comparison,
    Expr,
    In,
    Literal,
    and_all,
    columns_of,
    conjuncts,
    map_columns,
)
from delta_pyspark.core.row_deletion import deletion_vectors_enabled, dv_metrics
from delta_pyspark.core.schema import (
    StructField,
    StructType,
    parse_schema_string,
    schema_to_string,
)
from delta_pyspark.core.snapshot import Snapshot
from delta_pyspark.core.transaction import Transaction
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException
from delta_pyspark.spark import arguments
from delta_pyspark.spark.auto_compact import commit_and_compact
from delta_pyspark.spark.change_data import records_changes, with_change_type, write_changes
from delta_pyspark.spark.conditions import (
    as_column,
    assigned_value,
    condition_sql,
    resolve_assignments,
)
from delta_pyspark.spark.integration import java_frame, sql_conf
from delta_pyspark.spark.rewrite import (
    elapsed_ms,
    files_by_uri,
    live_rows,
    num_records,
    rows_by_file,
    write_rows,
)
from delta_pyspark.spark.scan import (
    FILE_PATH,
    ROW_INDEX,
    file_uris,
    prune_files,
    read_files,
    session_time_zone,
)
from delta_pyspark.spark.session_conf import auto_merge, user_metadata
from delta_pyspark.spark.types import from_spark_schema, to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

_SOURCE_MARK = "__delta_merge_source"
_TARGET_MARK = "__delta_merge_target"
_ACTION = "__delta_merge_action"
_MATCHED_ID = "__delta_merge_matched"
_BEFORE = "__delta_merge_before_"
COPY, DROP = -1, -2
# A source "much smaller" than the target files: their rows outnumber its rows by this
# factor. Then matched source ids for inserts (without phase 1 pairs) come from a
# (broadcast) join instead of an anti-join over every target key, and a copy-on-write
# rewrite may keep unchanged rows by position (``_keeps_rows_by_position``).
_SMALL_SOURCE_FACTOR = 4
# Copy-on-write merges of sources up to this many rows may collect the changed rows'
# positions (8 bytes each) on the driver and read the rewritten files without them
# (``_keeps_rows_by_position``); larger ones join every row of those files with the source.
_POSITIONAL_MAX_SOURCE_ROWS = 10_000_000
# Source keys up to this many distinct values are recorded as an IN list, else as a range.
_MAX_KEY_SET = 1000
# Join key types whose source min/max can prune target files exactly like Spark compares them.
_RANGE_TYPES = {"byte", "short", "integer", "long", "string", "date", "decimal"}


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause: ``when`` is matched | notMatched | notMatchedBySource."""

    when: str
    action: str  # update | delete | insert
    condition: Any = None  # str | Column | None
    assignments: Mapping[str, Any] | None = None  # None with star
    star: bool = False  # updateAll / insertAll

    def describe(self) -> dict[str, str]:
        out = {"actionType": self.action + ("All" if self.star else "")}
        if self.condition is not None:
            out["predicate"] = condition_sql(self.condition) or ""
        return out


class DeltaMergeBuilder:
    """delta-spark's merge builder: add WHEN clauses in order, then ``execute()``."""

    def __init__(
        self,
        spark: SparkSession,
        log: DeltaLog,
        target_alias: str | None,
        source: DataFrame,
        condition: Any,
        clauses: tuple[MergeClause, ...] = (),
        schema_evolution: bool = False,
    ) -> None:
        self._spark = spark
        self._log = log
        self._alias = target_alias
        self._source = source
        self._condition = condition
        self._clauses = clauses
        self._evolve = schema_evolution

    def _with(self, clause: MergeClause) -> DeltaMergeBuilder:
        arguments.check_condition(clause.condition)
        return DeltaMergeBuilder(
            self._spark,
            self._log,
            self._alias,
            self._source,
            self._condition,
            (*self._clauses, clause),
            self._evolve,
        )

    def whenMatchedUpdate(
        self, condition: Any = None, set: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        assignments = _assignments(set, "'set' in whenMatchedUpdate", condition, self._alias)
        return self._with(MergeClause("matched", "update", condition, assignments))

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("matched", "update", condition, None, star=True))

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("matched", "delete", condition))

    def whenNotMatchedInsert(
        self, condition: Any = None, values: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        assignments = _assignments(
            values, "'values' in whenNotMatchedInsert", condition, self._alias
        )
        return self._with(MergeClause("notMatched", "insert", condition, assignments))

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("notMatched", "insert", condition, None, star=True))

    def whenNotMatchedBySourceUpdate(
        self, condition: Any = None, set: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        assignments = _assignments(
            set, "'set' in whenNotMatchedBySourceUpdate", condition, self._alias
        )
        return self._with(MergeClause("notMatchedBySource", "update", condition, assignments))

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("notMatchedBySource", "delete", condition))

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        return DeltaMergeBuilder(
            self._spark,
            self._log,
            self._alias,
            self._source,
            self._condition,
            self._clauses,
            True,
        )

    def execute(self) -> DataFrame:
        """Run the merge; a DataFrame of num_affected/updated/deleted/inserted rows."""
        evolve = self._evolve or auto_merge(self._spark)
        metrics = MergeCommand(
            self._spark,
            self._log,
            self._alias,
            self._source,
            self._condition,
            self._clauses,
            evolve,
        ).run()
        updated = metrics["numTargetRowsUpdated"]
        deleted = metrics["numTargetRowsDeleted"]
        inserted = metrics["numTargetRowsInserted"]
        return self._spark.createDataFrame(
            [(updated + deleted + inserted, updated, deleted, inserted)],
            "num_affected_rows long, num_updated_rows long, "
            "num_deleted_rows long, num_inserted_rows long",
        )


def _assignments(
    value: Any, name: str, condition: Any, target_alias: str | None
) -> Mapping[str, Any]:
    """A clause's ``set``/``values``, checked as delta-spark checks them (before the
    clause's condition), not empty, and with target columns named without the target's
    alias (``{"t.key": ...}`` sets ``key``, as Spark resolves ``t.key`` against the target)."""
    checked = arguments.check_assignments(value, name)
    arguments.check_condition(condition)
    if not checked:
        raise DeltaAnalysisException(f"{name} needs at least one column assignment")
    if target_alias is None:
        return checked
    prefix = f"{target_alias.lower()}."
    return {k[len(prefix) :] if k.lower().startswith(prefix) else k: v for k, v in checked.items()}


def _validate_clauses(clauses: tuple[MergeClause, ...]) -> None:
    if not clauses:
        raise DeltaAnalysisException("a MERGE needs at least one WHEN clause")
    for when, label in (
        ("matched", "MATCHED"),
        ("notMatched", "NOT MATCHED"),
        ("notMatchedBySource", "NOT MATCHED BY SOURCE"),
    ):
        group = [c for c in clauses if c.when == when]
        if any(c.condition is None for c in group[:-1]):
            raise DeltaAnalysisException(
                f"when a MERGE has several WHEN {label} clauses, only the last one may omit "
                "its condition (an earlier unconditional clause would hide the later ones)"
            )


@dataclass
class _Plan:
    """What the merge condition says about the target, for pruning and the read set."""

    target_predicate: Expr | None
    key_pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]  # (target path, source path)


@dataclass
class _SourceSummary:
    """What one aggregation over the source says: its row count and, per join key (in
    ``_join_keys`` order), min, max and (small sources only) the set of values."""

    rows: int
    unique: bool  # no two source rows share non-null join keys: a target row matches once
    mins: list[Any]
    maxs: list[Any]
    sets: list[tuple[Any, ...]] | None


@dataclass
class _Matches:
    """Phase 1's findings: rows per clause, files with matches / to rewrite, and the
    persisted matched pairs (source ids, and with ``rows`` the joined rows themselves)."""

    counts: dict[int, int]
    matched_uris: set[str]
    touched_uris: set[str]
    multiple: bool
    changed: tuple[Any, list[Any]]  # deletion vectors: files and their changed row indexes
    pairs: DataFrame | None = None
    rows: bool = False  # ``pairs`` also holds the updated rows' new values


class MergeCommand:
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

    # ------------------------------------------------------------------ run

    def run(self) -> dict[str, Any]:
        from pyspark.sql import functions as F

        start = time.monotonic()
        snapshot = self.log.snapshot()
        schema = self._target_schema(snapshot.schema)
        # Each source row gets an id (fixed once the checkpointed rows exist): phase 1 records
        # which ids matched, so the insert step need not join the target again.
        src = self.source.withColumn(_SOURCE_MARK, F.monotonically_increasing_id())
        src = src.localCheckpoint(eager=True)
        cached: list[DataFrame] = []
        try:
            txn = Transaction(self.log, snapshot)
            txn.check_writable()
            if any(c.when != "notMatched" for c in self.clauses):
                txn.check_data_removable()
            plan = self._plan_for(snapshot, src)
            keys = self._join_keys(snapshot, src, plan)
            summary = self._summarise_source(src, keys, prune=not self.by_source)
            self.broadcast_source = _broadcastable(self.spark, src)
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
                df.unpersist()
            _drop_checkpoint(src)
        metrics["executionTimeMs"] = elapsed_ms(start)
        if txn.has_changes:
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

    # ------------------------------------------------------------------ schema

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

    # ------------------------------------------------------------------ candidates

    def _plan(self, snapshot: Snapshot, src: DataFrame) -> _Plan:
        expr = parse_predicate(condition_sql(self.condition) or "true")
        target_names = {f.name.lower() for f in snapshot.schema.fields}
        source_names = {c.lower() for c in src.columns}
        source_aliases = _qualifiers(src)
        alias = self.alias.lower() if self.alias else None

        def side(path: tuple[str, ...]) -> str | None:
            # Spark resolves ``x.y`` as column y of relation x before field y of column x.
            head = path[0].lower()
            if alias and len(path) > 1 and head == alias:
                return "target"
            if len(path) > 1 and head in source_aliases:
                return "source"
            if head in target_names and head not in source_names:
                return "target"
            if head in source_names and head not in target_names:
                return "source"
            if len(path) > 1 and head not in target_names:
                return "source"  # qualified by the source's alias
            return None

        def strip(path: tuple[str, ...]) -> tuple[str, ...]:
            return path[1:] if alias and len(path) > 1 and path[0].lower() == alias else path

        target_only, keys = [], []
        for conj in conjuncts(expr):
            sides = {side(c) for c in columns_of(conj)}
            if sides == {"target"}:
                target_only.append(map_columns(conj, strip))
            elif (
                isinstance(conj, Comparison)
                and conj.op == "="  # not <=>: null keys match there, and min/max skip them
                and isinstance(conj.left, Column)
                and isinstance(conj.right, Column)
            ):
                pair = {
                    side(conj.left.path): conj.left.path,
                    side(conj.right.path): conj.right.path,
                }
                if set(pair) == {"target", "source"}:
                    keys.append((strip(pair["target"]), pair["source"]))
        return _Plan(and_all(target_only), keys)

    def _plan_for(self, snapshot: Snapshot, src: DataFrame) -> _Plan:
        if not self.by_source:
            return self._plan(snapshot, src)
        try:  # only the join keys are used (every target row is a candidate)
            return self._plan(snapshot, src)
        except Exception:
            return _Plan(None, [])

    def _candidates(
        self,
        txn: Transaction,
        snapshot: Snapshot,
        plan: _Plan,
        keys: list[tuple[str, SparkColumn]],
        summary: _SourceSummary,
    ) -> Any:
        """Files that may hold a matching target row; records the read predicate."""
        if self.by_source:
            txn.read_whole_table()  # every unmatched target row may change
            return snapshot.files
        parts = [plan.target_predicate] if plan.target_predicate is not None else []
        key_predicate = _key_predicate(keys, summary)
        if key_predicate is not None:
            parts.append(key_predicate)
        predicate = and_all(parts)
        if predicate is None:
            txn.read_whole_table()
            return snapshot.files
        txn.read_predicate(predicate, session_time_zone(self.spark))
        return prune_files(snapshot, predicate, session_time_zone(self.spark))

    def _join_keys(
        self, snapshot: Snapshot, src: DataFrame, plan: _Plan
    ) -> list[tuple[str, SparkColumn]]:
        """Equality keys (target column, source column) of the merge condition whose types
        are equal on both sides and compare exactly (so the source's min/max can prune and
        distinct source values are distinct join keys)."""
        from pyspark.sql import functions as F

        usable = []
        for target_path, source_path in plan.key_pairs:
            if len(target_path) != 1:
                continue
            field = snapshot.schema.find_field(target_path[0], case_sensitive=False)
            if field is None or _type_family(field.type) not in _RANGE_TYPES:
                continue
            source_col = F.col(".".join(f"`{p}`" for p in source_path))
            try:
                source_type = src.select(source_col).schema.fields[0].dataType
            except Exception:  # not a plain source column
                continue
            if source_type != to_spark_type(field.type):
                continue
            usable.append((field.name, source_col))
        return usable

    def _summarise_source(
        self, src: DataFrame, keys: list[tuple[str, SparkColumn]], prune: bool
    ) -> _SourceSummary:
        """Count the (checkpointed) source rows, with the keys'
        min/max and whether the key tuples are unique, in one Spark job; a second small
        job collects the keys of a source of at most ``_MAX_KEY_SET`` rows."""
        from pyspark.sql import functions as F

        if not keys:
            row = src.agg(F.count(F.lit(1)).alias("rows")).first()
            return _SourceSummary(int(row["rows"]), False, [], [], None)
        names = [f"k{i}" for i in range(len(keys))]
        per_key = src.groupBy(*[col.alias(n) for (_, col), n in zip(keys, names, strict=True)])
        per_key = per_key.agg(F.count(F.lit(1)).alias("c"))
        present = _and_columns([F.col(n).isNotNull() for n in names])
        aggs = [F.sum("c").alias("rows"), F.max(F.when(present, F.col("c"))).alias("dup")]
        for n in names:
            aggs += [F.min(n).alias(f"min_{n}"), F.max(n).alias(f"max_{n}")]
        row = per_key.agg(*aggs).first()
        rows = int(row["rows"] or 0)
        mins = [row[f"min_{n}"] for n in names]
        maxs = [row[f"max_{n}"] for n in names]
        sets = None
        if prune and 0 < rows <= _MAX_KEY_SET:  # a few rows: their keys, from the cache
            collected = src.select(*[col for _, col in keys]).collect()
            sets = [
                tuple(sorted({r[i] for r in collected if r[i] is not None}))
                for i in range(len(keys))
            ]
        # Null keys never match (``=``): their duplicates cannot make a row match twice.
        unique = (row["dup"] or 0) <= 1
        return _SourceSummary(rows, unique, mins, maxs, sets)

    # ------------------------------------------------------------------ execution

    def _target(self, snapshot: Snapshot, files: Any, with_row_ids: bool = False) -> DataFrame:
        from pyspark.sql import functions as F

        df = read_files(self.spark, snapshot, files, with_row_ids=with_row_ids)
        df = df.withColumn(_TARGET_MARK, F.lit(True))
        return df.alias(self.alias) if self.alias else df

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

        cond = as_column(self.condition)
        dv = deletion_vectors_enabled(snapshot)
        positional = not dv and self._keeps_rows_by_position(snapshot, schema, candidates, source)
        found = self._find_matches(
            snapshot, schema, src, candidates, dv or positional, source.unique, cached
        )
        scan_ms = elapsed_ms(start)
        present = src[_SOURCE_MARK].isNotNull()
        copied: list[DataFrame] = []  # rows of rewritten files (all of them in the join path)
        fresh: list[DataFrame] = []  # new versions of changed rows, inserted rows
        if dv:
            touched = candidates.slice(0, 0)  # no file is rewritten
            deletes = txn.delete_rows(*found.changed)
            updates = any(c.action == "update" for c in self.matched + self.by_source)
            if updates and found.changed[0].num_rows:
                if found.rows:  # cached new values: no second scan
                    fresh.append(self._updated_rows(found, schema))
                else:
                    tgt = self._target(snapshot, found.changed[0])
                    joined = self._join(tgt, src, cond, "left_outer" if self.by_source else "inner")
                    fresh.append(self._project(joined, tgt, src, schema, present, copies=False))
        else:
            deletes = []
            touched = files_by_uri(snapshot, candidates, sorted(found.touched_uris))
        if touched.num_rows and positional:
            copied.append(self._unchanged_rows(snapshot, touched, found))
            if found.rows:
                fresh.append(self._updated_rows(found, schema))
        elif touched.num_rows:
            dedupe = found.multiple and not self.matched
            tgt = self._target(snapshot, touched, with_row_ids=dedupe)
            joined = self._join(tgt, src, cond, "left_outer")
            rows = self._project(joined, tgt, src, schema, present, row_ids=dedupe)
            if dedupe:  # several matches, all copied unchanged: keep each target row once
                rows = rows.dropDuplicates([FILE_PATH, ROW_INDEX]).drop(FILE_PATH, ROW_INDEX)
            copied.append(rows)
        if self.inserts:
            new = self._unmatched(snapshot, src, source.rows, candidates, found)
            fresh.append(self._project(new, None, src, schema, None))
        if fresh:
            # from the persisted pairs and source, in as many partitions as those have: as
            # many files as task slots instead (coalescing keeps every slot busy)
            slots = self.spark.sparkContext.defaultParallelism
            copied.append(_union(fresh).coalesce(slots))
        adds = write_rows(_union(copied), snapshot, schema) if copied else []
        rewritten = remove_actions(touched)
        txn.remove_files(rewritten)
        removes = rewritten + [d.remove for d in deletes if d.add is None]
        txn.add_files(adds)
        metrics = self._metrics(snapshot, touched, found.counts, adds, removes, scan_ms, start)
        if (touched.num_rows or deletes) and records_changes(txn):
            changes = self._changes(snapshot, schema, src, candidates, found, source.rows)
            metrics["numTargetChangeFilesAdded"] = write_changes(txn, snapshot, changes, schema)
        if dv:
            metrics["numTargetRowsCopied"] = 0
            metrics["numTargetRowsInserted"] = (
                metrics["numOutputRows"] - (metrics["numTargetRowsUpdated"])
            )
            metrics |= {k.replace("num", "numTarget", 1): v for k, v in dv_metrics(deletes).items()}
        return metrics

    def _find_matches(
        self,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        candidates: Any,
        positions: bool,
        unique: bool,
        cached: list[DataFrame],
    ) -> _Matches:
        """Phase 1: join the candidate files with the source; one aggregated job gives the
        files to rewrite, the per-clause row counts and whether a target row matched
        several source rows (skipped, with one aggregation level less, when the source's
        join keys are unique). Without not-matched-by-source clauses the matched pairs are
        persisted: the insert step takes the unmatched source ids from them. ``positions``
        also collects the changed rows' positions and keeps the updated rows' new values
        in the pairs, to be written straight from them."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        found = _Matches({}, set(), set(), False, (candidates.slice(0, 0), []))
        if not (self.matched or self.by_source) or not candidates.num_rows:
            return found
        tgt = self._target(snapshot, candidates, with_row_ids=True)
        how = "left_outer" if self.by_source else "inner"
        joined = self._join(tgt, src, as_column(self.condition), how)
        present = src[_SOURCE_MARK].isNotNull()
        action = self._action(tgt, src, present, include_inserts=False)
        if how == "inner":
            updates = any(c.action == "update" for c in self.matched)
            found.rows = positions and updates
            # what the summary and the inserts need; with positions also the updated
            # rows' new values (only the target columns those read are scanned)
            values = self._values(tgt, src, schema, updates_only=True) if found.rows else []
            joined = joined.select(
                tgt[FILE_PATH], tgt[ROW_INDEX], src[_SOURCE_MARK], action.alias(_ACTION), *values
            )
            action = F.col(_ACTION)
            joined = joined.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(joined)
            found.pairs = joined
        if unique:  # one source row per matched target row: the pairs are the rows
            rows = joined.select(
                F.col(FILE_PATH),
                F.col(ROW_INDEX),
                F.when(present, F.lit(1)).otherwise(F.lit(0)).alias("n"),
                action.alias("a"),
            )
        else:
            rows = joined.groupBy(FILE_PATH, ROW_INDEX).agg(
                F.count(_SOURCE_MARK).alias("n"), F.min(action).alias("a")
            )
        aggs = [F.count(F.lit(1)).alias("rows"), F.max("n").alias("maxn")]
        if positions:  # of the rows a clause changes
            aggs.append(F.collect_list(F.when(F.col("a") != COPY, F.col(ROW_INDEX))).alias("ids"))
        summary = rows.groupBy(FILE_PATH, "a", (F.col("n") > 0).alias("m")).agg(*aggs).toArrow()
        for r in summary.select([FILE_PATH, "a", "m", "rows", "maxn"]).to_pylist():
            found.counts[r["a"]] = found.counts.get(r["a"], 0) + int(r["rows"])
            found.multiple = found.multiple or int(r["maxn"]) > 1
            if r["m"]:
                found.matched_uris.add(r[FILE_PATH])
            if r["a"] != COPY or (self.inserts and r["m"]):
                found.touched_uris.add(r[FILE_PATH])
        if found.multiple and self.matched and not self._unconditional_delete_only():
            raise DeltaUnsupportedOperationException(
                "MERGE cannot decide what to do: several source rows matched the same target "
                "row and a WHEN MATCHED clause would update or delete it. Deduplicate the "
                "source on the merge keys (or tighten the merge condition) so each target "
                "row matches at most one source row."
            )
        if positions:
            ids = summary.column("ids").combine_chunks()
            uris = pc.take(summary.column(FILE_PATH), pc.list_parent_indices(ids))
            found.changed = rows_by_file(snapshot, candidates, uris, pc.list_flatten(ids))
        return found

    def _keeps_rows_by_position(
        self, snapshot: Snapshot, schema: StructType, candidates: Any, source: _SourceSummary
    ) -> bool:
        """Whether a copy-on-write merge reads the unchanged rows of the files it rewrites
        by leaving out the changed rows' positions (``_unchanged_rows``) instead of joining
        every row with the source. That needs the phase 1 pairs (no not-matched-by-source
        clauses), an unchanged schema, and the changed positions on the driver, so a
        bounded source; it pays when the candidate files hold many more rows than the
        source (measured: 10M target rows, 200k source rows, 12% faster; 616k and 200k,
        4% slower)."""
        if self.by_source or schema != snapshot.schema:
            return False
        if source.rows > _POSITIONAL_MAX_SOURCE_ROWS:
            return False
        target_rows = live_rows(candidates)
        return target_rows is not None and target_rows > _SMALL_SOURCE_FACTOR * source.rows

    def _updated_rows(self, found: _Matches, schema: StructType) -> DataFrame:
        """The new versions of updated target rows, from the persisted phase 1 pairs."""
        from pyspark.sql import functions as F

        codes = [i for i, c in self._codes() if c.action == "update"]
        updated = found.pairs.where(F.col(_ACTION).isin(codes))
        return updated.select(*[f"`{f.name}`" for f in schema.fields])

    def _changes(
        self,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        candidates: Any,
        found: _Matches,
        source_rows: int,
    ) -> DataFrame:
        """The change data of this merge: the old values of the target rows a clause
        updates (``update_preimage``) or deletes (``delete``, once per target row), the
        new values of updated rows (``update_postimage``) and the inserted rows."""
        from pyspark.sql import functions as F

        names = [f.name for f in schema.fields]
        frames = []
        files = files_by_uri(snapshot, candidates, sorted(found.touched_uris))
        if files.num_rows:
            tgt = self._target(snapshot, files, with_row_ids=found.multiple)
            how = "left_outer" if self.by_source else "inner"
            joined = self._join(tgt, src, as_column(self.condition), how)
            action = self._action(tgt, src, src[_SOURCE_MARK].isNotNull(), include_inserts=False)
            before = [
                (tgt[f"`{f.name}`"] if f.name in tgt.columns else F.lit(None))
                .cast(to_spark_type(f.type))
                .alias(f"{_BEFORE}{i}")
                for i, f in enumerate(schema.fields)
            ]
            ids = [tgt[FILE_PATH], tgt[ROW_INDEX]] if found.multiple else []
            rows = joined.select(
                action.alias(_ACTION), *self._values(tgt, src, schema), *before, *ids
            )
            updated = F.col(_ACTION).isin([i for i, c in self._codes() if c.action == "update"])
            deleted = F.col(_ACTION).isin([i for i, c in self._codes() if c.action == "delete"])
            old = rows.where(updated | deleted)
            if found.multiple:  # several source rows deleting one target row: delete it once
                old = old.dropDuplicates([FILE_PATH, ROW_INDEX])
            kind = F.when(updated, F.lit(PREIMAGE)).otherwise(F.lit(DELETE))
            previous = [F.col(f"{_BEFORE}{i}").alias(n) for i, n in enumerate(names)]
            frames.append(old.select(*previous, kind.alias(CHANGE_TYPE)))
            new = rows.where(updated).select(*[F.col(f"`{n}`") for n in names])
            frames.append(with_change_type(new, POSTIMAGE))
        if self.inserts:
            new = self._unmatched(snapshot, src, source_rows, candidates, found)
            frames.append(with_change_type(self._project(new, None, src, schema, None), INSERT))
        return _union(frames)

    def _unchanged_rows(self, snapshot: Snapshot, touched: Any, found: _Matches) -> DataFrame:
        """The rows of the ``touched`` files no clause changed: the files read without the
        changed rows' positions, as if deleted (no join of every row with the source)."""
        changed = dict(zip(file_uris(snapshot, found.changed[0]), found.changed[1], strict=True))
        none = np.empty(0, np.int64)
        drops = [changed.get(uri, none) for uri in file_uris(snapshot, touched)]
        return read_files(self.spark, snapshot, touched, drop_rows=drops)

    def _unmatched(
        self,
        snapshot: Snapshot,
        src: DataFrame,
        source_rows: int,
        candidates: Any,
        found: _Matches,
    ) -> DataFrame:
        """The source rows that match no target row (what insert clauses may insert)."""
        from pyspark.sql import functions as F

        if found.pairs is not None:  # phase 1 saw every match: drop the ids it recorded
            ids = found.pairs.select(F.col(_SOURCE_MARK).alias(_MATCHED_ID))
            return src.join(ids, F.col(_SOURCE_MARK) == F.col(_MATCHED_ID), "left_anti")
        files = candidates
        if self.matched or self.by_source:  # only files with matches can stop inserts
            if not found.matched_uris:
                return src
            files = files_by_uri(snapshot, candidates, sorted(found.matched_uris))
        if not files.num_rows:
            return src
        tgt, cond = self._target(snapshot, files), as_column(self.condition)
        target_rows = live_rows(files)
        if target_rows is not None and target_rows > _SMALL_SOURCE_FACTOR * source_rows:
            # A source much smaller than the target: join the target with the source
            # (broadcast) for the matched ids rather than anti-join every target key.
            ids = self._join(tgt, src, cond, "inner").select(src[_SOURCE_MARK].alias(_MATCHED_ID))
            return src.join(ids, F.col(_SOURCE_MARK) == F.col(_MATCHED_ID), "left_anti")
        return src.join(tgt, cond, "left_anti")

    def _join(self, tgt: DataFrame, src: DataFrame, cond: SparkColumn, how: str) -> DataFrame:
        """``tgt`` joined with the source, broadcasting the source when it measured within
        Spark's threshold: Spark would broadcast whichever side its estimates call smaller,
        and a target scan's estimate (compressed bytes) is far below its size in memory."""
        return tgt.join(src.hint("broadcast") if self.broadcast_source else src, cond, how)

    def _unconditional_delete_only(self) -> bool:
        return (
            len(self.matched) == 1
            and self.matched[0].action == "delete"
            and self.matched[0].condition is None
        )

    def _codes(self) -> list[tuple[int, MergeClause]]:
        return list(enumerate(self.clauses))

    def _action(
        self,
        tgt: DataFrame | None,
        src: DataFrame,
        source_present: SparkColumn | None,
        include_inserts: bool,
    ) -> SparkColumn:
        """The index of the first clause that applies to each joined row (COPY / DROP if none)."""
        from pyspark.sql import functions as F

        branches = []
        for code, clause in self._codes():
            cond = F.lit(True) if clause.condition is None else as_column(clause.condition)
            cond = F.coalesce(cond, F.lit(False))
            if clause.when == "matched" and source_present is not None and tgt is not None:
                branches.append((source_present & cond, code))
            elif clause.when == "notMatchedBySource" and source_present is not None:
                branches.append((~source_present & cond, code))
            elif clause.when == "notMatched" and include_inserts:
                branches.append((cond, code))
        result = None
        for when, code in branches:
            result = F.when(when, F.lit(code)) if result is None else result.when(when, code)
        fallback = F.lit(COPY if tgt is not None else DROP)
        return fallback if result is None else result.otherwise(fallback)

    def _project(
        self,
        joined: DataFrame,
        tgt: DataFrame | None,
        src: DataFrame,
        schema: StructType,
        source_present: SparkColumn | None,
        copies: bool = True,
        row_ids: bool = False,
    ) -> DataFrame:
        """Rows written for ``joined``: clause results in table column order, deletes dropped
        (and unchanged target rows too unless ``copies``); ``row_ids`` keeps the target's
        ``FILE_PATH`` and ``ROW_INDEX``."""
        from pyspark.sql import functions as F

        action = self._action(tgt, src, source_present, include_inserts=tgt is None)
        cols = self._values(tgt, src, schema)
        ids = [tgt[c] for c in (FILE_PATH, ROW_INDEX)] if row_ids and tgt is not None else []
        with_action = joined.select(action.alias(_ACTION), *cols, *ids)
        deletes = [code for code, c in self._codes() if c.action == "delete"]
        dropped = [DROP, *deletes] if copies else [DROP, COPY, *deletes]
        kept = with_action.where(~F.col(_ACTION).isin(dropped))
        return kept.drop(_ACTION)

    def _values(
        self,
        tgt: DataFrame | None,
        src: DataFrame,
        schema: StructType,
        updates_only: bool = False,
    ) -> list[SparkColumn]:
        """The table's columns as the clause chosen in ``_ACTION`` sets them (a lateral
        reference: select them with ``_ACTION``). ``updates_only``: the values only matter
        for rows an update clause chose, so a column every update clause assigns does not
        reference the target's current value (Spark then need not read it)."""
        from pyspark.sql import functions as F

        source_cols = {c.lower(): c for c in src.columns if c != _SOURCE_MARK}
        cols = []
        for field in schema.fields:
            spark_type = to_spark_type(field.type)
            if tgt is not None and field.name in tgt.columns:
                current = tgt[f"`{field.name}`"]
            else:
                current = F.lit(None).cast(spark_type)
            value, assigned_by_all = None, True
            for code, clause in self._codes():
                if clause.action == "delete" or (clause.when == "notMatched") != (tgt is None):
                    continue
                new = self._clause_value(clause, field, schema, current, src, source_cols)
                if new is None:
                    assigned_by_all = False
                    continue
                new = new.cast(spark_type)
                test = F.col(_ACTION) == code
                value = F.when(test, new) if value is None else value.when(test, new)
            if value is None:
                column = current
            elif updates_only and assigned_by_all:
                column = value
            else:
                column = value.otherwise(current)
            cols.append(column.alias(field.name))
        return cols

    def _clause_value(
        self,
        clause: MergeClause,
        field: StructField,
        schema: StructType,
        current: SparkColumn,
        src: DataFrame,
        source_cols: dict[str, str],
    ) -> SparkColumn | None:
        """The value ``clause`` gives ``field`` (None: leave it as it is)."""
        if clause.star:
            name = source_cols.get(field.name.lower())
            if name is not None:
                return src[f"`{name}`"]
            if self.evolve:
                return None  # a target-only column keeps its value (null when inserting)
            raise DeltaAnalysisException(
                f"{clause.action}All: the source has no column {field.name!r} "
                f"(source columns: {sorted(source_cols.values())})"
            )
        grouped = resolve_assignments(schema, clause.assignments or {}, f"MERGE {clause.action}")
        assignments = grouped.get(field.name)
        if assignments is None:
            return None
        if clause.action == "insert" and any(path for path, _ in assignments):
            raise DeltaAnalysisException(
                f"MERGE insert: assign whole columns, not nested fields ({field.name})"
            )
        return assigned_value(current, assignments)

    # ------------------------------------------------------------------ metrics

    def _metrics(
        self,
        snapshot: Snapshot,
        touched: Any,
        counts: dict[int, int],
        adds: list[dict[str, Any]],
        removes: list[dict[str, Any]],
        scan_ms: int,
        start: float,
    ) -> dict[str, Any]:
        def rows(when: str, action: str) -> int:
            return sum(
                counts.get(code, 0)
                for code, c in self._codes()
                if c.when == when and c.action == action
            )

        matched_updated = rows("matched", "update")
        matched_deleted = rows("matched", "delete")
        by_source_updated = rows("notMatchedBySource", "update")
        by_source_deleted = rows("notMatchedBySource", "delete")
        updated = matched_updated + by_source_updated
        deleted = matched_deleted + by_source_deleted
        written = num_records(adds)
        target_rows = live_rows(touched)
        if target_rows is None:
            target_rows = read_files(self.spark, snapshot, touched).count()
        copied = target_rows - deleted - updated
        inserted = written - (target_rows - deleted)
        return {
            "numTargetRowsInserted": inserted,
            "numTargetRowsUpdated": updated,
            "numTargetRowsMatchedUpdated": matched_updated,
            "numTargetRowsNotMatchedBySourceUpdated": by_source_updated,
            "numTargetRowsDeleted": deleted,
            "numTargetRowsMatchedDeleted": matched_deleted,
            "numTargetRowsNotMatchedBySourceDeleted": by_source_deleted,
            "numTargetRowsCopied": copied,
            "numOutputRows": written,
            "numTargetFilesAdded": len(adds),
            "numTargetFilesRemoved": len(removes),
            "numTargetBytesAdded": sum(int(a.get("size") or 0) for a in adds),
            "numTargetBytesRemoved": sum(int(r.get("size") or 0) for r in removes),
            "numTargetChangeFilesAdded": 0,
            "scanTimeMs": scan_ms,
            "rewriteTimeMs": elapsed_ms(start) - scan_ms,
        }


def _key_predicate(keys: list[tuple[str, Any]], summary: _SourceSummary) -> Expr | None:
    """The source's join keys as a target predicate: ``k IN (...)`` or a range."""
    if not keys or summary.rows == 0:
        return None
    terms: list[Expr] = []
    for i, (name, _) in enumerate(keys):
        column = Column((name,))
        if summary.mins[i] is None:
            return In(column, ())  # only null keys: no target row can match
        if summary.sets is not None:
            terms.append(In(column, summary.sets[i]))
        else:
            terms.append(
                And(
                    Comparison(">=", column, Literal(summary.mins[i])),
                    Comparison("<=", column, Literal(summary.maxs[i])),
                )
            )
    return and_all(terms)


def _broadcastable(spark: SparkSession, df: DataFrame) -> bool:
    """Whether Spark's size estimate of ``df`` is within its broadcast-join threshold,
    the test Spark applies before broadcasting either side of a join."""
    threshold = int(sql_conf(spark).autoBroadcastJoinThreshold())
    size = java_frame(df).queryExecution().optimizedPlan().stats().sizeInBytes()
    return 0 <= int(size) <= threshold


def _drop_checkpoint(df: DataFrame) -> None:
    """Free the blocks of a ``localCheckpoint``ed DataFrame now rather than when the
    driver's garbage collector gets to its RDD."""
    java_frame(df).queryExecution().analyzed().rdd().unpersist(False)


def _union(frames: list[DataFrame]) -> DataFrame:
    """``frames`` (at least one) one after another, columns matched by name."""
    out = frames[0]
    for other in frames[1:]:
        out = out.unionByName(other)
    return out


def _and_columns(columns: list[SparkColumn]) -> SparkColumn:
    """``columns[0] AND columns[1] AND ...`` (at least one column)."""
    result = columns[0]
    for c in columns[1:]:
        result = result & c
    return result


def _qualifiers(df: DataFrame) -> set[str]:
    """The relation names (aliases) ``df``'s columns can be qualified with, lower-cased."""
    output = java_frame(df).queryExecution().analyzed().output()
    names = set()
    for i in range(output.size()):
        qualifier = output.apply(i).qualifier()
        names.update(qualifier.apply(j).lower() for j in range(qualifier.size()))
    return names


def _ordered(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"numSourceRows": metrics["numSourceRows"]} | {
        k: v for k, v in metrics.items() if k != "numSourceRows"
    }


def _type_family(dt: Any) -> str:
    from delta_pyspark.core.schema import type_name

    return type_name(dt).split("(")[0]
