"""``delta-pyspark connect-server``: a Spark Connect server with Delta enabled, from the pip
packages alone (PySpark's wheel carries Spark Connect's server), for ``sc://host:port``
clients: reads and writes of ``format("delta")``, Delta's SQL statements, streaming, and
``saveAsTable``/``writeTo`` of Delta tables. The Python core serves the server's JVM over
py4j in this process, as it serves a classic session. SIGTERM or SIGINT stops it cleanly.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from pyspark.sql import SparkSession

from delta_pyspark.session import configure_spark_with_delta

CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"


def serve(port: int, host: str = "localhost", master: str = "local[*]") -> None:
    """Run the server on ``host:port`` until SIGTERM or SIGINT."""
    builder = (
        SparkSession.builder.master(master)
        .appName("delta-pyspark connect-server")
        .config("spark.plugins", CONNECT_PLUGIN)
        .config("spark.connect.grpc.binding.address", host)
        .config("spark.connect.grpc.binding.port", str(port))
    )
    spark = configure_spark_with_delta(builder).getOrCreate()
    stopping = threading.Event()

    def stop(signum: int, frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"delta-pyspark: Spark Connect server on sc://{host}:{port}", flush=True)
    try:
        while not stopping.wait(0.5):  # a bare wait() would not see the signal
            pass
    finally:
        spark.stop()
