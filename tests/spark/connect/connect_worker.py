"""Delta through a Spark Connect session (run as a script, not collected by pytest: a process
with a classic SparkContext cannot start a local Connect server).

``connect_worker.py local DIR`` builds ``remote("local[1]")`` with
``configure_spark_with_delta``; ``connect_worker.py sc://HOST:PORT DIR`` connects to a running
server. It runs each scenario under DIR and prints one JSON object: per scenario, what it
observed (rows, history, types), or the error it met. The tests assert on those.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

SCENARIOS: dict[str, Callable[[Any, str], dict[str, Any]]] = {}


def scenario(fn: Callable[[Any, str], dict[str, Any]]) -> Callable[[Any, str], dict[str, Any]]:
    SCENARIOS[fn.__name__] = fn
    return fn


def _ids(df: Any) -> list[int]:
    return sorted(r.id for r in df.collect())


def _history(spark: Any, table: str) -> list[list[Any]]:
    rows = spark.sql(f"DESCRIBE HISTORY {table}").select("version", "operation").collect()
    return [[r.version, r.operation] for r in rows]


@scenario
def dataframes(spark: Any, root: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    path = f"{root}/df"
    spark.range(10).write.format("delta").save(path)
    spark.range(10, 12).write.format("delta").mode("append").save(path)
    filtered = _ids(spark.read.format("delta").load(path).filter(F.col("id") >= 8))
    spark.range(100, 102).write.format("delta").mode("overwrite").save(path)
    return {
        "filtered": filtered,
        "overwritten": _ids(spark.read.format("delta").load(path)),
        "version_1": _ids(spark.read.format("delta").option("versionAsOf", 1).load(path)),
        "history": _history(spark, f"delta.`{path}`"),
        "log": sorted(os.listdir(f"{path}/_delta_log")),
    }


@scenario
def sql(spark: Any, root: str) -> dict[str, Any]:
    spark.sql("CREATE TABLE connect_sql (id BIGINT, v STRING) USING delta")
    spark.sql("INSERT INTO connect_sql VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql("UPDATE connect_sql SET v = 'u' WHERE id = 1")
    spark.sql("DELETE FROM connect_sql WHERE id = 2")
    spark.sql(
        "MERGE INTO connect_sql t USING (SELECT 3L AS id, 'm' AS v UNION ALL SELECT 4L, 'n') s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    rows = spark.sql("SELECT id, v FROM connect_sql ORDER BY id").collect()
    at_1 = spark.sql("SELECT id FROM connect_sql VERSION AS OF 1 ORDER BY id").collect()
    limited = spark.sql("DESCRIBE HISTORY connect_sql LIMIT :n", args={"n": 1}).collect()
    return {
        "rows": [[r.id, r.v] for r in rows],
        "version_1": [r.id for r in at_1],
        "history": _history(spark, "connect_sql"),
        "limited": [r.version for r in limited],
    }


@scenario
def table_writes(spark: Any, root: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    spark.range(3).write.format("delta").saveAsTable("connect_saved")
    spark.range(3, 5).write.format("delta").mode("append").saveAsTable("connect_saved")
    spark.range(7, 9).write.format("delta").mode("overwrite").saveAsTable("connect_saved")
    spark.range(2).writeTo("connect_v2").using("delta").create()
    spark.range(2, 5).writeTo("connect_v2").append()
    spark.range(1, 3).writeTo("connect_v2").overwrite(F.col("id") < 3)
    return {
        "saved": _ids(spark.table("connect_saved")),
        "saved_history": _history(spark, "connect_saved"),
        "saved_first": _ids(spark.sql("SELECT * FROM connect_saved VERSION AS OF 0")),
        "v2": _ids(spark.table("connect_v2")),
        "v2_history": _history(spark, "connect_v2"),
    }


@scenario
def streaming(spark: Any, root: str) -> dict[str, Any]:
    source, sink, checkpoint = f"{root}/src", f"{root}/sink", f"{root}/cp"
    for start in (0, 10):
        spark.range(start, start + 3).write.format("delta").mode("append").save(source)

    def drain() -> None:
        (
            spark.readStream.format("delta")
            .load(source)
            .writeStream.format("delta")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(sink)
            .awaitTermination()
        )

    drain()
    first = _ids(spark.read.format("delta").load(sink))
    spark.range(20, 22).write.format("delta").mode("append").save(source)
    drain()
    return {"first": first, "second": _ids(spark.read.format("delta").load(sink))}


@scenario
def delta_table(spark: Any, root: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from delta_pyspark.tables import DeltaTable

    path = f"{root}/dt"
    spark.range(5).withColumn("v", F.lit("a")).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    source = spark.range(3, 7).withColumn("v", F.lit("x"))
    merged = (
        table.alias("t")
        .merge(source.alias("s"), F.col("t.id") == F.col("s.id"))
        .whenMatchedUpdate(set={"v": F.col("s.v")})
        .whenNotMatchedInsertAll()
        .execute()
    )
    table.delete(F.col("id") == 0)
    table.update("id = 1", {"v": "'u'"})
    rows = sorted((r.id, r.v) for r in table.toDF().collect())
    compacted = table.optimize().executeCompaction().collect()[0].metrics.numFilesAdded
    table.restoreToVersion(1)
    made = DeltaTable.create(spark).tableName("connect_made").addColumn("a", "INT").execute()
    spark.sql("INSERT INTO connect_made VALUES (7)")
    return {
        "to_df_type": type(table.toDF()).__module__,
        "merge_metrics": [list(r) for r in merged.collect()],
        "rows": [list(r) for r in rows],
        "compacted": compacted,
        "history": [[r.version, r.operation] for r in table.history().collect()],
        "restored": sorted((r.id, r.v) for r in table.toDF().collect()),
        "made": [r.a for r in made.toDF().collect()],
        "by_name": DeltaTable.forName(spark, "connect_made").detail().collect()[0].numFiles,
        "is_delta": [DeltaTable.isDeltaTable(spark, path), DeltaTable.isDeltaTable(spark, root)],
    }


@scenario
def delta_spark_client(spark: Any, root: str) -> dict[str, Any]:
    """delta-spark's own Delta Connect client, unchanged, against this server."""
    from delta.connect.tables import DeltaTable as ClientTable
    from pyspark.sql import functions as F

    path = f"{root}/client"
    spark.range(5).withColumn("v", F.lit("a")).write.format("delta").save(path)
    table = ClientTable.forPath(spark, path)
    seen: dict[str, Any] = {"to_df": _ids(table.toDF())}
    seen["delete"] = [list(r) for r in table.delete("id = 0").collect()]
    seen["update"] = [list(r) for r in table.update(F.col("id") == 1, {"v": F.lit("u")}).collect()]
    source = spark.range(3, 7).withColumn("v", F.lit("x"))
    merged = (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsert(values={"id": "s.id", "v": "'new'"})
        .execute()
    )
    seen["merge"] = [list(r) for r in merged.collect()]
    seen["rows"] = sorted([r.id, r.v] for r in table.toDF().collect())
    seen["history"] = [r.operation for r in table.history().collect()]
    seen["detail_format"] = table.detail().collect()[0].format
    seen["is_delta"] = [bool(ClientTable.isDeltaTable(spark, p)) for p in (path, root)]
    seen["optimize"] = table.optimize().executeCompaction().collect()[0].metrics.numFilesAdded
    seen["restore"] = list(table.restoreToVersion(1).collect()[0])[:2]
    seen["restored"] = _ids(table.toDF())
    table.addFeatureSupport("deletionVectors")
    table.vacuum()
    ClientTable.create(spark).tableName("client_made").addColumn("a", "INT").execute()
    spark.sql("INSERT INTO client_made VALUES (3)")
    seen["made"] = [r.a for r in ClientTable.forName(spark, "client_made").toDF().collect()]
    return seen


