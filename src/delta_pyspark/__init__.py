"""delta-pyspark: Delta Lake tables from PySpark.

The transaction log, snapshots and conflict checking live in the Spark-free
``delta_pyspark.core`` package; ``delta_pyspark.spark`` is the data plane; the
user-facing API is ``delta_pyspark.tables`` and ``configure_spark_with_delta``.
"""

__version__ = "0.1.0"
