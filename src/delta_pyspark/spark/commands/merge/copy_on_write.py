"""Copy-on-write by join: rewrite the touched files by joining every row with the source."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.spark.commands.conditions import as_column
from delta_pyspark.spark.commands.merge.common import _SOURCE_MARK
from delta_pyspark.spark.commands.merge.matching import _Matches
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.files.scan import FILE_PATH, ROW_INDEX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class _CopyOnWrite(_MergeState):
    """The join path of a copy-on-write rewrite."""

    def _copied_by_join(
        self,
        snapshot: Snapshot,
        touched: Any,
        src: DataFrame,
        schema: StructType,
        found: _Matches,
    ) -> DataFrame:
        """The rows written for the ``touched`` files: every row left-outer-joined with the
        source and projected through the clauses (unchanged rows copied)."""
        cond = as_column(self.condition)
        present = src[_SOURCE_MARK].isNotNull()
        dedupe = found.multiple and not self.matched
        tgt = self._target(snapshot, touched, with_row_ids=dedupe)
        joined = self._join(tgt, src, cond, "left_outer")
        rows = self._project(joined, tgt, src, schema, present, row_ids=dedupe)
        if dedupe:  # several matches, all copied unchanged: keep each target row once
            rows = rows.dropDuplicates([FILE_PATH, ROW_INDEX]).drop(FILE_PATH, ROW_INDEX)
        return rows
