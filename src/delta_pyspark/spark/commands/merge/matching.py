"""Phase 1 of a merge: join the candidate files with the source and find the touched
files, per-clause counts and (kept) matched pairs (``_Matches``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.protocol.generated_columns import generation_expressions
from delta_pyspark.core.protocol.identity_columns import is_identity
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.spark.columns.row_tracking import read_preserving
from delta_pyspark.spark.commands.conditions import as_column
from delta_pyspark.spark.commands.merge.common import (
    _ACTION,
    _SOURCE_MARK,
    _TARGET_MARK,
    COPY,
    _several_matches,
)
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.commands.rewrite import group_by_number, rows_by_file
from delta_pyspark.spark.files.scan import FILE_PATH, ROW_INDEX
from delta_pyspark.spark.jvm.plans import unpersist_checkpoint

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame


@dataclass
class _Matches:
    """Phase 1's findings: rows per clause, files with matches / to rewrite, and the
    kept matched pairs (source ids, and with ``rows`` the joined rows themselves)."""

    counts: dict[int, int]
    matched_uris: set[str]
    touched_uris: set[str]
    multiple: bool
    changed: tuple[Any, list[Any]]  # deletion vectors: files and their changed row indexes
    pairs: DataFrame | None = None
    rows: bool = False  # ``pairs`` also holds the updated rows' new values
    # the ids (``_SOURCE_MARK``) of the source rows that matched, sorted, when collected
    matched_marks: np.ndarray | None = None
    # the ids of the source rows whose values an UPDATE SET * writes, sorted, each once:
    # the updated rows are those source rows (``_updates_from_source``)
    updated_marks: np.ndarray | None = None
    # the updated rows and the inserted ones are all the source's rows, each once, written
    # alike: the new rows are the source's (``_upserts_every_source_row``)
    upserted: bool = False

    @property
    def has_new_values(self) -> bool:
        """Whether the updated rows can be written without reading the target again."""
        return self.rows or self.updated_marks is not None


class _Matching(_MergeState):
    """Reading the target, joining it with the source, finding matches."""

    def _target(self, snapshot: Snapshot, files: Any, with_row_ids: bool = False) -> DataFrame:
        from pyspark.sql import functions as F

        # with row tracking's columns (stable ids and versions) after the table's
        df = read_preserving(self.spark, snapshot, files, with_row_ids=with_row_ids)
        df = df.withColumn(_TARGET_MARK, F.lit(True))
        return df.alias(self.alias) if self.alias else df

    def _join(self, tgt: DataFrame, src: DataFrame, cond: SparkColumn, how: str) -> DataFrame:
        """``tgt`` joined with the source, broadcasting the source when it measured within
        Spark's threshold: Spark would broadcast whichever side its estimates call smaller,
        and a target scan's estimate (compressed bytes) is far below its size in memory."""
        return tgt.join(src.hint("broadcast") if self.broadcast_source else src, cond, how)

    def _find_matches(
        self,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        candidates: Any,
        positions: bool,
        unique: bool | None,
        cached: list[DataFrame],
        from_source: bool = True,
    ) -> _Matches:
        """Phase 1: join the candidate files with the source; one aggregated job gives the
        files to rewrite, the per-clause row counts and whether a target row matched
        several source rows (skipped, with one aggregation level less, when the source's
        join keys are unique). Without not-matched-by-source clauses, the insert step needs
        the ids of the source rows that matched: collected by the same job (``_summarise``)
        when ``unique`` is None, else read from the kept matched pairs. ``positions``
        also collects the changed rows' positions and keeps the updated rows' new values
        in the pairs, to be written straight from them, or (``from_source``, for an UPDATE
        SET * whose source rows each update one target row) collects the updating source
        rows' ids instead, which keeps the source's broadcast to the columns the join and
        the clauses' conditions read. ``unique`` None (not checked): the
        pairs are taken for distinct target rows and the matched rows' positions collected
        too (one aggregation level less than counting the pairs per target row), and if
        one repeats phase 1 runs again as for a source with repeated keys."""
        from pyspark.sql import functions as F

        found = _Matches({}, set(), set(), False, (candidates.slice(0, 0), []))
        if not (self.matched or self.by_source) or not candidates.num_rows:
            return found
        tgt = self._target(snapshot, candidates, with_row_ids=True)
        how = "left_outer" if self.by_source else "inner"
        joined = self._join(tgt, src, as_column(self.condition), how)
        present = src[_SOURCE_MARK].isNotNull()
        action = self._action(tgt, src, present, include_inserts=False)
        thin = False
        if how == "inner":
            updates = any(c.action == "update" for c in self.matched)
            thin = positions and updates and from_source and unique is None
            thin = thin and self._updates_from_source(schema, src)
            found.rows = positions and updates and not thin
            # what the summary and the inserts need; with positions also the updated
            # rows' new values (only the target columns those read are scanned)
            values = self._values(tgt, src, schema, updates_only=True) if found.rows else []
            if found.rows and self.preserved is not None:  # updated rows keep their ids
                values.append(tgt[f"`{self.preserved[0]}`"])
            joined = joined.select(
                tgt[FILE_PATH], tgt[ROW_INDEX], src[_SOURCE_MARK], action.alias(_ACTION), *values
            )
            if found.rows:
                joined = self._generated(joined, schema, src)
            action = F.col(_ACTION)
            if found.rows or (self.inserts and unique is False):
                # Kept as a lazy local checkpoint: the summary job's first stage computes
                # and stores the pairs as it aggregates them. A persisted (cached) DataFrame
                # was built by a job of its own first, then read again (~0.1 s of 2 s).
                joined = joined.localCheckpoint(eager=False)
                cached.append(joined)
                found.pairs = joined
        marks = how == "inner" and unique is None and (bool(self.inserts) or thin)
        summary = _summarise(joined, present, action, unique, positions, marks)
        if unique is None and _repeats(summary):  # a target row matched twice
            if found.pairs is not None:
                cached.remove(found.pairs)
                unpersist_checkpoint(found.pairs)
            return self._find_matches(snapshot, schema, src, candidates, positions, False, cached)
        self._record(found, summary)
        if found.multiple and self.matched and not self._unconditional_delete_only():
            raise _several_matches()
        if positions:
            uris, ids = _positions(summary.filter(pc.not_equal(summary.column("a"), COPY)))
            found.changed = rows_by_file(snapshot, candidates, uris, ids)
        if marks and self.inserts:
            found.matched_marks = _distinct(pc.list_flatten(summary.column("marks")).to_numpy())
        if thin:
            code = next(i for i, c in self._codes() if c.action == "update")
            updating = summary.filter(pc.equal(summary.column("a"), code)).column("marks")
            updated = np.sort(pc.list_flatten(updating).to_numpy())
            if (updated[1:] == updated[:-1]).any():  # a source row updates several rows
                return self._find_matches(
                    snapshot, schema, src, candidates, positions, unique, cached, False
                )
            found.updated_marks = updated
            found.upserted = self._upserts_every_source_row(schema)
        return found

    def _record(self, found: _Matches, summary: pa.Table) -> None:
        """Phase 1's counts per clause, whether a row matched several times, and the files
        with matches and the files to rewrite, from ``summary`` into ``found``."""
        for r in summary.select([FILE_PATH, "a", "m", "rows", "maxn"]).to_pylist():
            found.counts[r["a"]] = found.counts.get(r["a"], 0) + int(r["rows"])
            found.multiple = found.multiple or int(r["maxn"]) > 1
            if r["m"]:
                found.matched_uris.add(r[FILE_PATH])
            if r["a"] != COPY or (self.inserts and r["m"]):
                found.touched_uris.add(r[FILE_PATH])

    def _updates_from_source(self, schema: StructType, src: DataFrame) -> bool:
        """Whether an updated row's new values come from its source row alone: one update
        clause, SET *, the source holding every table column (or the column generated),
        and no row ids to keep from the target row."""
        updates = [c for c in self.matched if c.action == "update"]
        if self.preserved is not None or len(updates) != 1 or not updates[0].star:
            return False
        names = {c.lower() for c in src.columns if c != _SOURCE_MARK}
        generated = generation_expressions(schema, self.protocol)
        return all(f.name.lower() in names or f.name in generated for f in schema.fields)

    def _upserts_every_source_row(self, schema: StructType) -> bool:
        """Whether, with an UPDATE SET * written from its source rows, each source row is
        written once and alike whether it updates or is inserted: the update is the only
        matched clause and unconditional, one unconditional INSERT * follows, and no column
        has a value an insert would generate (generated or identity columns)."""
        if len(self.matched) != 1 or self.matched[0].condition is not None:
            return False
        if len(self.inserts) != 1 or self.inserts[0].condition is not None:
            return False
        if not self.inserts[0].star or generation_expressions(schema, self.protocol):
            return False
        return not any(is_identity(f) for f in schema.fields)

    def _unconditional_delete_only(self) -> bool:
        return (
            len(self.matched) == 1
            and self.matched[0].action == "delete"
            and self.matched[0].condition is None
        )


