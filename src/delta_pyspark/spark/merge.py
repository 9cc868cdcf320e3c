"""MERGE INTO: upsert a source DataFrame into the table in one atomic commit.

Execution (copy-on-write), in the spirit of delta-spark's:

1. The source is materialised once (persisted), so a non-deterministic source
   yields the same rows to every step and the commit.
2. Candidate target files: the merge condition's target-only conjuncts plus the
   range (or set) of source join keys prune files by partition values and stats.
   The same predicate is the transaction's read predicate, so merges on disjoint
   key ranges do not conflict.
3. Find touched files: join candidates with the source; per target row the first
   clause that applies. One aggregated job gives the files to rewrite, the
   per-clause row counts and whether a target row matched several source rows.
4. Rewrite only touched files (target left-outer-join source, clause by clause)
   and, for insert clauses, append the source rows that matched no target row;
   both go to one Spark write and one commit.

Not-matched-by-source clauses make every target row a candidate.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from delta_pyspark.core.actions import remove_actions
from delta_pyspark.core.delta_log import DeltaLog
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
    parse_predicate,
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
from delta_pyspark.spark.conditions import (
    as_column,
    assigned_value,
    condition_sql,
    resolve_assignments,
)
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
COPY, DROP = -1, -2
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
        return self._with(MergeClause("matched", "update", condition, _required(set, "set")))

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("matched", "update", condition, None, star=True))

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("matched", "delete", condition))

    def whenNotMatchedInsert(
        self, condition: Any = None, values: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        return self._with(
            MergeClause("notMatched", "insert", condition, _required(values, "values"))
        )

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("notMatched", "insert", condition, None, star=True))

    def whenNotMatchedBySourceUpdate(
        self, condition: Any = None, set: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        return self._with(
            MergeClause("notMatchedBySource", "update", condition, _required(set, "set"))
        )

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


def _required(value: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    if not value:
        raise DeltaAnalysisException(f"this merge clause needs a non-empty {name}= mapping")
    return value


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

    # ------------------------------------------------------------------ run

    def run(self) -> dict[str, Any]:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        start = time.monotonic()
        snapshot = self.log.snapshot()
        schema = self._target_schema(snapshot.schema)
        src = self.source.withColumn(_SOURCE_MARK, F.lit(True))
        src = src.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            num_source = src.count()
            txn = Transaction(self.log, snapshot)
            candidates = self._candidates(txn, snapshot, src, num_source)
            txn.read_files(candidates)
            if schema != snapshot.schema:
                txn.update_metadata(
                    snapshot.metadata.with_changes(schema_string=schema_to_string(schema))
                )
                schema = parse_schema_string(txn.metadata.schema_string)  # mapped names
            metrics = self._execute(txn, snapshot, schema, src, candidates, start)
            metrics["numSourceRows"] = num_source
        finally:
            src.unpersist()
        metrics["executionTimeMs"] = elapsed_ms(start)
        if txn.has_changes:
            txn.commit("MERGE", self._parameters(), _ordered(metrics), user_metadata(self.spark))
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

    def _candidates(
        self, txn: Transaction, snapshot: Snapshot, src: DataFrame, num_source: int
    ) -> Any:
        """Files that may hold a matching target row; records the read predicate."""
        if self.by_source:
            txn.read_whole_table()  # every unmatched target row may change
            return snapshot.files
        plan = self._plan(snapshot, src)
        parts = [plan.target_predicate] if plan.target_predicate is not None else []
        key_predicate = self._key_predicate(snapshot, src, plan, num_source)
        if key_predicate is not None:
            parts.append(key_predicate)
        predicate = and_all(parts)
        if predicate is None:
            txn.read_whole_table()
            return snapshot.files
        txn.read_predicate(predicate, session_time_zone(self.spark))
        return prune_files(snapshot, predicate, session_time_zone(self.spark))

    def _key_predicate(
        self, snapshot: Snapshot, src: DataFrame, plan: _Plan, num_source: int
    ) -> Expr | None:
        """The source's join keys as a target predicate: ``k IN (...)`` or a range."""
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
        if not usable or num_source == 0:
            return None
        aggs = []
        for i, (_, col) in enumerate(usable):
            aggs += [F.min(col).alias(f"min{i}"), F.max(col).alias(f"max{i}")]
            if num_source <= _MAX_KEY_SET:
                aggs.append(F.collect_set(col).alias(f"set{i}"))
        row = src.agg(*aggs).first()
        terms: list[Expr] = []
        for i, (name, _) in enumerate(usable):
            column = Column((name,))
            if row[f"min{i}"] is None:
                return In(column, ())  # only null keys: no target row can match
            if num_source <= _MAX_KEY_SET:
                terms.append(In(column, tuple(sorted(row[f"set{i}"]))))
            else:
                terms.append(
                    And(
                        Comparison(">=", column, Literal(row[f"min{i}"])),
                        Comparison("<=", column, Literal(row[f"max{i}"])),
                    )
                )
        return and_all(terms)

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
        start: float,
    ) -> dict[str, Any]:
        from pyspark.sql import functions as F

        cond = as_column(self.condition)
        dv = deletion_vectors_enabled(snapshot)
        counts: dict[int, int] = {}
        matched_uris: set[str] = set()
        touched_uris: set[str] = set()
        changed = (candidates.slice(0, 0), [])
        multiple = False
        if (self.matched or self.by_source) and candidates.num_rows:
            tgt = self._target(snapshot, candidates, with_row_ids=True)
            how = "left_outer" if self.by_source else "inner"
            pairs = tgt.join(src, cond, how)
            present = src[_SOURCE_MARK].isNotNull()
            action = self._action(tgt, src, present, include_inserts=False)
            per_row = pairs.groupBy(FILE_PATH, ROW_INDEX).agg(
                F.count(src[_SOURCE_MARK]).alias("n"), F.min(action).alias("a")
            )
            aggs = [F.count(F.lit(1)).alias("rows"), F.max("n").alias("maxn")]
            if dv:  # positions of the rows to mark deleted
                changed_row = F.when(F.col("a") != COPY, F.col(ROW_INDEX))
                aggs.append(F.collect_list(changed_row).alias("ids"))
            summary = (
                per_row.groupBy(FILE_PATH, "a", (F.col("n") > 0).alias("m")).agg(*aggs).toArrow()
            )
            for r in summary.select([FILE_PATH, "a", "m", "rows", "maxn"]).to_pylist():
                counts[r["a"]] = counts.get(r["a"], 0) + int(r["rows"])
                multiple = multiple or int(r["maxn"]) > 1
                if r["m"]:
                    matched_uris.add(r[FILE_PATH])
                if r["a"] != COPY or (self.inserts and r["m"]):
                    touched_uris.add(r[FILE_PATH])
            if multiple and self.matched and not self._unconditional_delete_only():
                raise DeltaUnsupportedOperationException(
                    "MERGE cannot decide what to do: several source rows matched the same target "
                    "row and a WHEN MATCHED clause would update or delete it. Deduplicate the "
                    "source on the merge keys (or tighten the merge condition) so each target "
                    "row matches at most one source row."
                )
            if dv:
                ids = summary.column("ids").combine_chunks()
                uris = pc.take(summary.column(FILE_PATH), pc.list_parent_indices(ids))
                changed = rows_by_file(snapshot, candidates, uris, pc.list_flatten(ids))
        scan_ms = elapsed_ms(start)
        outputs = []
        if dv:
            touched = candidates.slice(0, 0)  # no file is rewritten
            deletes = txn.delete_rows(*changed)
            updates = any(c.action == "update" for c in self.matched + self.by_source)
            if updates and changed[0].num_rows:
                tgt = self._target(snapshot, changed[0])
                joined = tgt.join(src, cond, "left_outer" if self.by_source else "inner")
                present = src[_SOURCE_MARK].isNotNull()
                outputs.append(self._project(joined, tgt, src, schema, present, copies=False))
        else:
            deletes = []
            touched = files_by_uri(snapshot, candidates, sorted(touched_uris))
        if touched.num_rows:
            dedupe = multiple and not self.matched
            tgt = self._target(snapshot, touched, with_row_ids=dedupe)
            joined = tgt.join(src, cond, "left_outer")
            rows = self._project(joined, tgt, src, schema, src[_SOURCE_MARK].isNotNull())
            if dedupe:  # several matches, all copied unchanged: keep each target row once
                rows = rows.dropDuplicates([FILE_PATH, ROW_INDEX]).drop(FILE_PATH, ROW_INDEX)
            outputs.append(rows)
        if self.inserts:
            new = src
            if matched_uris or (not self.matched and not self.by_source):
                files = candidates
                if self.matched or self.by_source:  # only files with matches can stop inserts
                    files = files_by_uri(snapshot, candidates, sorted(matched_uris))
                if files.num_rows:
                    new = src.join(self._target(snapshot, files), cond, "left_anti")
            outputs.append(self._project(new, None, src, schema, None))
        adds: list[dict[str, Any]] = []
        if outputs:
            out = outputs[0]
            for other in outputs[1:]:
                out = out.unionByName(other)
            adds = write_rows(out, snapshot, schema)
        rewritten = remove_actions(touched)
        txn.remove_files(rewritten)
        removes = rewritten + [d.remove for d in deletes if d.add is None]
        txn.add_files(adds)
        metrics = self._metrics(snapshot, touched, counts, adds, removes, scan_ms, start)
        if dv:
            metrics["numTargetRowsCopied"] = 0
            metrics["numTargetRowsInserted"] = (
                metrics["numOutputRows"] - (metrics["numTargetRowsUpdated"])
            )
            metrics |= {k.replace("num", "numTarget", 1): v for k, v in dv_metrics(deletes).items()}
        return metrics

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
    ) -> DataFrame:
        """Rows written for ``joined``: clause results in table column order, deletes dropped
        (and unchanged target rows too unless ``copies``)."""
        from pyspark.sql import functions as F

        action = self._action(tgt, src, source_present, include_inserts=tgt is None)
        source_cols = {c.lower(): c for c in src.columns if c != _SOURCE_MARK}
        cols = []
        for field in schema.fields:
            spark_type = to_spark_type(field.type)
            if tgt is not None and field.name in tgt.columns:
                current = tgt[f"`{field.name}`"]
            else:
                current = F.lit(None).cast(spark_type)
            value = None
            for code, clause in self._codes():
                if clause.action == "delete" or (clause.when == "notMatched") != (tgt is None):
                    continue
                new = self._clause_value(clause, field, schema, current, src, source_cols)
                if new is None:
                    continue
                new = new.cast(spark_type)
                test = F.col(_ACTION) == code
                value = F.when(test, new) if value is None else value.when(test, new)
            column = current if value is None else value.otherwise(current)
            cols.append(column.alias(field.name))
        row_ids = [tgt[c] for c in (FILE_PATH, ROW_INDEX)] if _has_row_ids(tgt) else []
        with_action = joined.select(action.alias(_ACTION), *cols, *row_ids)
        deletes = [code for code, c in self._codes() if c.action == "delete"]
        dropped = [DROP, *deletes] if copies else [DROP, COPY, *deletes]
        kept = with_action.where(~F.col(_ACTION).isin(dropped))
        return kept.drop(_ACTION)

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


def _qualifiers(df: DataFrame) -> set[str]:
    """The relation names (aliases) ``df``'s columns can be qualified with, lower-cased."""
    try:
        output = df._jdf.queryExecution().analyzed().output()
        names = set()
        for i in range(output.size()):
            qualifier = output.apply(i).qualifier()
            names.update(qualifier.apply(j).lower() for j in range(qualifier.size()))
        return names
    except Exception:  # not a classic (py4j) DataFrame: fall back to names alone
        return set()


def _has_row_ids(df: DataFrame | None) -> bool:
    return df is not None and FILE_PATH in df.columns


def _ordered(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"numSourceRows": metrics["numSourceRows"]} | {
        k: v for k, v in metrics.items() if k != "numSourceRows"
    }


def _type_family(dt: Any) -> str:
    from delta_pyspark.core.schema import type_name

    return type_name(dt).split("(")[0]
