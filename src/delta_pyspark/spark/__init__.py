"""Spark engine: every data-plane step (scan, write, rewrite) is a native Spark
plan over the files the core's snapshot lists."""

from delta_pyspark.spark import errors as _errors

# Before any session is used: our typed errors are also PySpark's (see ``errors``).
_errors.install()
