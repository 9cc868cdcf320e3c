"""Deletion vectors: mark the changed rows deleted instead of rewriting files; updated
rows are written from the kept phase 1 pairs (or, for an UPDATE SET *, from the source
rows that update them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.row_deletion import dv_metrics
from delta_pyspark.spark.commands.conditions import as_column
from delta_pyspark.spark.commands.merge.common import _ACTION, _SOURCE_MARK
from delta_pyspark.spark.commands.merge.matching import _Matches
from delta_pyspark.spark.commands.merge.source import _rows_by_mark
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class _DeletionVectors(_MergeState):
    """The deletion-vector write."""

    def _delete_changed_rows(
        self,
        txn: Transaction,
        snapshot: Snapshot,
        schema: StructType,
        src: DataFrame,
        found: _Matches,
        fresh: list[DataFrame],
    ) -> list[Any]:
        """Mark the rows a clause changed deleted (no file is rewritten); the new versions
        of updated rows go to ``fresh``. The deletion vectors' changes, for the commit."""
        cond = as_column(self.condition)
        present = src[_SOURCE_MARK].isNotNull()
        deletes = txn.delete_rows(*found.changed)
        updates = any(c.action == "update" for c in self.matched + self.by_source)
        if updates and found.changed[0].num_rows and not found.upserted:
            if found.has_new_values:  # no second scan
                fresh.append(self._updated_rows(found, schema, src))
            else:
                tgt = self._target(snapshot, found.changed[0])
                joined = self._join(tgt, src, cond, "left_outer" if self.by_source else "inner")
                fresh.append(self._project(joined, tgt, src, schema, present, copies=False))
        return deletes

    def _updated_rows(self, found: _Matches, schema: StructType, src: DataFrame) -> DataFrame:
        """The new versions of updated target rows, from the kept phase 1 pairs or, for an
        UPDATE SET *, from the source rows phase 1 found updating them."""
        from pyspark.sql import functions as F

        if found.updated_marks is not None:
            return self._updates_of_source_rows(src, schema, found.updated_marks)
        codes = [i for i, c in self._codes() if c.action == "update"]
        assert found.pairs is not None  # new values without source ids: kept in the pairs
        updated = found.pairs.where(F.col(_ACTION).isin(codes))
        tracking = []
        if self.preserved is not None:  # the id kept, the version the commit's
            id_col, version_col = self.preserved
            tracking = [F.col(f"`{id_col}`"), F.lit(None).cast("long").alias(version_col)]
        return updated.select(*[f"`{f.name}`" for f in schema.fields], *tracking)

    def _updates_of_source_rows(
        self, src: DataFrame, schema: StructType, marks: np.ndarray | None
    ) -> DataFrame:
        """The rows an UPDATE SET * writes, from the source rows of ids ``marks`` (every
        source row when None: ``_Matches.upserted``) (``_updates_from_source``): the
        source's values in table order, cast to the table's types, generated columns the
        source lacks computed."""
        from pyspark.sql import functions as F

        code, clause = next((i, c) for i, c in self._codes() if c.action == "update")
        rows = src if marks is None else _rows_by_mark(src, marks, present=True)
        source_cols = {c.lower(): c for c in src.columns if c != _SOURCE_MARK}
        values = []
        for field in schema.fields:
            empty = F.lit(None).cast(to_spark_type(field.type))
            new = self._clause_value(clause, field, schema, empty, src, source_cols)
            value = empty if new is None else new.cast(to_spark_type(field.type))
            values.append(value.alias(field.name))
        chosen = rows.select(F.lit(code).alias(_ACTION), *values)
        return self._generated(chosen, schema, src).drop(_ACTION)


def _deletion_vector_metrics(metrics: dict[str, Any], deletes: list[Any]) -> None:
    """A deletion-vector merge copies no rows; its vectors' metrics join the merge's."""
    metrics["numTargetRowsCopied"] = 0
    metrics["numTargetRowsInserted"] = metrics["numOutputRows"] - (metrics["numTargetRowsUpdated"])
    metrics |= {k.replace("num", "numTarget", 1): v for k, v in dv_metrics(deletes).items()}
