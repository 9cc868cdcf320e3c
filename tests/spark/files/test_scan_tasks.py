"""How a table scan's files are packed into Spark tasks (``scan._even_tasks``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.spark.files.scan import _packing
from delta_pyspark.tables import DeltaTable


def test_packing_follows_sparks_next_fit_decreasing() -> None:
    # 8 pieces of 10 bytes, split 35 and open cost 2: (10+2) x 3 = 36 per task, 3 tasks
    assert _packing([10] * 8, 35, 2, 2) == (3, 60)  # slot 1 reads tasks 1 and 3
    assert _packing([10] * 8, 25, 2, 2) == (4, 48)
    assert _packing([50], 20, 0, 2) == (3, 30)  # 20 + 20 + 10: cut into pieces first
    assert _packing([1, 9, 5], 10, 0, 1) == (2, 15)  # largest first: [9], [5, 1]


@pytest.mark.parametrize("vectors", [False, True], ids=["plain", "deletion-vectors"])
def test_a_scan_needing_two_waves_gets_whole_waves_of_tasks(
    spark: Any, tmp_path: Path, conf: Any, vectors: bool
) -> None:
    """8 files of about the same size, a maximum task size of 3.2 files: Spark alone packs
    3 tasks of 3, 3 and 2 files for 2 slots; the table scan gets 4 tasks of 2, leaves the
    user's settings alone and returns the same rows."""
    path = str(tmp_path / "t")
    df = spark.range(8_000).selectExpr("id", "CONCAT('row', id) AS s")
    writer = df.repartitionByRange(8, "id").write.format("delta")
    writer.option("delta.enableDeletionVectors", str(vectors).lower()).save(path)
    if vectors:
        DeltaTable.forPath(spark, path).delete("id % 100 = 7")
    files = sorted(str(p) for p in Path(path).glob("*.parquet"))
    assert len(files) == 8 and spark.sparkContext.defaultParallelism == 2
    limit = str(int(sum(Path(f).stat().st_size for f in files) / 2.5))
    conf("spark.sql.files.openCostInBytes", "0")
    conf("spark.sql.files.maxPartitionBytes", limit)
    assert spark.read.parquet(*files).rdd.getNumPartitions() == 3
    table = spark.read.format("delta").load(path)
    assert table.rdd.getNumPartitions() == 4
    assert spark.conf.get("spark.sql.files.maxPartitionBytes") == limit
    kept = [i for i in range(8_000) if not (vectors and i % 100 == 7)]
    assert sorted(tuple(r) for r in table.collect()) == [(i, f"row{i}") for i in kept]
    conf("spark.sql.files.minPartitionNum", "1")  # the user's own aim: left to Spark
    assert spark.read.format("delta").load(path).rdd.getNumPartitions() == 3
