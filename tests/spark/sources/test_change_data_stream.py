"""A change data feed stream (``readStream ... readChangeFeed``): each micro-batch holds the
change rows of its versions with the three extra columns, as the batch feed does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.tables import DeltaTable

COLUMNS = ["id", "part", "_change_type", "_commit_version"]


def _table(spark: Any, path: str, dv: bool = False) -> DeltaTable:
    df = spark.createDataFrame([(1, "a"), (2, "a"), (3, "b")], "id long, part string")
    writer = df.write.format("delta").option("delta.enableChangeDataFeed", "true")
    if dv:
        writer = writer.option("delta.enableDeletionVectors", "true")
    writer.partitionBy("part").save(path)
    return DeltaTable.forPath(spark, path)


def _stream(spark: Any, src: str, dst: str, checkpoint: str, **options: Any) -> list[Any]:
    """Run the stream to the end of the table into ``dst`` (a Delta table); its rows."""
    reader = spark.readStream.format("delta").option("readChangeFeed", "true")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load(src)
        .writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(dst)
    )
    query.awaitTermination(300)
    return sorted(tuple(r) for r in spark.read.format("delta").load(dst).select(*COLUMNS).collect())


@pytest.mark.long  # CI's second step, for the quick run's time
@pytest.mark.parametrize("dv", [False, True])
def test_stream_from_a_version_matches_the_batch_feed(spark: Any, tmp_path: Path, dv: bool) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    table = _table(spark, src, dv)
    table.update("id = 1", {"id": "10"})
    spark.sql(f"DELETE FROM delta.`{src}` WHERE id = 2")
    got = _stream(spark, src, dst, str(tmp_path / "cp"), startingVersion=0, maxFilesPerTrigger=1)
    batch = spark.read.format("delta").option("readChangeFeed", "true")
    expected = batch.option("startingVersion", 0).load(src).select(*COLUMNS).collect()
    assert got == sorted(tuple(r) for r in expected)
    assert got == sorted(
        [
            (1, "a", "insert", 0),
            (2, "a", "insert", 0),
            (3, "b", "insert", 0),
            (1, "a", "update_preimage", 1),
            (10, "a", "update_postimage", 1),
            (2, "a", "delete", 2),
        ]
    )
    schema = {
        f.name: f.dataType.simpleString() for f in spark.read.format("delta").load(dst).schema
    }
    assert schema["_commit_version"] == "bigint" and schema["_commit_timestamp"] == "timestamp"


@pytest.mark.long  # CI's second step, for the quick run's time
def test_stream_starts_with_the_snapshot_and_resumes(spark: Any, tmp_path: Path) -> None:
    src, dst, cp = str(tmp_path / "src"), str(tmp_path / "dst"), str(tmp_path / "cp")
    table = _table(spark, src)
    table.update("id = 1", {"id": "10"})  # v1: the stream starts at this snapshot
    first = _stream(spark, src, dst, cp)
    assert first == [(2, "a", "insert", 1), (3, "b", "insert", 1), (10, "a", "insert", 1)]
    spark.sql(f"DELETE FROM delta.`{src}` WHERE id = 3")  # v2: whole file
    table.update("id = 2", {"id": "20"})  # v3
    again = _stream(spark, src, dst, cp)
    assert again == sorted(
        [
            *first,
            (3, "b", "delete", 2),
            (2, "a", "update_preimage", 3),
            (20, "a", "update_postimage", 3),
        ]
    )
