"""Copy-on-write by position: keep a rewritten file's unchanged rows by leaving out the
changed rows' positions, for sources much smaller than the candidate files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.spark.columns.row_tracking import read_preserving
from delta_pyspark.spark.commands.merge.common import (
    _MAX_COLLECTED_SOURCE_ROWS,
    _SMALL_SOURCE_FACTOR,
)
from delta_pyspark.spark.commands.merge.matching import _Matches
from delta_pyspark.spark.commands.merge.source import _SourceSummary
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.commands.rewrite import live_rows
from delta_pyspark.spark.files.scan import file_uris

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class _Positional(_MergeState):
    """Choosing and reading the positional rewrite."""

    def _keeps_rows_by_position(
        self,
        snapshot: Snapshot,
        schema: StructType,
        candidates: Any,
        source: _SourceSummary,
        src: DataFrame,
    ) -> bool:
        """Whether a copy-on-write merge reads the unchanged rows of the files it rewrites
        by leaving out the changed rows' positions (``_unchanged_rows``) instead of joining
        every row with the source. That needs phase 1's matches (no not-matched-by-source
        clauses), an unchanged schema, and the changed positions on the driver, so a
        bounded source. When phase 1 carries no new values (no update clause, or an UPDATE
        SET * written from its source rows) it costs no more than the join path's phase 1
        and the rewrite broadcasts nothing; else it pays when the candidate files hold many
        more rows than the source (measured: 10M target rows, 200k source rows, 12% faster;
        616k and 200k, 4% slower)."""
        if self.by_source or schema != snapshot.schema:
            return False
        if source.rows > _MAX_COLLECTED_SOURCE_ROWS:
            return False
        updates = any(c.action == "update" for c in self.matched)
        if not updates or self._updates_from_source(schema, src):
            return True
        target_rows = live_rows(candidates)
        return target_rows is not None and target_rows > _SMALL_SOURCE_FACTOR * source.rows

    def _unchanged_rows(self, snapshot: Snapshot, touched: Any, found: _Matches) -> DataFrame:
        """The rows of the ``touched`` files no clause changed: the files read without the
        changed rows' positions, as if deleted (no join of every row with the source)."""
        changed = dict(zip(file_uris(snapshot, found.changed[0]), found.changed[1], strict=True))
        none = np.empty(0, np.int64)
        drops = [changed.get(uri, none) for uri in file_uris(snapshot, touched)]
        return read_preserving(self.spark, snapshot, touched, drop_rows=drops)
