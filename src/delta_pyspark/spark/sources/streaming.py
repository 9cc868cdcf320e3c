"""Structured Streaming on Delta tables: the Python side of the JVM's ``DeltaStreamSource``
and ``DeltaStreamSink``.

The source asks here for its schema, for the offset after each micro-batch and, through
the ``delta`` relation (``callback_service.DeltaTables.open``), for the files of a batch; which
files those are is the core's (``core/changes/stream_source.py``). The sink writes each
micro-batch with the write command, as one transaction carrying ``txn(appId = query id,
version = batch id)``: a batch Spark replays after a failure finds its version committed
and is skipped, so every row lands once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyspark.core.changes.change_data import ChangeFile
from delta_pyspark.core.changes.stream_source import StreamOffset, StreamOptions, StreamSource
from delta_pyspark.core.protocol.schema import StructType, read_schema
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.exceptions import DeltaIllegalArgumentException
from delta_pyspark.spark.commands.write_command import (
    OPERATION_OPTION,
    WriteRequest,
    write_delta,
)
from delta_pyspark.spark.files.scan import adds_table
from delta_pyspark.spark.sources.change_feed import EXTRA_FIELDS
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Options DeltaStreamSource.java gives the relation of a micro-batch.
START_OPTION = "__delta_stream_start"
END_OPTION = "__delta_stream_end"
SCHEMA_OPTION = "__delta_stream_schema"
STREAMING_OPERATION = "STREAMING UPDATE"


def _source(path: str, options: dict[str, str], schema_json: str) -> StreamSource:
    log = DeltaLog.for_table(path)
    return StreamSource(log, StreamOptions.parse(options, log), schema_json)


def stream_schema(path: str, options: dict[str, str]) -> tuple[str, str]:
    """The schema a streaming read of ``path`` delivers, the table's at the version it starts
    from (a change feed's with its three columns): as Spark's JSON, and as the log writes
    it (later versions are compared to it)."""
    log = DeltaLog.for_table(path)
    parsed = StreamOptions.parse(options, log)
    start = parsed.starting_version
    snapshot = log.snapshot()
    if start is not None and start <= snapshot.version:
        snapshot = log.snapshot(start)
    schema = read_schema(snapshot.schema)
    if parsed.change_feed:
        schema = StructType((*schema.fields, *EXTRA_FIELDS))
    return str(to_spark_type(schema).json()), snapshot.metadata.schema_string


def stream_offset(
    path: str,
    options: dict[str, str],
    schema_string: str,
    start: str,
    limited: bool,
    end_version: int,
) -> str:
    """The offset (JSON) after the next micro-batch; "" when nothing is new."""
    source = _source(path, options, schema_string)
    begin = StreamOffset.from_json(start) if start else None
    latest = source.latest_offset(begin, limited, end_version if end_version >= 0 else None)
    return "" if latest is None or latest == begin else latest.to_json()


def _batch(path: str, options: dict[str, str]) -> tuple[Snapshot, list[Mapping[str, Any]]]:
    schema_json = options.get(SCHEMA_OPTION)
    end = options.get(END_OPTION)
    if schema_json is None or end is None:
        raise DeltaIllegalArgumentException("a micro-batch read needs its end offset and schema")
    source = _source(path, options, schema_json)
    start = options.get(START_OPTION)
    end_offset = StreamOffset.from_json(end)
    adds = source.batch(StreamOffset.from_json(start) if start else None, end_offset)
    return source.log.snapshot(end_offset.version), adds


def batch_files(path: str, options: dict[str, str]) -> tuple[Snapshot, pa.Table]:
    """The snapshot a micro-batch's relation describes (the table at the batch's last
    version) and the batch's files, in the layout of ``Snapshot.files``."""
    snapshot, adds = _batch(path, options)
    return snapshot, adds_table(adds, snapshot)


def change_batch(path: str, options: dict[str, str]) -> tuple[Snapshot, list[ChangeFile]]:
    """A change feed stream's micro-batch: the table at its last version and its change
    files (read by ``change_feed.changes_frame``)."""
    snapshot, items = _batch(path, options)
    return snapshot, [item["change"] for item in items]


def latest_version(path: str) -> int:
    return DeltaLog.for_table(path).snapshot().version


def write_stream(
    spark: SparkSession,
    df: DataFrame,
    path: str,
    batch_id: int,
    query_id: str,
    output_mode: str,
    options: dict[str, str],
    partition_by: list[str] | None,
) -> None:
    """Micro-batch ``batch_id`` of query ``query_id``, once: appended (``append``), or
    replacing the table's rows (``complete``)."""
    if output_mode not in ("append", "complete"):
        raise DeltaIllegalArgumentException(
            f"the Delta sink takes output mode append or complete, not {output_mode}"
        )
    lowered = {k.lower() for k in options}
    if "txnappid" in lowered or "txnversion" in lowered:
        raise DeltaIllegalArgumentException(
            "txnAppId/txnVersion are set by the Delta sink itself (query id, batch id); "
            "use them with foreachBatch"
        )
    request_options = {
        **options,
        "txnAppId": query_id,
        "txnVersion": str(batch_id),
        OPERATION_OPTION: STREAMING_OPERATION,
    }
    mode = "overwrite" if output_mode == "complete" else "append"
    parameters = {
        "outputMode": output_mode.capitalize(),
        "queryId": query_id,
        "epochId": str(batch_id),
    }
    write_delta(spark, df, path, WriteRequest(mode, partition_by, request_options, parameters))
