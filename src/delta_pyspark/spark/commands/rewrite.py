"""Find the files (and rows) DML affects, then replace them.

Shared by DELETE, UPDATE, MERGE and ``replaceWhere``. Files are chosen in two
steps: the log's partition values and stats skip files that cannot hold an
affected row, then a scan of the remaining candidates (only the columns the
condition needs) finds the files that actually do. Copy-on-write rewrites only
those; with deletion vectors (``matched_rows``) the scan returns the affected
rows' positions instead and the files stay as they are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.log.table_paths import data_file_path
from delta_pyspark.core.protocol.actions import AddFile, RemoveFile, remove_actions
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.protocol.table_properties import check_constraints
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.spark.columns import generated_columns
from delta_pyspark.spark.files.scan import FILE_PATH, ROW_INDEX, file_uris, read_files
from delta_pyspark.spark.files.write import write_files
from delta_pyspark.spark.files.write_checks import guard_rows

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


@dataclass
class Rewrite:
    """The outcome of rewriting files: actions to commit and rows written."""

    removes: list[RemoveFile]
    adds: list[AddFile]
    rows_written: int

    @property
    def bytes_added(self) -> int:
        return sum(int(a.get("size") or 0) for a in self.adds)

    @property
    def bytes_removed(self) -> int:
        return sum(int(r.get("size") or 0) for r in self.removes)

    def metrics(self, start: float, scan_ms: int) -> dict[str, Any]:
        """The file, byte and time metrics DELETE and UPDATE record (delta-spark's names)."""
        return {
            "numRemovedFiles": len(self.removes),
            "numAddedFiles": len(self.adds),
            "numAddedChangeFiles": 0,
            "numRemovedBytes": self.bytes_removed,
            "numAddedBytes": self.bytes_added,
            "executionTimeMs": elapsed_ms(start),
            "scanTimeMs": scan_ms,
            "rewriteTimeMs": elapsed_ms(start) - scan_ms,
        }


def elapsed_ms(start: float) -> int:
    """Milliseconds since ``start`` (a ``time.monotonic()`` reading), for metrics."""
    return int((time.monotonic() - start) * 1000)


def files_by_uri(snapshot: Snapshot, files: pa.Table, uris: list[str]) -> pa.Table:
    """The rows of ``files`` whose Spark file URI is in ``uris``."""
    if not uris or files.num_rows == 0:
        return files.slice(0, 0)
    mask = pc.is_in(pa.array(file_uris(snapshot, files)), value_set=pa.array(uris))
    return files.filter(mask)


def touched_files(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, condition: Column
) -> tuple[pa.Table, int]:
    """The subset of ``files`` holding a row where ``condition`` is true, and how many rows."""
    from pyspark.sql import functions as F

    if files.num_rows == 0:
        return files, 0
    df = read_files(spark, snapshot, files, with_row_ids=True)
    counts = df.where(condition).groupBy(FILE_PATH).agg(F.count(F.lit(1)).alias("n")).collect()
    uris = [r[FILE_PATH] for r in counts]
    return files_by_uri(snapshot, files, uris), sum(int(r["n"]) for r in counts)


def matched_rows(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    condition: Column,
    keep_deleted: bool = False,
) -> tuple[pa.Table, list[np.ndarray]]:
    """The files of ``files`` holding rows where ``condition`` is true, and those rows'
    physical indexes in each (for deletion vectors). Only positions reach the driver.

    ``keep_deleted``: also match rows vectors already delete (see ``read_files``).
    """
    if files.num_rows == 0:
        return files, []
    df = read_files(spark, snapshot, files, with_row_ids=True, keep_deleted=keep_deleted)
    found = df.where(condition).select(FILE_PATH, ROW_INDEX).toArrow()
    return rows_by_file(snapshot, files, found.column(FILE_PATH), found.column(ROW_INDEX))


def rows_by_file(
    snapshot: Snapshot,
    files: pa.Table,
    uris: pa.Array | pa.ChunkedArray,
    indexes: pa.Array | pa.ChunkedArray,
) -> tuple[pa.Table, list[np.ndarray]]:
    """Group row indexes by file: the rows of ``files`` named by ``uris`` (Spark file
    URIs) and, aligned with them, each file's sorted row indexes."""
    if len(uris) == 0:
        return files.slice(0, 0), []
    if isinstance(uris, pa.ChunkedArray):
        uris = uris.combine_chunks()
    encoded = pc.dictionary_encode(uris)  # numbers, not strings, to sort (3x faster)
    names = encoded.dictionary.to_pylist()
    by_name = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), np.int64)
    rank[by_name] = np.arange(len(names))
    codes = rank[encoded.indices.to_numpy()]
    groups = group_by_number(codes, pc.cast(indexes, pa.int64()).to_numpy(), len(names))
    groups = [np.sort(g) for g in groups]
    position = {u: i for i, u in enumerate(file_uris(snapshot, files))}
    return files.take([position[names[i]] for i in by_name]), groups