def _summarise(
    joined: DataFrame,
    present: SparkColumn,
    action: SparkColumn,
    unique: bool | None,
    positions: bool,
    marks: bool,
) -> pa.Table:
    """Phase 1's aggregated job: per file, clause and matched or not, the target rows, the
    most source rows one matched, the positions of the rows a clause changes (with
    ``positions``) and of all matched rows (when ``unique`` is None), and with ``marks``
    the ids of the source rows matched (``unique`` None: ``joined`` holds the pairs)."""
    from pyspark.sql import functions as F

    if unique is not False:  # one source row per matched target row: the pairs are the rows
        rows = joined.select(
            F.col(FILE_PATH),
            F.col(ROW_INDEX),
            F.when(present, F.lit(1)).otherwise(F.lit(0)).alias("n"),
            action.alias("a"),
            *([F.col(_SOURCE_MARK)] if marks else []),
        )
    else:
        rows = joined.groupBy(FILE_PATH, ROW_INDEX).agg(
            F.count(_SOURCE_MARK).alias("n"), F.min(action).alias("a")
        )
    aggs = [F.count(F.lit(1)).alias("rows"), F.max("n").alias("maxn")]
    if positions or unique is None:
        kept = F.col("n") > 0 if unique is None else F.lit(False)
        if positions:
            kept = kept | (F.col("a") != COPY)
        aggs.append(F.collect_list(F.when(kept, F.col(ROW_INDEX))).alias("ids"))
    if marks:
        aggs.append(F.collect_list(F.col(_SOURCE_MARK)).alias("marks"))
    return rows.groupBy(FILE_PATH, "a", (F.col("n") > 0).alias("m")).agg(*aggs).toArrow()


def _positions(summary: pa.Table) -> tuple[pa.Array, pa.Array]:
    """(file URI, row position) of each position the ``ids`` lists of ``summary`` hold."""
    ids = summary.column("ids").combine_chunks()
    return pc.take(summary.column(FILE_PATH), pc.list_parent_indices(ids)), pc.list_flatten(ids)


def _repeats(summary: pa.Table) -> bool:
    """Whether a position repeats among the matched rows' (one file's rows matched by
    several source rows)."""
    matched = summary.filter(summary.column("m"))
    ids = matched.column("ids").combine_chunks()
    files = pc.dictionary_encode(matched.column(FILE_PATH)).combine_chunks().indices
    numbers = files.take(pc.list_parent_indices(ids)).to_numpy()
    rows = pc.list_flatten(ids).to_numpy()
    return any(len(_distinct(g)) < len(g) for g in group_by_number(numbers, rows))


def _distinct(values: np.ndarray) -> np.ndarray:
    """``values`` sorted, each once: numpy 2's ``unique`` hashes, 25x slower on 100k ids."""
    ordered = np.sort(values)
    first = np.ones(len(ordered), bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return ordered[first]
