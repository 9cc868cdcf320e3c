"""The reference worker: one delta-spark SparkSession in a process of its own, executing
scripts of operations (``operations.py``) read as JSON lines from stdin.

Why a separate process: delta-spark and delta-pyspark both register Spark's ``delta``
source, so they cannot share a JVM. Why long-lived: a JVM start costs seconds, so the tests
share one worker (``runner.ReferenceRunner``) for the whole pytest session.

Protocol: one line ``{"ops": [...]}`` in, one line ``{"results": [...]}`` out, a result
per operation. The first line out is ``{"ready": true, ...}`` once the session is up. The
protocol is written to a duplicate of the original stdout; fd 1 itself is pointed at
stderr, so nothing Spark or the JVM prints can corrupt the protocol.

The session is delta-spark's documented set-up (its SQL extension and catalog, jars from
``tests/maven_jars.py`` passed as arguments) on ``local[2]`` with the UI off, two shuffle
partitions and the UTC session time zone, no console progress bars, and delta-spark's log
replay in two partitions instead of 50 (``spark.databricks.delta.snapshotPartitions``: a
tuning knob, the 50 tasks per snapshot of a tiny table dominated each read); everything else
is Spark's and delta-spark's default (ANSI mode on).

Usage: ``python worker.py JARS WAREHOUSE CONF`` (JARS joined with ``os.pathsep``; CONF a JSON
object of settings over these).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO


def _protocol_stream() -> TextIO:
    """A private copy of stdout for the protocol; fd 1 then goes to stderr."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def build_session(jars: list[str], warehouse: str, conf: dict[str, str]) -> Any:
    """delta-spark's SparkSession (see the module docstring for the settings and why), with
    ``conf`` over them."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("delta-spark-reference")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.driver.memory", "1g")
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def main(argv: list[str]) -> int:
    out = _protocol_stream()
    jars, warehouse, conf = argv[0].split(os.pathsep), argv[1], json.loads(argv[2])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import delta.tables  # delta-spark's Python API (the delta-spark wheel)
    from operations import execute  # beside this script, on sys.path[0]

    spark = build_session(jars, warehouse, conf)
    ready = {"ready": True, "spark": spark.version, "pid": os.getpid()}
    out.write(json.dumps(ready) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        results = [execute(spark, delta.tables, op) for op in request["ops"]]
        out.write(json.dumps({"results": results}) + "\n")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
