"""The JVM helper's own classes (``java/deltapyspark/``), called with Python values.

Each function here is one use of a helper class: the file scans a snapshot lists, the
deletion-vector and one-pass-upsert Parquet formats, identity values, the sorted-ids filter,
array literals built in the JVM, the settings under a prefix, and two of Spark's type rules
the engine asks about. Engine modules pass DataFrames, Columns and plain values and get the
same back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import BitMap64
from pyspark.sql import Column, DataFrame, SparkSession

from delta_pyspark.spark.jvm.bridge import (
    classic_session,
    helper_class,
    java_frame,
    jvm,
    new_array,
    new_object,
    python_frame,
    required_helper,
    serve_callbacks,
    sql_conf,
)
from delta_pyspark.spark.jvm.local_files import take_local_file


def parquet_scan(
    spark: SparkSession,
    paths: list[str],
    sizes_and_times: np.ndarray,
    schema_json: str,
    base: str | None,
) -> DataFrame:
    """A Parquet scan of exactly ``paths`` (``FileScans.parquet``) with the sizes and
    modification times the log gives them (an ``(n, 2)`` int64 array), under ``base`` for
    Hive-style partition discovery (None: none)."""
    scans = required_helper(spark, "deltapyspark.FileScans")
    return python_frame(
        scans.parquet(
            classic_session(spark),
            "".join(f"{p}\0" for p in paths),
            bytearray(sizes_and_times.astype("<i8").tobytes()),
            schema_json,
            base,
        ),
        spark,
    )


def with_scan_conf(df: DataFrame, key: str, value: str) -> DataFrame:
    """``df``'s file scan reading with one session setting of its own (``FileScans.withConf``)."""
    scans = required_helper(df.sparkSession, "deltapyspark.FileScans")
    return python_frame(scans.withConf(java_frame(df), key, value), df.sparkSession)


def with_max_split_bytes(df: DataFrame, split: int) -> DataFrame:
    """``df``'s file scan split at ``split`` bytes, the user's session untouched."""
    scans = required_helper(df.sparkSession, "deltapyspark.FileScans")
    return python_frame(scans.withMaxSplitBytes(java_frame(df), split), df.sparkSession)


@dataclass(frozen=True)
class SplitSettings:
    """The session settings Spark packs a file scan's tasks by."""

    min_partition_num_set: bool
    max_partition_bytes: int
    open_cost_in_bytes: int
    task_slots: int


def split_settings(spark: SparkSession) -> SplitSettings:
    conf = sql_conf(spark)
    return SplitSettings(
        min_partition_num_set=bool(conf.filesMinPartitionNum().isDefined()),
        max_partition_bytes=int(conf.filesMaxPartitionBytes()),
        open_cost_in_bytes=int(conf.filesOpenCostInBytes()),
        task_slots=int(classic_session(spark).leafNodeDefaultParallelism()),
    )


def without_deleted_rows(df: DataFrame, vectors: Iterable[tuple[str, BitMap64]]) -> DataFrame:
    """``df`` (a file scan) read through ``DeletionVectorParquetFormat``, which drops each
    file's (``_metadata.file_path``) deleted rows inside the scan."""
    spark = df.sparkSession
    deleted = deleted_rows(spark, vectors)
    scan = jvm(spark).deltapyspark.DeletionVectorParquetFormat.scan(java_frame(df), deleted)
    return python_frame(scan, spark)


def deleted_rows(spark: SparkSession, vectors: Iterable[tuple[str, BitMap64]]) -> Any:
    """A JVM ``DeletedRows`` holding each file's deleted rows, broadcast with the scan."""
    paths, bitmaps = bytearray(), bytearray()
    for path, rows in vectors:
        paths += path.encode() + b"\0"
        bitmaps += rows.serialize()
    deleted = new_object(spark, "deltapyspark.DeletedRows")
    deleted.addAll(paths, bitmaps)
    return deleted


