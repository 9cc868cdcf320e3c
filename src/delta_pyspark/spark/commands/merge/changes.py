"""Change data feed output of a merge: pre/post images, deletes and inserts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_pyspark.core.changes.change_data import CHANGE_TYPE, DELETE, INSERT, POSTIMAGE, PREIMAGE
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.spark.commands.change_data import with_change_type
from delta_pyspark.spark.commands.conditions import as_column
from delta_pyspark.spark.commands.merge.common import _ACTION, _BEFORE, _SOURCE_MARK, _union
from delta_pyspark.spark.commands.merge.matching import _Matches
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.commands.rewrite import files_by_uri
from delta_pyspark.spark.files.scan import FILE_PATH, ROW_INDEX
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class _Changes(_MergeState):
    """The merge's change data."""

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
            rows = self._generated(rows, schema, src)
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
            frames.append(
                with_change_type(
                    self._project(new, None, src, schema, None, tracking=False), INSERT
                )
            )
        return _union(frames)
