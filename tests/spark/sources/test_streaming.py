"""Structured Streaming with Delta tables: the sink writes each micro-batch once (a ``txn``
per batch), the source follows the log from a snapshot or a version, in batches its rate
limits bound, and fails or skips change commits as its options say."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaIllegalArgumentException,
    DeltaUnsupportedOperationException,
)
from delta_pyspark.tables import DeltaTable


def _ids(spark: Any, path: str) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(path).collect())


def _commits(path: str) -> list[dict[str, Any]]:
    """Each commit's commitInfo and txn actions, in version order."""
    out = []
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        info["txns"] = [a["txn"] for a in actions if "txn" in a]
        out.append(info)
    return out


@pytest.fixture
def run(spark: Any, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Run a stream from a Delta table to a Delta table with Trigger.AvailableNow."""
    started: list[Any] = []

    def runner(
        source: str,
        sink: str,
        checkpoint: str = "cp",
        transform: Callable[[Any], Any] = lambda df: df,
        mode: str = "append",
        **options: str,
    ) -> Any:
        reader = spark.readStream.format("delta")
        for key, value in options.items():
            reader = reader.option(key, value)
        query = (
            transform(reader.load(source))
            .writeStream.format("delta")
            .outputMode(mode)
            .option("checkpointLocation", str(tmp_path / checkpoint))
            .trigger(availableNow=True)
            .start(sink)
        )
        started.append(query)
        query.awaitTermination(120)
        return query

    yield runner
    for query in started:
        if query.isActive:
            query.stop()


def _data_batches(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_sink_appends_each_batch_once_and_resumes(spark: Any, tmp_path: Path, run: Any) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    spark.range(0, 4, numPartitions=2).write.format("delta").save(src)  # 2 files
    spark.range(4, 6, numPartitions=1).write.format("delta").mode("append").save(src)
    query = run(src, dst, maxFilesPerTrigger="1")
    assert _data_batches(query) == [2, 2, 2]  # one file per batch
    assert _ids(spark, dst) == list(range(6))
    commits = _commits(dst)
    assert [c["operation"] for c in commits] == ["STREAMING UPDATE"] * 3
    query_id = commits[0]["operationParameters"]["queryId"]
    assert [c["txns"][0]["version"] for c in commits] == [0, 1, 2]
    assert {c["txns"][0]["appId"] for c in commits} == {query_id}
    assert commits[0]["operationParameters"]["outputMode"] == "Append"

    spark.range(6, 8).write.format("delta").mode("append").save(src)
    run(src, dst)  # the same checkpoint: only what is new
    assert _ids(spark, dst) == list(range(8))


def test_a_replayed_batch_is_skipped(spark: Any, tmp_path: Path, run: Any) -> None:
    """The query died after the Delta commit, before its checkpoint recorded the batch:
    Spark runs the batch again on restart, and the sink finds it committed."""
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    spark.range(3).write.format("delta").save(src)
    run(src, dst)
    spark.range(3, 5).write.format("delta").mode("append").save(src)
    run(src, dst)
    versions_before = len(_commits(dst))
    last = max(int(p.name) for p in (tmp_path / "cp" / "commits").iterdir() if p.name.isdigit())
    for done in (str(last), f".{last}.crc"):  # the batch is not marked done
        (tmp_path / "cp" / "commits" / done).unlink(missing_ok=True)
    query = run(src, dst)
    assert [p["batchId"] for p in query.recentProgress] == [last]  # Spark ran it again
    assert _ids(spark, dst) == [0, 1, 2, 3, 4]  # and nothing doubled
    assert len(_commits(dst)) == versions_before


def test_complete_mode_replaces_the_table_each_batch(spark: Any, tmp_path: Path, run: Any) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "agg")
    spark.range(5).write.format("delta").save(src)

    def counts(df: Any) -> Any:
        return df.groupBy((df.id % 2).alias("k")).count()

    run(src, dst, transform=counts, mode="complete")
    spark.range(5, 9).write.format("delta").mode("append").save(src)
    run(src, dst, transform=counts, mode="complete")
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(dst).collect())
    assert rows == [(0, 5), (1, 4)]
    commits = _commits(dst)
    assert [c["operationParameters"]["outputMode"] for c in commits] == ["Complete"] * 2
    assert DeltaLog(dst).snapshot().num_files <= 2  # the first batch's files were removed


def test_source_from_a_version_and_a_pipeline_with_a_transform(
    spark: Any, tmp_path: Path, run: Any
) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    spark.range(3).write.format("delta").save(src)
    spark.range(10, 12).write.format("delta").mode("append").save(src)
    run(src, dst, startingVersion="1", transform=lambda df: df.where("id % 2 = 0"))
    assert _ids(spark, dst) == [10]  # version 0 is before the start

    latest = str(tmp_path / "latest")
    query = (
        spark.readStream.format("delta")
        .option("startingVersion", "latest")
        .load(src)
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "cp_latest"))
        .trigger(processingTime="100 milliseconds")
        .start(latest)
    )
    try:
        query.processAllAvailable()
        spark.range(20, 22).write.format("delta").mode("append").save(src)
        spark.range(30, 31).write.format("delta").mode("append").save(src)
        query.processAllAvailable()
    finally:
        query.stop()
    assert _ids(spark, latest) == [20, 21, 30]  # only what came after the start


def test_deletes_fail_the_stream_unless_an_option_says(
    spark: Any, tmp_path: Path, run: Any
) -> None:
    src = str(tmp_path / "src")
    spark.createDataFrame([(i, i % 2) for i in range(6)], "id long, p long").write.format(
        "delta"
    ).partitionBy("p").save(src)
    run(src, str(tmp_path / "a"), checkpoint="a")
    DeltaTable.forPath(spark, src).delete("p = 1")  # whole files: a partition delete
    spark.range(20, 21).selectExpr("id", "0L AS p").write.format("delta").mode("append").save(src)
    with pytest.raises(StreamingQueryException, match="DELTA_SOURCE_IGNORE_DELETE"):
        run(src, str(tmp_path / "a"), checkpoint="a")
    run(src, str(tmp_path / "a"), checkpoint="a", ignoreDeletes="true")
    assert _ids(spark, str(tmp_path / "a")) == [0, 1, 2, 3, 4, 5, 20]


def test_change_commits_fail_skip_or_reemit(spark: Any, tmp_path: Path, run: Any) -> None:
    src = str(tmp_path / "src")
    spark.range(4, numPartitions=1).write.format("delta").save(src)
    for name in ("fail", "skip", "changes"):
        run(src, str(tmp_path / name), checkpoint=name)
    DeltaTable.forPath(spark, src).update("id = 1", {"id": "100"})  # rewrites the file
    spark.range(50, 51).write.format("delta").mode("append").save(src)

    with pytest.raises(StreamingQueryException, match="DELTA_SOURCE_TABLE_IGNORE_CHANGES"):
        run(src, str(tmp_path / "fail"), checkpoint="fail")
    run(src, str(tmp_path / "skip"), checkpoint="skip", skipChangeCommits="true")
    assert _ids(spark, str(tmp_path / "skip")) == [0, 1, 2, 3, 50]
    run(src, str(tmp_path / "changes"), checkpoint="changes", ignoreChanges="true")
    # the rewritten file comes again, whole: delta-spark's ignoreChanges
    assert _ids(spark, str(tmp_path / "changes")) == [0, 0, 1, 2, 2, 3, 3, 50, 100]


def test_optimize_is_not_delivered_again(spark: Any, tmp_path: Path, run: Any) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    for i in range(3):
        spark.range(i * 10, i * 10 + 2).write.format("delta").mode("append").save(src)
    run(src, dst)
    DeltaTable.forPath(spark, src).optimize().executeCompaction()
    spark.range(99, 100).write.format("delta").mode("append").save(src)
    query = run(src, dst)
    assert _data_batches(query) == [1]
    assert _ids(spark, dst) == [0, 1, 10, 11, 20, 21, 99]


def test_a_schema_change_fails_the_stream_naming_the_version(spark: Any, tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    spark.range(2).write.format("delta").save(src)
    query = (
        spark.readStream.format("delta")
        .load(src)
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="100 milliseconds")
        .start(dst)
    )
    try:
        query.processAllAvailable()
        spark.range(2, 3).selectExpr("id", "'x' AS note").write.format("delta").mode(
            "append"
        ).option("mergeSchema", "true").save(src)
        with pytest.raises(StreamingQueryException, match="schema change in version 1"):
            query.awaitTermination(60)
    finally:
        query.stop()
    assert _ids(spark, dst) == [0, 1]
    # restarted, the stream reads with the new schema (older files lack the column)
    restarted = (
        spark.readStream.format("delta")
        .load(src)
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .option("mergeSchema", "true")
        .trigger(availableNow=True)
        .start(dst)
    )
    restarted.awaitTermination(120)
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(dst).collect())
    assert rows == [(0, None), (1, None), (2, "x")]


def test_source_reads_through_deletion_vectors(spark: Any, tmp_path: Path, run: Any) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    spark.range(6, numPartitions=1).write.format("delta").option(
        "delta.enableDeletionVectors", "true"
    ).save(src)
    DeltaTable.forPath(spark, src).delete("id < 2")
    run(src, dst)  # starts from the snapshot: its vectors apply
    assert _ids(spark, dst) == [2, 3, 4, 5]


def test_tables_by_name(spark: Any, tmp_path: Path) -> None:
    spark.sql("CREATE TABLE stream_src USING delta AS SELECT id FROM range(3)")
    try:
        query = (
            spark.readStream.table("stream_src")
            .writeStream.format("delta")
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .toTable("stream_dst")
        )
        query.awaitTermination(120)
        assert sorted(r.id for r in spark.table("stream_dst").collect()) == [0, 1, 2]
        assert spark.sql("DESCRIBE DETAIL stream_dst").first().format == "delta"
    finally:
        spark.sql("DROP TABLE IF EXISTS stream_src")
        spark.sql("DROP TABLE IF EXISTS stream_dst")


def test_foreach_batch_with_idempotent_writes(spark: Any, tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    spark.range(3).write.format("delta").save(src)

    def write(batch: Any, batch_id: int) -> None:
        for _ in range(2):  # a retried batch body
            batch.write.format("delta").mode("append").option("txnAppId", "fb").option(
                "txnVersion", batch_id
            ).save(dst)

    query = (
        spark.readStream.format("delta")
        .load(src)
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert _ids(spark, dst) == [0, 1, 2]


def test_bad_stream_options_are_refused(spark: Any, tmp_path: Path, run: Any) -> None:
    src = str(tmp_path / "src")
    spark.range(2).write.format("delta").save(src)
    with pytest.raises(DeltaIllegalArgumentException, match="maxFilesPerTrigger must be a"):
        run(src, str(tmp_path / "dst"), maxFilesPerTrigger="0")  # refused as it is read
    with pytest.raises(DeltaUnsupportedOperationException, match="startingtimestamp"):
        run(src, str(tmp_path / "dst2"), checkpoint="cp2", startingTimestamp="2024-01-01")