@scenario
def errors(spark: Any, root: str) -> dict[str, Any]:
    spark.range(2).write.format("parquet").saveAsTable("connect_parquet")
    found: dict[str, Any] = {}
    try:
        spark.sql("DESCRIBE HISTORY connect_parquet").collect()
    except Exception as e:
        found["history_of_parquet"] = [type(e).__name__, e.getCondition(), str(e)[:300]]
    try:
        spark.sql(f"SELECT * FROM delta.`{root}/nothing`").collect()
    except Exception as e:
        found["missing_table"] = [type(e).__name__, str(e)[:300]]
    return found


def main(target: str, root: str, names: list[str]) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    if target == "local":
        from delta_pyspark import configure_spark_with_delta

        builder = configure_spark_with_delta(
            SparkSession.builder.remote("local[1]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.sql.warehouse.dir", f"{root}/warehouse")
        )
    else:
        builder = SparkSession.builder.remote(target)
    spark = builder.getOrCreate()
    results: dict[str, Any] = {"session": type(spark).__module__}
    for name in names:
        try:
            results[name] = SCENARIOS[name](spark, f"{root}/{name}")
        except Exception:
            failure = traceback.format_exc()
            results[name] = {"failed": failure[:2500] + " ... " + failure[-1500:]}
    print(json.dumps(results), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3].split(","))
