"""The merge's operation metrics, as delta-spark reports them."""

from __future__ import annotations

from typing import Any

from delta_pyspark.core.protocol.actions import AddFile, RemoveFile
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.commands.rewrite import elapsed_ms, live_rows, num_records
from delta_pyspark.spark.files.scan import read_files


class _Metrics(_MergeState):
    """Operation metrics."""

    def _metrics(
        self,
        snapshot: Snapshot,
        touched: Any,
        counts: dict[int, int],
        adds: list[AddFile],
        removes: list[RemoveFile],
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
            # delta-spark records these on every merge (a deletion-vector merge sets them)
            "numTargetDeletionVectorsAdded": 0,
            "numTargetDeletionVectorsRemoved": sum(1 for r in removes if r.get("deletionVector")),
            "numTargetDeletionVectorsUpdated": 0,
            "materializeSourceTimeMs": getattr(self, "_materialize_source_ms", 0),
            "scanTimeMs": scan_ms,
            "rewriteTimeMs": elapsed_ms(start) - scan_ms,
        }


def _ordered(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"numSourceRows": metrics["numSourceRows"]} | {
        k: v for k, v in metrics.items() if k != "numSourceRows"
    }
