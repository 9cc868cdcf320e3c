"""A guided tour: ``./dev demo`` creates a table in ./demo-table with an embedded
local Spark and walks through write, append, read, schema enforcement, schema
evolution, DML, time travel, deletion vectors, OPTIMIZE, RESTORE and history.
``tour`` runs the same steps on any session and table location (an ``s3a://`` one too)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def main() -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta

    path = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "demo-table")
    shutil.rmtree(path, ignore_errors=True)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("delta-pyspark-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
    )
    spark = configure_spark_with_delta(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    tour(spark, path)
    spark.stop()
    print(f"done: inspect it without Spark with  .venv/bin/delta-pyspark describe {path}")
    return 0


def tour(spark: SparkSession, path: str) -> None:
    """The demo's steps on a new table at ``path``, printing what each one shows."""
    from delta_pyspark import scan_report
    from delta_pyspark.exceptions import SchemaMismatchError
    from delta_pyspark.tables import DeltaTable

    def step(title: str) -> None:
        print(f"\n=== {title}")

    step(f"1. write a partitioned table to {path}")
    df = spark.createDataFrame(
        [(1, "alice", "nl"), (2, "bob", "us"), (3, "carol", "nl")],
        "id long, name string, country string",
    )
    df.write.format("delta").partitionBy("country").save(path)
    spark.read.format("delta").load(path).orderBy("id").show()

    step("2. append two rows")
    spark.createDataFrame(
        [(4, "dan", "us"), (5, "eve", "fr")], "id long, name string, country string"
    ).write.format("delta").mode("append").save(path)
    spark.read.format("delta").load(path).orderBy("id").show()
    time.sleep(1.1)
    after_append = int(time.time() * 1000)
    time.sleep(1.1)

    step("3. schema enforcement: appending a DataFrame with an extra column is refused")
    extra = spark.createDataFrame(
        [(6, "frank", "de", 42)], "id long, name string, country string, age int"
    )
    try:
        extra.write.format("delta").mode("append").save(path)
    except SchemaMismatchError as e:
        print(f"refused with {type(e).__name__}:\n{e}")

    step("4. schema evolution with mergeSchema=true adds the column")
    extra.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    spark.read.format("delta").load(path).orderBy("id").show()

    step("5. delete rows of one partition")
    DeltaTable.forPath(spark, path).delete("country = 'us'")
    spark.read.format("delta").load(path).orderBy("id").show()

    step("6. update and upsert (MERGE): rename alice, add fay, change eve's country")
    table = DeltaTable.forPath(spark, path)
    table.update("name = 'alice'", {"name": "'alicia'"})
    changes = spark.createDataFrame(
        [(5, "eve", "de", 30), (7, "fay", "fr", 25)],
        "id long, name string, country string, age int",
    )
    (
        table.alias("t")
        .merge(changes.alias("c"), "t.id = c.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
        .show()
    )
    filtered = spark.read.format("delta").load(path).where("id = 7")
    filtered.show()
    report = scan_report(filtered)
    print(f"the filter read {report.files_scanned} of {report.files_total} files (stats skipping)")

    step("7. time travel: version 0, and the table as of just after the append")
    spark.read.format("delta").option("versionAsOf", 0).load(path).orderBy("id").show()
    ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(after_append / 1000))
    print(f"timestampAsOf {ts} (UTC):")
    spark.read.format("delta").option("timestampAsOf", ts).load(path).orderBy("id").show()

    step("8. deletion vectors: enable them, then DELETE marks the row instead of rewriting")
    table.setProperties({"delta.enableDeletionVectors": "true"})
    table.delete("id = 3")
    spark.read.format("delta").load(path).orderBy("id").show()

    step("9. OPTIMIZE: compact small files (and purge deleted rows) without changing data")
    compaction = table.optimize().executeCompaction()
    compaction.select("metrics.numFilesAdded", "metrics.numFilesRemoved").show()

    step("10. RESTORE the table to version 1 (one commit; history keeps everything)")
    table.restoreToVersion(1).show()
    spark.read.format("delta").load(path).orderBy("id").show()

    step("11. history")
    DeltaTable.forPath(spark, path).history().select(
        "version", "operation", "operationParameters", "operationMetrics"
    ).show(truncate=60)


if __name__ == "__main__":
    sys.exit(main())
