"""A streaming query for the crash test (run as a script, not collected by pytest).

Streams one Delta table into another, one source file per micro-batch, until killed or,
given ``drain``, until everything available is written (Trigger.AvailableNow).
"""

from __future__ import annotations

import os
import sys


def main(source: str, sink: str, checkpoint: str, drain: bool) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta

    spark = configure_spark_with_delta(
        SparkSession.builder.master("local[1]")
        .appName("stream-crash")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "1g")
        # A short-lived JVM: skip C2 compilation and parallel GC threads (2-core machines).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    ).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    writer = (
        spark.readStream.format("delta")
        .option("maxFilesPerTrigger", "1")
        .load(source)
        .writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
    )
    if drain:
        writer.trigger(availableNow=True).start(sink).awaitTermination()
        return
    print("started", flush=True)
    writer.trigger(processingTime="10 milliseconds").start(sink).awaitTermination()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "drain")