class KeyProbe:
    """MERGE's format for one integral key (``KeyProbeParquetFormat``): a file scan through
    it looks each row's key up among the source's keys, with no Spark join, and reports
    each file's matches. Built by one of ``unmatched``, ``rewrite`` and ``probe``, whose
    ``source`` is collected by the call: the source's non-null join keys (long), then for
    ``rewrite`` and ``probe`` each source row's action and id (longs), which
    ``matched_rows`` gives each matched row."""

    def __init__(self, java_format: Any) -> None:
        self._format = java_format

    @classmethod
    def unmatched(cls, source: DataFrame, key_column: str) -> KeyProbe:
        """A scan yielding each file's rows whose key no source row holds, nothing of a
        file without matches (the one-pass upsert)."""
        return cls(_key_probe(source).unmatched(java_frame(source), key_column))

    @classmethod
    def rewrite(cls, source: DataFrame, key_column: str, keep: int) -> KeyProbe:
        """A scan yielding each file's rows but the matched ones whose key's action is not
        ``keep``, nothing of a file without such a row (a one-pass copy-on-write rewrite)."""
        return cls(_key_probe(source).rewrite(java_frame(source), key_column, keep))

    @classmethod
    def probe(cls, source: DataFrame, key_column: str) -> KeyProbe:
        """A scan yielding no rows: its matches are its result."""
        return cls(_key_probe(source).probe(java_frame(source), key_column))

    def scan(self, df: DataFrame) -> DataFrame:
        return python_frame(self._format.scan(java_frame(df)), df.sparkSession)

    def summary(self) -> tuple[int, int, int]:
        """(matched keys, distinct matched keys, keys matched in several files)."""
        matched, distinct, shared = list(self._format.summary())
        return int(matched), int(distinct), int(shared)

    def touched(self) -> list[str]:
        """The URIs of the files with a matched key."""
        return [str(p) for p in self._format.touched().split("\0")[:-1]]

    def matched_rows(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Every matched row, file by file: the files' URIs, how many rows of each matched,
        and per row (int64, aligned, grouped by file in order) its position, how many source
        rows hold its key, and the action and id given with that key. They come in a local
        file the JVM writes (``matchedRows``), read here and deleted."""
        data = take_local_file(self._format.matchedRows())
        files = int(np.frombuffer(data, "<i8", 1)[0])
        counts = np.frombuffer(data, "<i8", files, 8).astype(np.int64)
        rows = int(counts.sum())
        numbers = np.frombuffer(data, "<i8", 4 * rows, 8 * (1 + files)).astype(np.int64)
        names = data[8 * (1 + files + 4 * rows) :].decode("utf-8").split("\0")[:-1]
        return names, counts, numbers.reshape(4, rows)


def _key_probe(source: DataFrame) -> Any:
    return required_helper(source.sparkSession, "deltapyspark.KeyProbeParquetFormat")


def ids_among(src: DataFrame, column: str, marks: np.ndarray, present: bool) -> Column:
    """A condition on ``src``'s long ``column``: among the sorted ``marks`` (``present``)
    or not (``SortedLongs``: a binary search, no join, nothing broadcast from the driver)."""
    helper = required_helper(src.sparkSession, "deltapyspark.SortedLongs")
    packed = bytearray(marks.astype("<i8").tobytes())
    test = helper.isIn if present else helper.notIn
    return Column(test(column, packed))


def identity_values(spark: SparkSession, next_value: int, step: int) -> Column:
    """The generated values of one identity column (``IdentityValues``)."""
    values = required_helper(spark, "deltapyspark.IdentityValues")
    return Column(values.column(next_value, step))


def array_literal(spark: SparkSession, values: list[Any], kind: str) -> Column:
    """One array literal (a single plan node, however long) of ``bigint``/``double``/``string``
    values, built in the JVM from one bulk transfer: ``F.array`` of thousands of ``lit``s
    would be slow to analyse, and an array column would be copied with every row."""
    java = jvm(spark)
    if kind == "string":
        sep = next(chr(c) for c in range(1, 0x10000) if all(chr(c) not in v for v in values))
        pattern = java.java.util.regex.Pattern.compile(java.java.util.regex.Pattern.quote(sep))
        array = pattern.split(sep.join(values), -1)  # a Java String[], kept in the JVM
    else:
        numeric = kind == "bigint"
        data = bytearray(np.asarray(values, dtype=">i8" if numeric else ">f8").tobytes())
        array = new_array(spark, java.long if numeric else java.double, len(values))
        buffer = java.java.nio.ByteBuffer.wrap(data)
        (buffer.asLongBuffer() if numeric else buffer.asDoubleBuffer()).get(array)
    return Column(java.org.apache.spark.sql.functions.lit(array))


def settings_with_prefix(spark: SparkSession, prefix: str) -> dict[str, str]:
    """The session's settings (Spark's and its own) whose keys start with ``prefix``, in
    one call to the JVM."""
    writes = required_helper(spark, "deltapyspark.DeltaWrites")
    flat = [str(v) for v in writes.settingsWithPrefix(classic_session(spark), prefix)]
    return dict(zip(flat[::2], flat[1::2], strict=True))


def ansi_store_assignable(spark: SparkSession, source_json: str, target_json: str) -> bool:
    """Whether Spark's ANSI store assignment takes a value of the first type (Spark's type
    JSON) into a column of the second (int into bigint, say)."""
    java = jvm(spark)
    types = java.org.apache.spark.sql.types.DataType
    cast = java.org.apache.spark.sql.catalyst.expressions.Cast
    return bool(cast.canANSIStoreAssign(types.fromJson(source_json), types.fromJson(target_json)))


def serve_delta_source(spark: SparkSession, tables: Any) -> bool:
    """Register ``tables`` (the Python side of ``DeltaTables.java``) with the session's
    ``DeltaSource``; False when the helper jar is not on the session's class path."""
    source = helper_class(spark, "deltapyspark.DeltaSource")
    if source is None:
        return False
    serve_callbacks(spark, "tables", lambda: source.register(tables))
    return True


def listed_tables_of(df: DataFrame) -> list[str]:
    """The ids of the Delta tables ``df``'s plan lists files of (planning it if no action
    did yet); none without the helper jar."""
    source = helper_class(df.sparkSession, "deltapyspark.DeltaSource")
    if source is None:
        return []
    return [str(t) for t in source.listedTablesOf(java_frame(df))]


def serve_sql_commands(spark: SparkSession, commands: Any, openings: str) -> bool:
    """Register ``commands`` (the Python side of ``DeltaSqlParser``'s statements) and the
    statements' ``openings`` with the session's JVM; False without the helper jar."""
    parser = helper_class(spark, "deltapyspark.DeltaSqlParser")
    if parser is None:
        return False
    serve_callbacks(spark, "commands", lambda: parser.register(commands, openings))
    return True
