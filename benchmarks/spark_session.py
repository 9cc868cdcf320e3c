"""The SparkSession every Spark benchmark uses (local[2], UI off, 4g driver, UTC)."""

from __future__ import annotations

import os
import sys
from typing import Any


def bench_session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
    )
    spark = configure_spark_with_delta(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
