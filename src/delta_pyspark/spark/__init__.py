"""Spark engine: every data-plane step (scan, write, rewrite) is a native Spark
plan over the files the core's snapshot lists."""

from delta_pyspark.spark.jvm.errors import give_errors_pyspark_bases

# Before any session is used: our typed errors are also PySpark's.
give_errors_pyspark_bases()
