"""The driver of the S3 cluster run (``test_object_stores.py``): a session on a standalone
Spark cluster whose executors share nothing with the driver but the S3 bucket. It writes,
appends, deletes (with deletion vectors), updates, merges and compacts an ``s3a://`` table,
then prints one JSON line: the table's rows, its history and the executors that ran tasks.

Usage: ``python cluster_driver.py MASTER_URL TABLE_URL JARS S3A_SETTINGS_JSON``.
"""

from __future__ import annotations

import json
import sys


def main(master: str, table: str, jars: str, settings: dict[str, str]) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from delta_pyspark import configure_spark_with_delta
    from delta_pyspark.tables import DeltaTable

    builder = (
        SparkSession.builder.master(master)
        .appName("delta-pyspark-s3-cluster")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.executor.memory", "1g")
        .config("spark.jars", jars)
    )
    for key, value in settings.items():
        builder = builder.config(f"spark.hadoop.{key}", value)
    spark = configure_spark_with_delta(builder, s3=True).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    def rows(start: int, end: int) -> object:
        return spark.range(start, end, numPartitions=4).select(
            "id", (F.col("id") % 4).cast("string").alias("p"), (F.col("id") * 2).alias("v")
        )

    rows(0, 400).write.format("delta").partitionBy("p").save(table)
    rows(400, 600).write.format("delta").mode("append").save(table)  # type: ignore[attr-defined]
    delta = DeltaTable.forPath(spark, table)
    delta.setProperties({"delta.enableDeletionVectors": "true"})  # type: ignore[attr-defined]
    delta.delete("id % 10 = 0")
    delta.update("id < 50", {"v": "-v"})
    source = rows(590, 650)
    (
        delta.alias("t")
        .merge(source.alias("s"), "t.id = s.id")  # type: ignore[arg-type]
        .whenMatchedUpdate(set={"v": "s.v + 1"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    delta.optimize().executeCompaction()
    got = sorted((r.id, r.p, r.v) for r in spark.read.format("delta").load(table).collect())
    history = [r.operation for r in delta.history().orderBy("version").collect()]
    # block managers: the driver's and one per executor
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    print(json.dumps({"rows": got, "history": history, "executors": executors}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
