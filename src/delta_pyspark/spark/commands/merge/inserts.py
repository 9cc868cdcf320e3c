"""Insert clauses: the source rows that match no target row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.spark.commands.conditions import as_column
from delta_pyspark.spark.commands.merge.common import (
    _MATCHED_ID,
    _SMALL_SOURCE_FACTOR,
    _SOURCE_MARK,
)
from delta_pyspark.spark.commands.merge.matching import _Matches
from delta_pyspark.spark.commands.merge.source import _rows_by_mark
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.commands.rewrite import files_by_uri, live_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class _Inserts(_MergeState):
    """Finding the unmatched source rows."""

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

        if found.matched_marks is not None:  # phase 1 saw every match and kept their ids
            return _rows_by_mark(src, found.matched_marks, present=False)
        if found.pairs is not None:  # phase 1 saw every match: drop the ids it recorded
            ids = found.pairs.select(F.col(_SOURCE_MARK).alias(_MATCHED_ID))
            if self.broadcast_source:  # they are fewer than the source's rows
                ids = ids.hint("broadcast")
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