def group_by_number(
    numbers: np.ndarray, values: np.ndarray, count: int | None = None
) -> list[np.ndarray]:
    """``values`` split by their ``numbers`` (0 to ``count`` - 1, default the largest
    plus one): one array per number, in its values' order, empty for numbers absent."""
    counts = np.bincount(numbers, minlength=count or 0)
    grouped = values[np.argsort(numbers, kind="stable")]
    return np.split(grouped, np.cumsum(counts)[:-1])


def num_records(adds: Sequence[Mapping[str, Any]]) -> int:
    """Rows in files this engine wrote (their stats always carry ``numRecords``)."""
    return sum(int(json.loads(a["stats"])["numRecords"]) for a in adds if a.get("stats"))


def write_rows(
    df: DataFrame, snapshot: Snapshot, schema: StructType | None = None
) -> list[AddFile]:
    """Write ``df`` (table columns in order, then any row tracking columns) into the table,
    enforcing its constraints."""
    schema = schema or snapshot.schema
    generated = generated_columns.checks(schema, snapshot.protocol)
    checked = guard_rows(df, schema, check_constraints(snapshot.configuration), generated)
    return write_files(
        checked, snapshot.table_root, schema, snapshot.partition_columns, snapshot.configuration
    )


def discard_files(snapshot: Snapshot, adds: list[AddFile]) -> None:
    """Delete the files of ``adds``, written by a transaction that will not commit them."""
    store = log_store_for(snapshot.table_root)
    for add in adds:
        store.delete(data_file_path(snapshot.table_root, add["path"]))


def without_empty_files(snapshot: Snapshot, adds: list[AddFile]) -> list[AddFile]:
    """``adds`` without the files that hold no row, which are deleted: Spark's first task
    writes a file even when it has no row (a merge's read of files without changed rows, or
    an empty part of its new rows), and such a file would only slow every later scan."""
    empty = [a for a in adds if a.get("stats") and num_records([a]) == 0]
    discard_files(snapshot, empty)
    return [a for a in adds if not (a.get("stats") and num_records([a]) == 0)]


def rewrite_files(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    transform: Callable[[DataFrame], DataFrame],
) -> Rewrite:
    """Replace ``files`` by copies of their rows passed through ``transform``, which keeps
    the columns after the table's (row tracking's, see ``row_tracking.read_preserving``)."""
    if files.num_rows == 0:
        return Rewrite([], [], 0)
    from delta_pyspark.spark.columns.row_tracking import read_preserving

    adds = write_rows(transform(read_preserving(spark, snapshot, files)), snapshot)
    return Rewrite(remove_actions(files), adds, num_records(adds))


def rewrite_without(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, condition: Column
) -> tuple[Rewrite, int]:
    """Drop the rows matching ``condition`` from the ``files`` that hold any.

    Returns the rewrite and the number of rows dropped.
    """
    from pyspark.sql import functions as F

    touched, matched = touched_files(spark, snapshot, files, condition)
    rewrite = rewrite_files(
        spark, snapshot, touched, lambda df: df.where(~F.coalesce(condition, F.lit(False)))
    )
    return rewrite, matched


def live_rows(files: pa.Table) -> int | None:
    """Rows of ``files`` net of deletion vectors, from their stats; None if any lacks them."""
    if files.num_rows == 0:
        return 0
    found = pc.extract_regex(files.column("stats"), r'"numRecords"\s*:\s*(?P<n>\d+)')
    if found.null_count:
        return None
    total = pc.sum(pc.cast(pc.struct_field(found, "n"), pa.int64())).as_py()
    dv = files.column("deletionVector")
    if dv.null_count < len(dv):
        total -= pc.sum(pc.struct_field(dv, "cardinality")).as_py() or 0
    return int(total)
