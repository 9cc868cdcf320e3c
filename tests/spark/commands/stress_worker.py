"""One writer process of the stress test (run as a script, not collected by pytest).

Runs a seeded sequence of appends, deletes, updates and merges against one table.
Each commit carries its operation as JSON in ``commitInfo.userMetadata`` so the test
can replay the log against a model; outcomes go to a JSON file.
"""

from __future__ import annotations

import json
import os
import random
import sys


def _barrier(out: str, worker: int, workers: int) -> None:
    """Start racing only when every worker's Spark is up (JVM start-up is slow)."""
    import glob
    import time

    base = os.path.dirname(out)
    open(os.path.join(base, f"ready{worker}"), "w").close()
    deadline = time.monotonic() + 300
    while len(glob.glob(os.path.join(base, "ready*"))) < workers:
        if time.monotonic() > deadline:
            raise TimeoutError("other stress workers never started")
        time.sleep(0.05)


def main(path: str, worker: int, workers: int, ops: int, seed: int, out: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta
    from delta_pyspark.exceptions import DeltaConcurrentModificationException
    from delta_pyspark.tables import DeltaTable

    spark = configure_spark_with_delta(
        SparkSession.builder.master("local[1]")
        .appName(f"stress-{worker}")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        # A short-lived JVM: skip C2 compilation and parallel GC threads (2-core machines).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    ).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(1).count()  # warm up the JVM before the race
    _barrier(out, worker, workers)
    rng = random.Random(seed)
    outcomes = []
    fresh = worker * 10_000 + 7_000  # ids only this worker inserts
    for n in range(ops):
        kind = rng.choice(["append", "delete", "update", "merge"])
        op: dict = {"op": f"w{worker}-{n}", "kind": kind}
        lo = rng.randrange(0, 30_000, 500)
        op["range"] = [lo, lo + rng.choice([2_000, 10_000, 20_000])]
        if kind == "append":
            op["rows"] = [[fresh + i, rng.randrange(100)] for i in range(3)]
            fresh += 3
        elif kind == "merge":
            existing = [worker * 10_000 + 5_000 + rng.randrange(20) for _ in range(2)]
            op["rows"] = [[i, rng.randrange(100)] for i in sorted(set(existing))]
            op["rows"] += [[fresh, rng.randrange(100)]]
            fresh += 1
        spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", json.dumps(op))
        committed = True
        try:
            dt = DeltaTable.forPath(spark, path)
            cond = f"id >= {op['range'][0]} AND id < {op['range'][1]}"
            if kind == "append":
                rows = [(i, v, i // 10_000) for i, v in op["rows"]]
                df = spark.createDataFrame(rows, "id long, value long, b long")
                df.write.format("delta").mode("append").save(path)
            elif kind == "delete":
                committed = dt.delete(cond).first()[0] > 0
            elif kind == "update":
                committed = dt.update(cond, {"value": "value + 1"}).first()[0] > 0
            else:
                rows = [(i, v, i // 10_000) for i, v in op["rows"]]
                src = spark.createDataFrame(rows, "id long, value long, b long")
                (
                    dt.alias("t")
                    .merge(src.alias("s"), "t.id = s.id")
                    .whenMatchedUpdate(set={"value": "s.value"})
                    .whenNotMatchedInsertAll()
                    .execute()
                )
            outcomes.append({"op": op["op"], "result": "ok", "committed": committed})
        except DeltaConcurrentModificationException as e:
            outcomes.append({"op": op["op"], "result": type(e).__name__, "committed": False})
        except Exception as e:  # reported to the test, which fails on it
            outcomes.append({"op": op["op"], "result": f"error: {e!r}", "committed": False})
    with open(out, "w") as f:
        json.dump(outcomes, f)
    spark.stop()


if __name__ == "__main__":
    path, worker, workers, ops, seed, out = sys.argv[1:]
    main(path, int(worker), int(workers), int(ops), int(seed), out)
